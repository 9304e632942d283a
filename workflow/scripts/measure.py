"""Snakemake job: measure one grid cell through the same command as scripts/measure.py."""

import sys

from blockbench import jobs
from blockbench.measure import main

wc, p = snakemake.wildcards, snakemake.params
args = [
    "--device",
    wc.device,
    "--workload",
    wc.workload,
    "--impl",
    wc.impl,
    "--size",
    wc.size,
    "--out",
    snakemake.output[0],
    "--run-label",
    wc.run_label,
    "--repeat",
    wc.repeat,
    "--budget-s",
    str(p.budget_s),
    "--seed",
    str(p.seed),
    "--matmul-precision",
    p.matmul_precision,
    "--cluster-lock-dir",
    p.lock_dir,
]
for key, value in p.sampling.items():
    args += [f"--{key.replace('_', '-')}", str(value)]
if p.phases:
    args += ["--phases", p.phases]
if p.threads:
    args += ["--threads", str(p.threads)]
if p.block:
    args += ["--block", p.block]
if p.jax_env:
    args += ["--jax-env", p.jax_env[0]]
with jobs.logged(snakemake.log[0]):
    code = main(args)
sys.exit(code)
