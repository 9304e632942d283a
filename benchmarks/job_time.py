#!/usr/bin/env python3
"""Where a run's measurement jobs spend their time, from the timeline each record keeps.

    .venv/bin/python benchmarks/job_time.py results/raw/<run_label>

Prints, per step, the seconds all jobs spent in it and the mean per job, the timed sampling
among them, and the gaps between one job's end and the next one's start (Snakemake's own job
handling). Runs measured before records kept a timeline are refused.
"""

import argparse
import itertools
import sys
from pathlib import Path

from blockbench.records.layout import raw_files
from blockbench.records.store import read_json

# (step, from mark, to mark): in the order a job goes through them
STEPS = (
    ("Snakemake's script start, the parent's imports, the host lock", "job_start", "locked"),
    ("the worker's interpreter and imports (NumPy; JAX for a JAX cell)", "spawned", "imported"),
    ("the device (JAX's backend start)", "measure", "device"),
    ("provenance (host, packages, git)", "device", "provenance"),
    ("JAX warm-up and the measuring thread's placement", "provenance", "warmed"),
    ("core-speed reading", "warmed", "core_speed"),
    ("inputs", "core_speed", "inputs"),
    ("check before sampling (a steady-only cell's warm-up)", "inputs", "sampling"),
    ("sampling: warm-up, calibration and timed samples", "sampling", "sampled"),
    ("check after sampling", "sampled", "checked"),
    (
        "the hand-off reading, the record, the worker's exit, the host load",
        "checked",
        "worker_exit",
    ),
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="results/raw/<run_label>")
    args = p.parse_args()
    timelines = [r["timeline"] for r in map(read_json, raw_files(args.run)) if "timeline" in r]
    if not timelines:
        sys.exit(f"{args.run}: no record keeps a timeline (measured before they did)")
    jobs = len(timelines)
    total = {name: 0.0 for name, *_ in STEPS}
    for t in timelines:
        for name, start, end in STEPS:
            if start in t and end in t:
                total[name] += t[end] - t[start]
    ordered = sorted(timelines, key=lambda t: t["job_start"])
    gaps = sum(max(0.0, b["job_start"] - a["worker_exit"]) for a, b in itertools.pairwise(ordered))
    span = ordered[-1]["worker_exit"] - ordered[0]["job_start"]
    print(f"{jobs} jobs, {span:.0f} s from the first job's start to the last one's end\n")
    print("| step | all jobs (s) | per job (s) |\n|---|---|---|")
    for name, seconds in total.items():
        print(f"| {name} | {seconds:.1f} | {seconds / jobs:.2f} |")
    print(f"| between jobs (Snakemake) | {gaps:.1f} | {gaps / jobs:.2f} |")


if __name__ == "__main__":
    main()
