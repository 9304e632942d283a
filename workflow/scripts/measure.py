"""Snakemake job: measure one grid cell through the same command as scripts/measure.py."""

import sys

from blockbench.measure.parent import job_args, main
from blockbench.run import job_log

wc, p = snakemake.wildcards, snakemake.params
cell = {"device": wc.device, "workload": wc.workload, "impl": wc.impl, "size": wc.size}
params = {
    "budget_s": p.budget_s,
    "seed": p.seed,
    "matmul_precision": p.matmul_precision,
    "sampling": p.sampling,
    "phases": p.phases,
    "threads": p.threads,
    "block": p.block,
    "lock_dir": p.lock_dir,
    "jax_env": p.jax_env[0] if p.jax_env else "",
    "scheduler_patch": p.scheduler_patch,
    "first_rounds": p.first_rounds,
    "design": p.design,
}
with job_log.logged(snakemake.log[0]):
    code = main(job_args(cell, int(wc.repeat), snakemake.output[0], wc.run_label, params))
sys.exit(code)
