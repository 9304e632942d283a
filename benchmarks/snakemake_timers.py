#!/usr/bin/env python3
"""Minimal reproduction of Snakemake's growing re-evaluation timers (docs/measuring-traps.md),
for an upstream report and to check blockbench's workaround on a new Snakemake.

    .venv/bin/python benchmarks/snakemake_timers.py [--jobs 150] [--scheduler ilp|greedy]
        [--patched]

A throwaway workflow of `--jobs` jobs that only sleep one second each, one at a time (a
resource limited to 1, as blockbench runs its cells), under `snakemake --cores 4`. Every
second the script reads the Snakemake process's thread count and CPU time (its reaped
children's, the `cbc` solver's, included) from /proc, and prints, per tenth of the jobs,
the cores Snakemake used and its threads. `--patched` loads
blockbench.pipeline.scheduler_patch's fix (at most one pending re-evaluation timer) into the
workflow. Nothing of blockbench is used
otherwise: the Snakefile below is the whole reproduction.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

SNAKEFILE = """\
{patch}
rule all:
    input:
        expand("out/{{i}}.txt", i=range({jobs})),


rule job:
    output:
        "out/{{i}}.txt",
    resources:
        r=1,
    shell:
        "sleep 1; touch {{output}}"
"""
PATCH = (
    "from blockbench.pipeline import scheduler_patch\n"
    "print('blockbench.pipeline.scheduler_patch:', scheduler_patch.quiet_rescheduling())\n"
)


def cpu_and_threads(pid: int) -> tuple[float, int] | None:
    """(seconds of CPU of the process and its reaped children, threads), or None once gone."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            t, threads = proc.cpu_times(), proc.num_threads()
    except psutil.Error:
        return None
    return t.user + t.system + t.children_user + t.children_system, threads


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=150)
    p.add_argument("--scheduler", choices=["ilp", "greedy"], default="ilp")
    p.add_argument("--patched", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="snakemake-timers-") as tmp:
        workdir = Path(tmp)
        patch = PATCH if args.patched else ""
        (workdir / "Snakefile").write_text(SNAKEFILE.format(patch=patch, jobs=args.jobs))
        cmd = [sys.executable, "-m", "snakemake", "--cores", "4", "--resources", "r=1"]
        cmd += ["--scheduler", args.scheduler, "--quiet", "all"]
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.DEVNULL)
        rows: list[tuple[int, float, int]] = []  # (jobs done, cores, threads), one a second
        last = cpu_and_threads(proc.pid)
        while proc.poll() is None and last is not None:
            time.sleep(1.0)
            now = cpu_and_threads(proc.pid)
            if now is None:
                break
            done = len(list((workdir / "out").glob("*.txt"))) if (workdir / "out").exists() else 0
            rows.append((done, now[0] - last[0], now[1]))
            last = now
        proc.wait()
    print(f"{args.jobs} jobs, scheduler {args.scheduler}, patched: {args.patched}")
    print("jobs done | cores used by Snakemake (mean) | threads (max)")
    tenth = max(args.jobs // 10, 1)
    for start in range(0, args.jobs, tenth):
        got = [(c, t) for d, c, t in rows if start <= d < start + tenth]
        if got:
            cores = sum(c for c, _ in got) / len(got)
            print(f"{start:>4}-{start + tenth - 1:<4} | {cores:.3f} | {max(t for _, t in got)}")


if __name__ == "__main__":
    main()
