#!/usr/bin/env python3
"""Does a JAX call on the CPU settle in a fresh process, and does it settle the same way in
every process? A plain loop of blocked calls, without the harness, in fresh processes.

    .venv/bin/python benchmarks/pool_modes.py [--workload selu --impl jax --size 1000000]
        [--processes 6] [--seconds 1.6]

Each process makes the cell's inputs as the pipeline does (the workload's `make_inputs`,
seed 0, on the device), makes one call (for `jit`, the compile), then times blocked calls
back to back for `--seconds`. It prints the median call in consecutive windows of time since
that first call (0-20 ms, 20-50 ms, ... doubling); the process's minor page faults per call;
and what each of its busy threads did per call: CPU time run and time spent waiting for a
core (Linux schedstat, summed by thread name). `--keep` keeps each result alive until the
next call has returned, as `y = f(x)` in a loop does, instead of dropping it as `%timeit
f(x).block_until_ready()` does. The last line gives, for each window, the spread of the
processes' medians (the standard deviation of their logs): a spread that falls with time is
a transient that a warm-up removes; one that stays is a per-process mode, which only more
processes average out.

On a 2-core AMD EPYC VM whose cores kept their speed (2026-11-25): the jit SELU at 10^6
ran at 0.2 to 0.4 ms a call for its first 10 to 50 ms and at 0.20 ms after, in every process
(the spread of eight fell from 0.3 in the first 50 ms to 0.01-0.04 after 0.1 s); with
`--keep`, one process of eight stayed at 0.8 ms a call, with 411 page faults a call. The eager
SELU kept a mode for seconds: 3.4 to 4.2 ms with 2,600 to 3,350 faults a call in six
processes, 1.35 to 1.5 ms with 940 to 1,200 in two (one changed after 0.4 s), while XLA's
threads waited for a core about as long as they ran (docs/measuring-traps.md, "Eager calls
at the allocator's mercy").
"""

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

# seconds since the first call at which the windows end: 20 ms, 50 ms, 0.1 s, then doubling
EDGES = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4)

CHILD = """
import json, os, resource, sys, time
import jax, numpy as np
from blockbench.measure.harness import jitted
from blockbench.workloads.registry import WORKLOADS, impls_of

workload, impl_name, size, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
keep = sys.argv[5] == "keep"
impl = impls_of(workload)[impl_name]
args = WORKLOADS[workload].make_inputs(size, np.random.default_rng(0))
if not impl.host_inputs:
    args = jax.device_put(args)
call = jitted(impl)


def threads():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run_ns, wait_ns = (int(v) for v in f.read().split()[:2])
        except OSError:  # the thread ended meanwhile
            continue
        name = "main" if int(tid) == os.getpid() else name
        out[tid] = (name, run_ns, wait_ns)
    return out


out = jax.block_until_ready(call(*args))
if not keep:
    out = None
before, calls = threads(), []
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
start = time.perf_counter()
while time.perf_counter() - start < seconds:
    t0 = time.perf_counter()
    if keep:  # the last result lives on while the next call runs
        out = jax.block_until_ready(call(*args))
    else:
        jax.block_until_ready(call(*args))
    calls.append((t0 - start, time.perf_counter() - t0))
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
after = threads()
per_name = {}
for tid, (name, run_ns, wait_ns) in after.items():
    run0, wait0 = before.get(tid, (name, 0, 0))[1:]
    total = per_name.setdefault(name, [0, 0])
    total[0] += run_ns - run0
    total[1] += wait_ns - wait0
print(json.dumps({"calls": calls, "threads": per_name, "faults": faults}))
"""


def windows(calls: list[list[float]], seconds: float) -> list[float | None]:
    """The median call that started in each window of EDGES (None: no call there)."""
    out: list[float | None] = []
    for lo, hi in itertools.pairwise(EDGES):
        if lo >= seconds:
            break
        inside = [took for at, took in calls if lo <= at < hi]
        out.append(statistics.median(inside) if inside else None)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="selu")
    p.add_argument("--impl", default="jax")
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--processes", type=int, default=6)
    p.add_argument("--seconds", type=float, default=1.6)
    p.add_argument(
        "--keep",
        action="store_true",
        help="keep each result until the next call has returned (`y = f(x)` in a loop), "
        "instead of dropping it as %%timeit does",
    )
    a = p.parse_args()
    if not Path("/proc/self/task").is_dir():
        sys.exit("needs Linux: the threads are read from /proc/self/task/*/schedstat")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    keep = "keep" if a.keep else "drop"
    child = [sys.executable, "-c", CHILD, a.workload, a.impl, str(a.size), str(a.seconds), keep]
    rows = []
    heads = [f"{lo * 1e3:g}-{hi * 1e3:g}ms" for lo, hi in itertools.pairwise(EDGES)]
    heads = heads[: len(windows([], a.seconds))]
    print(f"{a.workload} {a.impl} at {a.size}: median call (ms) by time since the first call")
    print(
        "process  "
        + " ".join(f"{h:>11}" for h in heads)
        + "   page faults; per call (us): run / wait"
    )
    for process in range(a.processes):
        got = json.loads(subprocess.run(child, env=env, check=True, capture_output=True).stdout)
        medians = windows(got["calls"], a.seconds)
        rows.append(medians)
        n = len(got["calls"])
        busy = sorted(got["threads"].items(), key=lambda kv: -kv[1][0])
        load = ", ".join(
            f"{name} {run / n / 1e3:.0f} / {wait / n / 1e3:.0f}"
            for name, (run, wait) in busy
            if run / n > 5e3
        )
        cells = " ".join(f"{m * 1e3:>11.3f}" if m else f"{'-':>11}" for m in medians)
        print(f"{process:>7}  {cells}   {got['faults'] / n:.0f}; {load}")
    spreads = []
    for column in zip(*rows, strict=True):
        logs = [math.log(m) for m in column if m]
        spreads.append(statistics.stdev(logs) if len(logs) > 1 else float("nan"))
    print("spread   " + " ".join(f"{s:>11.3f}" for s in spreads) + "   (sd of the logs)")


if __name__ == "__main__":
    main()
