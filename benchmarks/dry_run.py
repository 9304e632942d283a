#!/usr/bin/env python3
"""How long Snakemake takes to plan a large grid, against a bare workflow of as many jobs.

    .venv/bin/python benchmarks/dry_run.py [--cells 10000] [--repeats 3]

Writes, in a scratch directory, this workflow with a grid of `--cells` cells (SELU sizes)
and a bare workflow with one rule and the same number of jobs, then times `snakemake -n` on
each (best of `--runs`). The last line reads `dry run ours/bare <ratio>`.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

BARE = """\
N = {jobs}
rule all:
    input: expand("out/{{i}}.json", i=range(N))
rule measure:
    output: "out/{{i}}.json"
    log: "logs/{{i}}.log"
    shell: "touch {{output}}"
"""


def timed(cmd: list[str], cwd: Path, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=10000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--runs", type=int, default=2)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dry-run-"))
    ours, bare = tmp / "ours", tmp / "bare"
    for name in ("workflow", "config", "profiles", "src"):
        shutil.copytree(ROOT / name, ours / name)
    shutil.copy(ROOT / "Snakefile", ours)
    grid = {
        "repeats": args.repeats,
        "workloads": [
            {"name": "selu", "impls": ["numpy"], "sizes": list(range(1, args.cells + 1))}
        ],
    }
    (ours / "grid.yaml").write_text(yaml.safe_dump(grid))
    bare.mkdir()
    (bare / "Snakefile").write_text(BARE.format(jobs=args.cells * args.repeats))
    snakemake = [sys.executable, "-m", "snakemake", "-n", "--cores", "4", "--quiet", "all"]
    t_ours = timed([*snakemake, "--configfile", "grid.yaml"], ours, args.runs)
    t_bare = timed(snakemake, bare, args.runs)
    jobs = args.cells * args.repeats
    print(f"{args.cells} cells x {args.repeats} repeats = {jobs} measurement jobs")
    print(f"ours {t_ours:.1f} s, bare {t_bare:.1f} s")
    print(f"dry run ours/bare {t_ours / t_bare:.2f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
