"""Snakemake job: measure one grid cell through the same command as scripts/measure.py."""

import sys

from blockbench.measure.parent import job_args, main
from blockbench.records.params import MeasureParams
from blockbench.run import job_log

wc = snakemake.wildcards
cell = {"device": wc.device, "workload": wc.workload, "impl": wc.impl, "size": wc.size}
params = MeasureParams.from_dict(snakemake.params.measure)
with job_log.logged(snakemake.log[0]):
    code = main(job_args(cell, int(wc.repeat), snakemake.output[0], wc.run_label, params))
sys.exit(code)
