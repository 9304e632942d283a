"""Snakemake job: the environment of one JAX release (blockbench.versions.create)."""

from pathlib import Path

from blockbench import jobs, versions

with jobs.logged(snakemake.log[0]):
    print(versions.create(snakemake.wildcards.version, Path(snakemake.output[0]).parent))
