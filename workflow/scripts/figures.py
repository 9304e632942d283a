"""Snakemake job: draw every figure of the run (PNG and SVG) from the measurements table."""

from blockbench.pipeline import job_log
from blockbench.present import figures

with job_log.logged(snakemake.log[0]):
    figures.draw_all(
        snakemake.params.names,
        measurements=snakemake.input[0],
        processes=snakemake.input.processes,
        claim_parts=snakemake.input.claim_parts,
        claims_file=list(snakemake.input.claims),
        outputs=list(zip(snakemake.output.png, snakemake.output.svg, strict=True)),
        workers=snakemake.threads,
        reference=snakemake.params.reference,
        run_label=snakemake.params.run_label,
    )
