"""Snakemake job: each claim's value, CI and verdict against the JAX release."""

from blockbench.pipeline import job_log
from blockbench.present import version_figures

with job_log.logged(snakemake.log[0]):
    version_figures.build(
        claims_csv=snakemake.input[0],
        png=snakemake.output.png,
        svg=snakemake.output.svg,
        csv=snakemake.output.csv,
        markdown=snakemake.output.md,
    )
