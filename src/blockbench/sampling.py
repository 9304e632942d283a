"""Collecting raw samples: loop calibration and the adaptive stop rule.

A phase is a callable `run(loops) -> seconds spent in the timed region for `loops` calls`,
so the phase decides what is timed (a dispatch excludes the block that follows it) and this
module only decides how many calls make a sample and when to stop.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from blockbench.stats import relative_ci_halfwidth

PhaseRun = Callable[[int], float]


@dataclass(frozen=True)
class StopRule:
    """When a phase has been sampled enough (the nvbench / pyperf idea, on the median's CI)."""

    target_rel_ci: float = 0.01  # stop once the 95% CI of the median is within +-1%
    min_samples: int = 10
    min_time_s: float = 0.1
    max_time_s: float = 2.0  # per-phase cap: stop there, converged or not
    max_samples: int = 2000
    sample_time_s: float = 0.005  # calibrate loops so one sample lasts at least this
    warmup: int = 1


@dataclass
class Collected:
    samples_s: list[float] = field(default_factory=list)  # per-call seconds, one per sample
    loops: int = 1
    converged: bool = False
    rel_ci: float = float("inf")


def calibrate(run: PhaseRun, sample_time_s: float, max_loops: int = 1_000_000) -> int:
    """Smallest loops (1, 2, 5, 10, 20, ...) whose sample lasts sample_time_s, as timeit does.

    Growth also stops when the untimed work around the timed region (the block after a
    dispatch, computing results to read back) makes a sample long in wall time: a 10 us
    dispatch of a 1 s matmul must not be looped a thousand times.
    """
    loops = 1
    while loops < max_loops:
        for factor in (1, 2, 5):
            n = loops * factor
            t0 = time.perf_counter()
            timed = run(n)
            if timed >= sample_time_s or time.perf_counter() - t0 >= 4 * sample_time_s:
                return n
        loops *= 10
    return max_loops


def collect(run: PhaseRun, rule: StopRule, calibrated: bool = True) -> Collected:
    """Sample a phase until the stop rule says so; every raw sample is kept.

    `calibrated=False` is for phases that are costly by nature (compile, first call): one
    call per sample, and no warm-up call, since warming would change what they measure.
    """
    start = time.perf_counter()
    if calibrated:
        for _ in range(rule.warmup):
            run(1)
        loops = calibrate(run, rule.sample_time_s)
    else:
        loops = 1
    out = Collected(loops=loops)
    while True:
        out.samples_s.append(run(loops) / loops)
        elapsed = time.perf_counter() - start
        n = len(out.samples_s)
        if n >= rule.min_samples and elapsed >= rule.min_time_s:
            out.rel_ci = relative_ci_halfwidth(out.samples_s)
            if out.rel_ci <= rule.target_rel_ci:
                out.converged = True
                return out
        if elapsed >= rule.max_time_s or n >= rule.max_samples:
            if n > 1:
                out.rel_ci = relative_ci_halfwidth(out.samples_s)
            return out
