"""Snakemake job: measure one worker process of a grid cell with the run plan's settings (the
function `blockbench measure` calls), then say where the run stands (blockbench.run.progress),
in the job's log and on the terminal."""

import sys
import time
from pathlib import Path

from blockbench.measure.parent import measure
from blockbench.records.params import MeasureParams
from blockbench.records.store import read_json
from blockbench.run import job_log, progress

wc = snakemake.wildcards
cell = {"device": wc.device, "workload": wc.workload, "impl": wc.impl, "size": wc.size}
params = MeasureParams.from_dict(snakemake.params.measure)
out = Path(snakemake.output[0])
with job_log.logged(snakemake.log[0]):
    code = measure(cell, int(wc.repeat), out, wc.run_label, params)
    if out.exists():
        record = read_json(out)
        wall = time.time() - record["timeline"]["job_start"]
        what = f"{wc.device}/{wc.workload}/{wc.impl}/{wc.size} process {wc.repeat}"
        said = progress.line(what, record["status"], wall, snakemake.params.progress)
        print(said)
        print(said, file=sys.__stdout__, flush=True)
sys.exit(code)
