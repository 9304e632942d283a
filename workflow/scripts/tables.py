"""Snakemake job: measurement and speedup tables from every raw JSON of the run."""

from blockbench.pipeline import job_log, stages

with job_log.logged(snakemake.log[0]):
    stages.build_tables(
        raw=[*snakemake.input.raw, *snakemake.input.merged],
        out=snakemake.output,
        labels=snakemake.params.labels,
        claims_file=list(snakemake.input.claims),
    )
