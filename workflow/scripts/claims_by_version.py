"""Snakemake job: each claim's value, CI and verdict against the JAX release."""

from blockbench.present import version_figures
from blockbench.run import job_log

with job_log.logged(snakemake.log[0]):
    version_figures.build(
        claims_csv=snakemake.input[0],
        png=snakemake.output.png,
        svg=snakemake.output.svg,
        csv=snakemake.output.csv,
        markdown=snakemake.output.md,
    )
