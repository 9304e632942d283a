"""Whether each core keeps its speed: a fixed pure-Python loop pinned to each core in turn;
and what handing work to a thread on another core costs (`handoff`).

On the 2-core AMD EPYC VM of 2026-11-23 each vCPU ran at full or at half speed, on its own,
switching within a second (what a busy sibling hyperthread on the host leaves a core), for
3% to 47% of the time depending on the minute (on the one of 2026-11-24, never). The guest's
kernel mostly sees none of it: in the slow windows the thread's CPU time usually equals its
wall time and little or no steal is counted, so the disturbance counters of a cell stay
clean while its calls take up to twice as long. Timing the same work pinned to each core, in
short windows, is what shows it: a machine whose cores keep their speed has nearly every
window near the core's fast time. A core slow in nearly all its windows has a slow "fast
time": `describe` therefore also gives each core's fast time against the fastest core's.
"""

import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from blockbench.measure.stats import wilson

WINDOW_S = 0.15
# A window this much slower than the core's fast windows is a slow one (half speed is 2x;
# scheduling noise on a quiet core stays within a few per cent).
SLOW_FACTOR = 1.5
# The core's own fast speed: a low quantile of its windows, not the single fastest.
FAST_QUANTILE = 0.1
SPIN_ITERATIONS = 20_000


def spin(n: int = SPIN_ITERATIONS) -> int:
    """Fixed work for one core: integer arithmetic in the interpreter, no memory traffic."""
    total = 0
    for i in range(n):
        total += i * i
    return total


@dataclass(frozen=True)
class Window:
    core: int
    call_s: float  # wall time per call of `spin` in the window
    cpu_share: float  # the thread's CPU time over its wall time (1.0: never off the core)


def window(core: int, seconds: float, work: Callable[[], object] = spin) -> Window:
    """Calls of `work` on `core` for `seconds` (> 0): the mean wall time per call."""
    if seconds <= 0:
        raise ValueError(f"a window must last some time, got {seconds} s")
    os.sched_setaffinity(0, {core})
    work()  # the first call after a migration pays for it
    calls, cpu0, start = 0, time.thread_time(), time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        work()
        calls += 1
    return Window(core, elapsed / calls, (time.thread_time() - cpu0) / elapsed)


def steal_s() -> float | None:
    """Time the hypervisor says it took from this guest's CPUs (all of them), in seconds,
    as the cells' host-load reading counts it (psutil; None where the OS has no such count)."""
    return getattr(psutil.cpu_times(), "steal", None)


def probe(cores: Sequence[int], seconds: float, window_s: float = WINDOW_S) -> list[Window]:
    """Windows on each core in turn for `seconds` in all; the process's affinity restored."""
    before = os.sched_getaffinity(0)
    out: list[Window] = []
    try:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            out += [window(core, window_s) for core in cores]
    finally:
        os.sched_setaffinity(0, before)
    return out


@dataclass(frozen=True)
class CoreSpeed:
    core: int
    fast_s: float  # a call in the core's fast windows (their low quantile)
    windows: int
    slow: int  # windows over SLOW_FACTOR x fast_s
    slow_ci: tuple[float, float]
    slow_factor: float | None  # median slow window over fast_s
    cpu_share: float  # lowest CPU time / wall time of any window

    @property
    def slow_share(self) -> float:
        return self.slow / self.windows


def fast_and_slow(times: Sequence[float]) -> tuple[float, list[float]]:
    """Of a series of window times: the fast one (their low quantile) and the slow ones,
    sorted (over SLOW_FACTOR x the fast one)."""
    times = sorted(times)
    fast = times[int(FAST_QUANTILE * (len(times) - 1))]
    return fast, [t for t in times if t > SLOW_FACTOR * fast]


def summarize(windows: Sequence[Window]) -> list[CoreSpeed]:
    out = []
    for core in sorted({w.core for w in windows}):
        times = [w.call_s for w in windows if w.core == core]
        fast, slow = fast_and_slow(times)
        out.append(
            CoreSpeed(
                core,
                fast,
                len(times),
                len(slow),
                wilson(len(slow), len(times)),
                slow[len(slow) // 2] / fast if slow else None,
                min(w.cpu_share for w in windows if w.core == core),
            )
        )
    return out


# A host changes speed when, on some core, the share of slow windows the thread spent on
# the core (CPU time at least ON_CORE of the wall time: a window it was preempted in is a
# disturbance, not a speed) is above this with 95% confidence (its Wilson lower bound). A
# steady host still stalls now and then: in the 30 committed runs of steady 2-core EPYC VMs
# (2026-11-24 to 26) a core read up to 6 slow windows of 226 (2.7%, lower bound 1.2%), at
# about 2x (a window the host held the core for); at a floor of 1% three of them read
# two-speed, and their between-run study did not judge them. The 13 runs of two-speed VMs
# (2026-11-24/25) read 3% to 24% of windows slow per core, at 1.7x, and on its slower core
# every run's lower bound was 3.9% or more (tests/test_disturbance.py reads them all).
ON_CORE = 0.95
SLOW_SHARE_FLOOR = 0.025
STEADY, TWO_SPEED, UNKNOWN = "steady", "two-speed", "unknown"


def verdict(windows: Sequence[Window]) -> str:
    """`steady`, `two-speed` or `unknown` (no window on its core): one rule for the probe
    (`blockbench core-speed`) and for a run's readings together (`classify`), so that the
    tool and the claims stage never call the same host two things."""
    on_core = [w for w in windows if w.cpu_share >= ON_CORE]
    if not on_core:
        return UNKNOWN
    slow = any(s.slow_ci[0] > SLOW_SHARE_FLOOR for s in summarize(on_core))
    return TWO_SPEED if slow else STEADY


def describe(
    speeds: Sequence[CoreSpeed], steal: float | None, host: str, handoff: str | None = None
) -> list[str]:
    """One line per core, the hand-off's (`Handoffs.describe`, where measured) and the
    conclusion (`host`: what `verdict` says of the same windows), for a reader deciding
    whether to trust a run."""
    lines = []
    fastest = min(s.fast_s for s in speeds)
    for s in speeds:
        slow = (
            f"{s.slow} of {s.windows} windows slow ({s.slow_share:.0%}, 95% CI "
            f"{s.slow_ci[0]:.0%}-{s.slow_ci[1]:.0%}), at {s.slow_factor:.2f}x the fast time"
            if s.slow
            else f"no slow window in {s.windows}"
        )
        lines.append(
            f"core {s.core}: {s.fast_s * 1e3:.2f} ms a call when fast "
            f"({s.fast_s / fastest:.2f}x the fastest core's); {slow}; "
            f"CPU time / wall time >= {s.cpu_share:.2f}"
        )
    lines += [handoff] if handoff else []
    stolen = "unknown" if steal is None else f"{steal:.2f} s"
    lines.append(f"steal counted by the guest's kernel meanwhile: {stolen}")
    if host == TWO_SPEED:
        lines.append(
            f"cores change speed under the guest (a core slow in over {SLOW_SHARE_FLOOR:.1%} "
            "of its windows, with 95% confidence): calls of a second or less land in either "
            "speed, and only more processes (blocks' `repeats`) average it"
        )
    elif host == STEADY:
        lines.append("every core kept its speed")
    else:
        lines.append("no window ran on its core undisturbed: nothing to say of its speed")
    return lines


# A hand-off: a byte sent from a thread on one core to a thread on another and back, through
# two pipes, each thread blocked in between. It is what a call of microseconds pays when XLA
# runs it on a pool thread of the other core: on the Zen 5 EPYC VM of 2026-11-26, the 12-row
# jit loop took 19 to 25 µs a call on both vCPUs and 14.3 to 15.1 µs pinned to one, and such
# a round trip 31 µs between two threads (5 µs on one core). In stretches of seconds both
# slow together: over 30 fresh processes, a process's hand-off (29 to 60 µs) and its jit call
# (23 to 37 µs) correlated at 0.91 (docs/measuring-traps.md). A loop on one core at a time
# cannot see it.
HANDOFF_TRIPS = 200


def handoff(a: int, b: int, trips: int = HANDOFF_TRIPS) -> float:
    """The median round trip (seconds) of `trips` hand-offs from a thread on core `a` to one
    on core `b` (a == b: both on one core, what the same trip costs without waking another
    core); the caller's affinity restored."""
    before = os.sched_getaffinity(0)
    if trips < 1 or not {a, b} <= before:
        raise ValueError(
            f"a hand-off needs trips >= 1 on cores of {sorted(before)}: {trips}, {a}, {b}"
        )
    there, back = os.pipe(), os.pipe()

    def echo() -> None:
        os.sched_setaffinity(0, {b})  # this thread only (Linux)
        while (byte := os.read(there[0], 1)) != b"q":
            os.write(back[1], byte)

    helper = threading.Thread(target=echo, daemon=True)
    helper.start()
    times = []
    try:
        os.sched_setaffinity(0, {a})
        for _ in range(trips + 1):  # the first trip finds the helper still settling
            start = time.perf_counter()
            os.write(there[1], b"x")
            os.read(back[0], 1)
            times.append(time.perf_counter() - start)
    finally:
        os.write(there[1], b"q")
        helper.join()
        os.sched_setaffinity(0, before)
        for fd in (*there, *back):
            os.close(fd)
    return statistics.median(times[1:])


@dataclass(frozen=True)
class Handoffs:
    """Hand-off windows between two cores, with the same trip on one core beside them."""

    cores: tuple[int, int]
    across: tuple[float, ...]  # each window's median round trip between the two cores
    within: tuple[float, ...]  # the same on the first core alone

    def describe(self) -> str:
        fast, slow = fast_and_slow(self.across)
        alone, _ = fast_and_slow(self.within)
        slow_part = (
            f"{len(slow)} of {len(self.across)} windows slow, at {slow[len(slow) // 2] / fast:.2f}x"
            if slow
            else f"no slow window in {len(self.across)}"
        )
        a, b = self.cores
        return (
            f"hand-off between cores {a} and {b}: {fast * 1e6:.1f} µs a round trip when fast, "
            f"{alone * 1e6:.1f} µs on core {a} alone; {slow_part}"
        )


def handoffs(cores: tuple[int, int], seconds: float, trips: int = HANDOFF_TRIPS) -> Handoffs:
    """Hand-off windows between `cores`, and on the first alone, in turn for `seconds`."""
    across, within = [], []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        across.append(handoff(*cores, trips))
        within.append(handoff(cores[0], cores[0], trips))
    return Handoffs(cores, tuple(across), tuple(within))


def handoff_reading(cores: Sequence[int]) -> dict[str, Any] | None:
    """This process's hand-off between its first two cores and the same on the first alone,
    as its record keeps it (None on one core): read after its samples, so that it costs them
    nothing. It follows the host's state when the process ran (the 0.91 above) and what the
    process ran last (a core just busy wakes faster), so compare it within a cell."""
    if len(cores) < 2:
        return None
    a, b = cores[0], cores[1]
    if os.environ.get(FAKE_CORE_SPEED):  # tests: made up, as the core readings are
        return {"cores": [a, b], "across_s": 3e-5, "within_s": 5e-6}
    return {"cores": [a, b], "across_s": handoff(a, b), "within_s": handoff(a, a)}


# Each worker process reads its cores' speed once before measuring: this many windows of this
# length per core (0.06 s a process on 2 cores; about 29 calls of `spin` a window, where a
# core at half speed shows as 2x). A run's hundred-odd processes then give a few hundred
# windows per core spread over the whole run, so a run's verdict on its host does not hang
# on one reading: the two-speed VM's slow share moved from 40% to 3% within minutes.
READING_WINDOWS = 2
READING_WINDOW_S = 0.015
# Tests: every reading of this process is made up, all windows alike (steady) or one in five
# at twice the time (two-speed), so that what a run concludes does not depend on the host.
FAKE_CORE_SPEED = "BLOCKBENCH_FAKE_CORE_SPEED"


def reading(cores: Sequence[int]) -> list[dict[str, float]]:
    """This process's reading of its cores (the cell's), as its record keeps it."""
    fake = os.environ.get(FAKE_CORE_SPEED)
    if fake:
        slow = [2.0 if fake == TWO_SPEED and i % 5 == 0 else 1.0 for i in range(READING_WINDOWS)]
        got = [Window(c, 7e-4 * s, 1.0) for c in cores for s in slow]
    elif not hasattr(os, "sched_setaffinity"):  # macOS: a thread cannot be put on a core
        raise OSError("no per-core reading here: this system cannot pin a thread to a core")
    else:
        got = probe(cores, READING_WINDOWS * len(cores) * READING_WINDOW_S, READING_WINDOW_S)
    return [{"core": w.core, "call_s": w.call_s, "cpu_share": w.cpu_share} for w in got]


def classify(windows: Sequence[dict[str, float]]) -> str:
    """What a run's readings, all of its processes' together, say of its host (`verdict`)."""
    return verdict([Window(int(w["core"]), w["call_s"], w["cpu_share"]) for w in windows])
