"""Snakemake job: draw one figure (PNG and SVG) from the measurements table."""

from contextlib import redirect_stderr, redirect_stdout

from blockbench import figures

with open(snakemake.log[0], "w") as log, redirect_stdout(log), redirect_stderr(log):
    figures.draw(
        snakemake.wildcards.name,
        measurements=snakemake.input[0],
        claims_file=snakemake.input.claims,
        outputs=[snakemake.output.png, snakemake.output.svg],
    )
