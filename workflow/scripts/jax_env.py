"""Snakemake job: the environment of one JAX release (blockbench.versions.create)."""

from pathlib import Path

from blockbench.pipeline import job_log, versions

with job_log.logged(snakemake.log[0]):
    print(versions.create(snakemake.wildcards.version, Path(snakemake.output[0]).parent))
