"""Snakemake job: judge every claim of the run's catalogs against the measurements."""

from blockbench.pipeline import job_log, stages

with job_log.logged(snakemake.log[0]):
    stages.build_claims(
        measurements_file=snakemake.input.measurements,
        processes_file=snakemake.input.processes,
        claims_file=list(snakemake.input.claims),
        study_files=snakemake.input.studies,
        csv=snakemake.output.csv,
        markdown=snakemake.output.md,
        rst=snakemake.output.rst,
        parts_csv=snakemake.output.parts_csv,
        parts_parquet=snakemake.output.parts_parquet,
        this_run=snakemake.params.run_label,
        decisions=list(snakemake.input.decisions),
        labels=snakemake.params.labels,
        only=snakemake.params.only,
        map_files=[
            snakemake.output.map_md,
            snakemake.output.map_csv,
            snakemake.output.map_rst,
        ],
        reference=snakemake.params.reference,
    )
