"""Snakemake job: measure one grid cell through the same command as scripts/measure.py."""

import sys
from contextlib import redirect_stderr, redirect_stdout

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
    "--budget-s",
    str(p.budget_s),
    "--seed",
    str(p.seed),
    "--matmul-precision",
    p.matmul_precision,
]
for key, value in p.sampling.items():
    args += [f"--{key.replace('_', '-')}", str(value)]
with open(snakemake.log[0], "w") as log, redirect_stdout(log), redirect_stderr(log):
    code = main(args)
sys.exit(code)
