"""Snakemake job: after a run's first stage, the rounds each block takes and why each part stops."""

from blockbench.pipeline import job_log, stages

with job_log.logged(snakemake.log[0]):
    stages.decide_rounds(
        raw=list(snakemake.input.raw),
        claims_file=list(snakemake.input.claims),
        study_files=list(snakemake.input.studies),
        units=snakemake.params.units,
        run_label=snakemake.wildcards.run_label,
        precision=snakemake.params.precision,
        budget_minutes=snakemake.params.budget_minutes,
        out=snakemake.output[0],
        only=snakemake.params.only,
    )
