"""Snakemake job: measurement and speedup tables from every raw JSON of the run."""

from contextlib import redirect_stderr, redirect_stdout

from blockbench import stages

with open(snakemake.log[0], "w") as log, redirect_stdout(log), redirect_stderr(log):
    stages.build_tables(
        raw=[*snakemake.input.raw, *snakemake.input.merged],
        claims_file=snakemake.input.claims,
        out=snakemake.output,
    )
