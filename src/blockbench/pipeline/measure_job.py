"""The workflow's measure job (rule `measure`): one worker process of one cell, measured with
the run plan's settings (the function `blockbench measure` calls), then a line saying where
the run stands (blockbench.pipeline.progress), in the job's log and on the terminal.

    python -m blockbench.pipeline.measure_job JOB OUT LOG

JOB is the job's record as JSON: its cell, process, run label, settings (one
blockbench.records.params record, as the run plan gives it) and place in the run. The rule
runs it as a shell command, not as a Snakemake script, whose preamble imports Snakemake: the
job's start fell from 0.225 to 0.16 s a process (medians on a 2-core Xeon), about 2.5 s of a
default run's measuring.
"""

import json
import sys
import time
from pathlib import Path

from blockbench.measure.parent import measure
from blockbench.pipeline import job_log, progress
from blockbench.records.layout import Cell
from blockbench.records.params import MeasureParams
from blockbench.records.store import read_json


def main(argv: list[str] | None = None) -> int:
    job_json, out_path, log = sys.argv[1:] if argv is None else argv
    job, out = json.loads(job_json), Path(out_path)
    cell, repeat = Cell.from_dict(job["cell"]), int(job["repeat"])
    with job_log.logged(log):
        code = measure(cell, repeat, out, job["run_label"], MeasureParams.from_dict(job["params"]))
        if out.exists():
            record = read_json(out)
            wall = time.time() - record["timeline"]["job_start"]
            what = f"{cell.key} process {repeat}"
            said = progress.line(what, record["status"], wall, job["progress"])
            print(said)
            print(said, file=sys.__stdout__, flush=True)
    return code


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C: Snakemake ends the run and says so, no traceback
        sys.exit(130)
