"""Snakemake job: judge every claim of config/claims.yaml against the measurements."""

from contextlib import redirect_stderr, redirect_stdout

from blockbench import stages

with open(snakemake.log[0], "w") as log, redirect_stdout(log), redirect_stderr(log):
    stages.build_claims(
        measurements_file=snakemake.input.measurements,
        claims_file=snakemake.input.claims,
        csv=snakemake.output.csv,
        markdown=snakemake.output.md,
    )
