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

# Why a phase stopped sampling (recorded with every phase).
CONVERGED, TIME_CAP, SAMPLE_CAP, BUDGET = "converged", "time_cap", "sample_cap", "budget"


@dataclass(frozen=True)
class StopRule:
    """When a phase has been sampled enough (the nvbench / pyperf idea, on the median's CI).

    `min_samples` is a floor that the time cap cannot cut: a 2 s call gets min_samples
    samples, not the one a fixed cap would allow, so the cap scales with the call's duration.
    Only the cell's time budget (a deadline) stops a phase below the floor, and says so.
    """

    target_rel_ci: float = 0.01  # stop once the 95% CI of the median is within +-1%
    min_samples: int = 5
    min_time_s: float = 0.1
    max_time_s: float = 2.0  # per-phase cap once min_samples are in, converged or not
    max_samples: int = 2000
    sample_time_s: float = 0.005  # calibrate loops so one sample lasts at least this
    warmup: int = 1


def per_process(cell: dict[str, float], repeats: int) -> dict[str, float]:
    """A cell's sampling settings, split over the `repeats` processes that measure it.

    The times are the cell's to spend, so each process gets its share; the floor of samples
    is the cell's too, so each process takes its share of it, and at least 2 (a median of
    one sample says nothing of its spread). More processes then cost about the same time
    and buy between-process variance instead of more samples from one process.
    """
    out = dict(cell)
    for key in ("min_time_s", "max_time_s"):
        if key in out:
            out[key] = out[key] / repeats
    if "min_samples" in out:
        out["min_samples"] = max(2, -(-int(out["min_samples"]) // repeats))
    return out


@dataclass
class Collected:
    samples_s: list[float] = field(default_factory=list)  # per-call seconds, one per sample
    loops: int = 1
    converged: bool = False
    rel_ci: float = float("inf")
    stop: str = ""


def calibrate(
    run: PhaseRun, sample_time_s: float, max_loops: int = 1_000_000
) -> tuple[int, float, float]:
    """Smallest loops (1, 2, 5, 10, 20, ...) whose sample lasts sample_time_s, as timeit does,
    the per-call time of that last run (a valid sample: it ran with those loops) and its wall
    time (with the untimed work around the timed region).

    Growth also stops when the untimed work around the timed region (the block after a
    dispatch, computing results to read back) makes a sample long in wall time: a 10 us
    dispatch of a 1 s matmul must not be looped a thousand times.
    """
    loops = 1
    while True:
        for factor in (1, 2, 5):
            n = min(loops * factor, max_loops)
            t0 = time.perf_counter()
            timed = run(n)
            wall = time.perf_counter() - t0
            if timed >= sample_time_s or wall >= 4 * sample_time_s or n == max_loops:
                return n, timed / n, wall
        loops *= 10


def collect(
    run: PhaseRun, rule: StopRule, calibrated: bool = True, deadline: float | None = None
) -> Collected:
    """Sample a phase until the stop rule says so; every raw sample is kept.

    `calibrated=False` is for phases that are costly by nature (compile, first call): one
    call per sample, and no warm-up call, since warming would change what they measure.
    `deadline` (time.time()) stops sampling when the next sample would not end before it.
    """
    out = Collected()
    last_wall = 0.0
    if calibrated:
        for _ in range(rule.warmup):
            run(1)
        out.loops, first, last_wall = calibrate(run, rule.sample_time_s)
        out.samples_s.append(first)
    # the phase's time limits count sampling, not the warm-up and calibration before it: a
    # phase whose calls wait long outside the timed region (a dispatch) would otherwise
    # spend its whole share of the cell's time before its second sample
    start = time.perf_counter() - last_wall
    while True:
        if out.samples_s:
            out.stop = _stop_reason(out, rule, time.perf_counter() - start, last_wall, deadline)
            if out.stop:
                return out
        t0 = time.perf_counter()
        out.samples_s.append(run(out.loops) / out.loops)
        last_wall = time.perf_counter() - t0


def _stop_reason(
    out: Collected, rule: StopRule, elapsed: float, last_wall: float, deadline: float | None
) -> str:
    n = len(out.samples_s)
    if n >= rule.min_samples:
        out.rel_ci = relative_ci_halfwidth(out.samples_s)
    if n >= rule.max_samples:
        return SAMPLE_CAP
    if n >= rule.min_samples:
        if elapsed >= rule.min_time_s and out.rel_ci <= rule.target_rel_ci:
            out.converged = True
            return CONVERGED
        if elapsed >= rule.max_time_s:
            return TIME_CAP
    if deadline is not None and time.time() + last_wall > deadline:
        return BUDGET
    return ""
