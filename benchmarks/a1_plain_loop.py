#!/usr/bin/env python3
"""A1 without the harness: Source A's code in a plain loop, in fresh processes, as a user
would time it, to hold the pipeline's A1 against.

    .venv/bin/python benchmarks/a1_plain_loop.py [--processes 5] [--calls 200]
        [--claims results/claims.csv --run-label LABEL]

Each process runs Source A's code as the article prints it: x = random.uniform(key,
(1000, 1000)) made by JAX, then, call after call and alternating, the blocked call
`jnp.dot(x, x).block_until_ready()` and the unblocked one (`jnp.dot(x, x)` timed, then
blocked outside the timing), after 10 warm-up calls. `--numpy-input` makes x with NumPy and
`jax.device_put`, as the dot_xx cell does: on the 2-core EPYC VM some processes then run in a
slow mode (dispatch about 0.7 ms instead of 0.06, the blocked call 16% slower). It prints
its medians and their ratio, blocked / dispatch; the last lines give the geometric mean of
the processes' ratios with its 95% interval (blockbench.judge.uncertainty, as a cell's), and, with
`--claims`, the run's A1 with its interval and whether each interval covers the other's value.
"""

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.judge.uncertainty import of_processes

CHILD = """
import json, statistics, sys, time
import jax, jax.numpy as jnp, numpy as np
from jax import random
if sys.argv[2] == "numpy":
    from blockbench.workloads.registry import WORKLOADS
    (x_np,) = WORKLOADS["dot_xx"].make_inputs(1000, np.random.default_rng(0))
    x = jax.device_put(x_np)
else:
    x = random.uniform(random.key(0), (1000, 1000))
calls = int(sys.argv[1])
for _ in range(10):
    jnp.dot(x, x).block_until_ready()
blocked, dispatch = [], []
for _ in range(calls):
    t0 = time.perf_counter()
    jnp.dot(x, x).block_until_ready()
    blocked.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    y = jnp.dot(x, x)
    dispatch.append(time.perf_counter() - t0)
    y.block_until_ready()
print(json.dumps({"blocked": statistics.median(blocked), "dispatch": statistics.median(dispatch)}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", type=int, default=5)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--numpy-input", action="store_true", help="x from NumPy, as the cell's")
    p.add_argument("--claims", type=Path, help="a run's claims.csv, to compare its A1")
    p.add_argument("--run-label")
    args = p.parse_args()
    src = str(Path(__file__).resolve().parents[1] / "src")
    ratios = []
    for i in range(args.processes):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.calls), "numpy" if args.numpy_input else "jax"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": src},
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        ratios.append(got["blocked"] / got["dispatch"])
        print(
            f"process {i}: blocked {got['blocked'] * 1e3:.2f} ms, dispatch "
            f"{got['dispatch'] * 1e6:.1f} us, ratio {ratios[-1]:.1f}"
        )
    plain = of_processes(ratios)
    low, high = (math.exp(b) for b in plain.interval())
    value = math.exp(plain.estimate)
    print(f"plain loop A1: {value:.1f} [{low:.1f}, {high:.1f}] over {len(ratios)} processes")
    if args.claims:
        table = pd.read_csv(args.claims)
        row = table[(table["claim_id"] == "A1") & (table["run_label"] == args.run_label)].iloc[0]
        print(f"run {args.run_label} A1: {row.measured:.1f} [{row.ci_low:.1f}, {row.ci_high:.1f}]")
        print(
            f"the run's interval covers the plain value: {row.ci_low <= value <= row.ci_high}; "
            f"the plain interval covers the run's: {low <= row.measured <= high}"
        )


if __name__ == "__main__":
    main()
