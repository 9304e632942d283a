"""The workflow's measure job (blockbench.pipeline.measure_job): the shell command the rule runs."""

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from conftest import validate

from blockbench.pipeline import progress
from blockbench.records.params import MeasureParams, StopRule


def test_the_measure_job_measures_its_cell_and_says_where_the_run_stands(tmp_path: Path) -> None:
    """From its JSON record alone, as the rule passes it: the cell's record, a zero exit, and
    the progress line in the job's log and on the terminal."""
    rule = replace(StopRule(), min_samples=5, min_time_s=0.02, max_time_s=0.1)
    params = MeasureParams(rule=rule, lock_dir=str(tmp_path))
    place = {
        "stage": "first stage",
        "position": 2,
        "of": 5,
        "model_done_s": 4.0,
        "model_left_s": 6.0,
    }
    job = {
        "cell": {"device": "cpu", "workload": "selu", "impl": "numpy", "size": "100"},
        "repeat": 1,
        "run_label": "job-test",
        "params": params.as_dict(),
        "progress": place,
    }
    out, log = tmp_path / "raw" / "1.json", tmp_path / "job.log"
    env = {progress.START_ENV: str(time.time() - 2.0)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "blockbench.pipeline.measure_job",
            json.dumps(job),
            str(out),
            str(log),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    validate(record)
    assert record["status"] == "ok" and record["repeat"] == 1
    assert record["provenance"]["config"]["rule"]["min_samples"] == 5  # the settings it was given
    said = "blockbench: [2/5] cpu/selu/numpy/100 process 1: ok in "
    assert said in done.stdout and "first stage: about" in done.stdout
    assert said in log.read_text()
