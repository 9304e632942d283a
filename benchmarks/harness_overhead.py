#!/usr/bin/env python3
"""How much the harness adds over a bare loop: the steady phase against
`f(x).block_until_ready()` call after call, and the dispatch phase against timing the
unblocked call `t0; out = f(x); t1; out.block_until_ready()` as a user would.

A benchmark, not a test: run it on a quiet machine and read the ratios.

    .venv/bin/python benchmarks/harness_overhead.py [--rounds 15] [--calls 2000]

In one process (between processes this kind of machine drifts by tens of percent over
minutes), it alternates the harness and a bare loop over the same jitted function and
inputs, round after round, and prints the median of the per-round ratios harness/bare: the
steady loop for a jit no-op, for grad_jit at 1000 and for the jit SELU at 10^4 and 10^5
(calls of about 20 us and 100 us on a 2-core VM; each line prints the time measured); the
same two calls timed one call a sample, with the kernel's counters read around each as a
cell reads them, against bare single calls (what a one-loop sample adds); and the dispatch
samples for `jnp.dot(x, x)` at 1000, A1's cell.
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import jax
import numpy as np

from blockbench.measure import harness, sampling
from blockbench.measure.disturbance import Probe
from blockbench.records.spec import StopRule
from blockbench.workloads.registry import WORKLOADS, lookup


def bare_loop(f: Callable[..., Any], x: Any) -> Callable[[int], float]:
    def run(loops: int) -> float:
        t0 = time.perf_counter()
        for _ in range(loops):
            f(x).block_until_ready()
        return time.perf_counter() - t0

    return run


def compare(f: Callable[..., Any], x: Any, rounds: int, calls: int) -> tuple[float, float, float]:
    """Median harness/bare ratio over rounds, and the two median per-call times (s)."""
    args = (x,)
    steady = harness.steady(f, args, harness.output_of(f, args).wait)
    bare = bare_loop(f, x)
    return alternate(
        lambda: sampling.timed(steady, calls)[0] / calls, lambda: bare(calls) / calls, rounds
    )


def compare_one_loop(f: Callable[..., Any], x: Any, rounds: int, calls: int) -> tuple:
    """Median over rounds of harness/bare for the median one-call sample: the steady phase's
    samples at one loop, the probe read around each, against `t0; f(x).block_until_ready();
    t1` call after call."""
    args = (x,)
    steady = harness.steady(f, args, harness.output_of(f, args).wait)
    probe = Probe(
        tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
    )

    def ours() -> float:
        return statistics.median(sampling.timed(steady, 1, probe)[0] for _ in range(calls))

    def bare() -> float:
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            f(x).block_until_ready()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    return alternate(ours, bare, rounds)


def alternate(ours: Callable[[], float], bare: Callable[[], float], rounds: int) -> tuple:
    """Median harness/bare ratio over rounds that alternate which goes first, and the two
    median times."""
    ours(), bare()  # warm both paths
    ratios, t_ours, t_bare = [], [], []
    for i in range(rounds):
        first, second = (ours, bare) if i % 2 == 0 else (bare, ours)
        a, b = first(), second()
        h, n = (a, b) if first is ours else (b, a)
        ratios.append(h / n)
        t_ours.append(h)
        t_bare.append(n)
    return statistics.median(ratios), statistics.median(t_ours), statistics.median(t_bare)


def compare_dispatch(f: Callable[..., Any], x: Any, rounds: int, calls: int) -> tuple:
    """Median over rounds of harness/bare for the median single-call dispatch time: the
    harness's dispatch samples as a cell takes them (a Sampler with the disturbance probe),
    against a bare loop timing each unblocked call."""
    args = (x,)
    run = harness.dispatch(f, args, harness.output_of(f, args).wait)
    probe = Probe(
        tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
    )
    rule = StopRule(min_samples=calls, max_samples=calls, max_time_s=1e9, warmup=3)

    def ours() -> float:
        out = sampling.collect(run, rule, calibrated=False, warm=True, probe=probe)
        return statistics.median(out.samples_s)

    def bare() -> float:
        times = []
        for _ in range(calls + 3):
            t0 = time.perf_counter()
            out = f(x)
            times.append(time.perf_counter() - t0)
            out.block_until_ready()
        return statistics.median(times[3:])

    return alternate(ours, bare, rounds)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()
    harness.warm_up(jax.devices("cpu")[0])
    noop = jax.jit(lambda v: v)
    x_small = jax.device_put(np.ones(8, np.float32))
    _, grad = lookup("cpu", "grad_logistic", "grad_jit", 1000)
    (x_grad,) = WORKLOADS["grad_logistic"].make_inputs(1000, np.random.default_rng(0))
    selu = {}
    for size in (10_000, 100_000):
        (x_selu,) = WORKLOADS["selu"].make_inputs(size, np.random.default_rng(0))
        f = jax.jit(lookup("cpu", "selu", "jax_jit", size)[1].fn)
        selu[f"selu jax_jit {size}"] = (f, jax.device_put(x_selu))
    cases = {
        "grad_jit 1000": (jax.jit(grad.fn), jax.device_put(x_grad)),
        "no-op": (noop, x_small),
        **selu,
    }
    print(f"jax {jax.__version__}, {args.rounds} rounds of {args.calls} calls per loop")
    for name, (f, x) in cases.items():
        ratio, ours, bare = compare(f, x, args.rounds, args.calls)
        print(f"{name}: harness {ours * 1e6:.2f} us/call, bare {bare * 1e6:.2f} us/call")
        print(f"harness/bare {name} {ratio:.3f}")
    for name, (f, x) in selu.items():
        ratio, ours, bare = compare_one_loop(f, x, args.rounds, max(30, args.calls // 20))
        print(f"one loop {name}: harness {ours * 1e6:.2f} us, bare {bare * 1e6:.2f} us")
        print(f"harness/bare one loop {name} {ratio:.3f}")
    (x_dot,) = WORKLOADS["dot_xx"].make_inputs(1000, np.random.default_rng(0))
    dot = jax.jit(lookup("cpu", "dot_xx", "jax", 1000)[1].fn)
    calls = max(30, args.calls // 100)  # each waits for its matmul before the next
    ratio, ours, bare = compare_dispatch(dot, jax.device_put(x_dot), args.rounds, calls)
    print(f"dispatch dot_xx 1000: harness {ours * 1e6:.2f} us/call, bare {bare * 1e6:.2f} us/call")
    print(f"harness/bare dispatch dot_xx 1000 {ratio:.3f}")


if __name__ == "__main__":
    main()
