"""Collecting raw samples: loop calibration, the adaptive stop rule, and each sample's window.

A phase is a callable `run(loops, window)` that brackets its timed region(s) for `loops`
calls with `window.start()` / `window.stop()`, so the phase decides what is timed (a
dispatch excludes the block that follows it) and this module only decides how many calls
make a sample and when to stop. The window also reads the kernel's scheduler counters just
outside the timed region (blockbench.measure.disturbance), so every sample knows whether it was
disturbed, and it takes the timer's own cost out of every timed region.
"""

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from blockbench.measure.disturbance import Disturbance, Probe, between, combine
from blockbench.measure.stats import excluded, relative_ci_halfwidth
from blockbench.records.spec import CALIBRATION_TRIES, SINGLE_CALL_WALL_S, StopRule

clock = time.perf_counter


def _timer_cost(pairs: int = 2000) -> float:
    """What one empty start/stop pair of the clock reads (tens of ns): taken out of every
    timed region, which matters for single-call samples of microsecond calls."""
    costs = []
    for _ in range(pairs):
        t0 = clock()
        costs.append(clock() - t0)
    costs.sort()
    return costs[len(costs) // 2]


TIMER_COST_S = _timer_cost()


def minor_faults() -> int:
    """Page faults the whole process (every thread) has taken that needed no disk: memory
    that malloc handed back to the kernel and touched again. Eager JAX on glibc takes
    thousands per call in some processes and none in others (docs/measuring-traps.md)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class Window:
    """The timed regions of one sample: their summed time, and the kernel counters around
    them (read outside the timed region, so reading them costs the sample nothing; how long
    the readings took is kept apart, `probe_s`, since it is the probe's time, not the
    phase's)."""

    def __init__(self, probe: Probe | None = None, count_faults: bool = True) -> None:
        self.probe, self.count_faults = probe, count_faults
        self.elapsed = 0.0
        self.probe_s = 0.0
        self.faults = 0  # minor page faults inside the timed regions (where counted)
        self.parts: list[Disturbance | None] = []
        self._before = None
        self._t0 = 0.0
        self._f0 = 0

    def _read(self) -> Any:
        t0 = clock()
        reading = self.probe.read() if self.probe else None
        self.probe_s += clock() - t0
        return reading

    def start(self) -> None:
        self._before = self._read()
        self._f0 = minor_faults() if self.count_faults else 0
        self._t0 = clock()

    def stop(self) -> None:
        t1 = clock()
        if self.count_faults:
            self.faults += minor_faults() - self._f0
        self.elapsed += max(t1 - self._t0 - TIMER_COST_S, 0.0)
        if self.probe:
            self.parts.append(between(self._before, self._read(), len(self.probe.cores)))

    def disturbance(self) -> Disturbance | None:
        return combine(self.parts)


PhaseRun = Callable[[int, Window], None]

# Why a phase stopped sampling (recorded with every phase).
CONVERGED, TIME_CAP, SAMPLE_CAP, BUDGET = "converged", "time_cap", "sample_cap", "budget"
DISTURBED = "disturbed"  # the floor of undisturbed samples was out of reach
LONG = "long_sample"  # one clean sample of a call that takes seconds stands for the process
# A disturbed sample does not count towards the floor: sampling goes on, up to this many
# times the floor in all, so that a neighbour that comes and goes costs a few samples more,
# not the phase its clean ones.
EXTRA_FOR_DISTURBED = 3


SINGLE_CALL_WARMUPS = 3
# A single-call phase (dispatch) reads the kernel's counters once per this many samples,
# around the group, with one untimed call after the reading: reading them around every
# microsecond call made the call itself slower (jnp.dot at 1000 on a 2-core Xeon VM: +10.6%),
# since the reading's file and cache traffic lands just before the timed call. Each sample of
# the group gets the group's verdict (benchmarks/harness_overhead.py shows the cost left).
PROBE_GROUP = 8


@dataclass
class Collected:
    samples_s: list[float] = field(default_factory=list)  # per-call seconds, one per sample
    # the kernel's account of each sample (None where the host has no per-thread counters)
    disturbances: list[Disturbance | None] = field(default_factory=list)
    faults: list[float] = field(default_factory=list)  # minor page faults per call, per sample
    loops: int = 1
    # "calibrated": this process chose `loops`; "cell": the cell's count, chosen by its first
    # process (blockbench.measure.parent.cell_loops); "": one call a sample by nature
    loops_from: str = ""
    probe_s: float = 0.0  # seconds the kernel counters' readings took around the samples
    converged: bool = False
    rel_ci: float = float("inf")
    stop: str = ""
    floor: int | None = None  # the raised floor of a single-call phase, where there is one


def timed(
    run: PhaseRun, loops: int, probe: Probe | None = None, count_faults: bool = True
) -> tuple[float, Window]:
    """One sample: seconds in the timed regions for `loops` calls, and its window."""
    window = Window(probe, count_faults)
    run(loops, window)
    return window.elapsed, window


def grouped(run: PhaseRun, n: int, probe: Probe) -> tuple[list[float], Disturbance | None, float]:
    """`n` single-call samples between two readings of the counters (PROBE_GROUP), the first
    call after a reading untimed; the group's disturbance, and its page faults per call
    (read around the group too, for the same reason)."""
    before = probe.read()
    timed(run, 1, count_faults=False)
    faults = minor_faults()
    samples = [timed(run, 1, count_faults=False)[0] for _ in range(n)]
    faults = minor_faults() - faults
    return samples, between(before, probe.read(), len(probe.cores)), faults / n


@dataclass
class Try:
    """One sample taken while calibrating: timed seconds, its window, and its own wall time
    (the untimed work the phase does around the timed region, the probe's readings apart)."""

    spent: float
    window: Window
    own_s: float


def tried(run: PhaseRun, loops: int, probe: Probe | None = None) -> Try:
    t0 = clock()
    spent, window = timed(run, loops, probe)
    return Try(spent, window, clock() - t0 - window.probe_s)


def calibrate(
    run: PhaseRun,
    sample_time_s: float,
    long_s: float = float("inf"),
    max_loops: int = 1_000_000,
    probe: Probe | None = None,
) -> tuple[int, list[Try]]:
    """Smallest loops (1, 2, 5, 10, 20, ...) whose sample lasts sample_time_s, as timeit does,
    and the tries at that count (valid samples: they ran with those loops).

    Growth also stops when the untimed work the phase does around the timed region (the
    block after a dispatch, computing results to read back) makes a sample long: a 10 us
    dispatch of a 1 s matmul must not be looped a thousand times. Either stop must hold for
    the fastest of CALIBRATION_TRIES tries; a call of `long_s` or more needs no second try.
    """
    loops = 1
    while True:
        for factor in (1, 2, 5):
            n = min(loops * factor, max_loops)
            tries: list[Try] = []
            while len(tries) < CALIBRATION_TRIES:
                tries.append(got := tried(run, n, probe))
                enough = got.spent >= sample_time_s or got.own_s >= 4 * sample_time_s
                if not enough or got.spent >= long_s:
                    break
            spent, own = min(t.spent for t in tries), min(t.own_s for t in tries)
            if spent >= sample_time_s or own >= 4 * sample_time_s or n == max_loops:
                return n, tries
        loops *= 10


def empty_sample_s(probe: Probe | None, samples: int = 7) -> float:
    """What a one-loop sample reads for a call that does nothing, through the same window
    and probe readings as a phase's: the bookkeeping left inside the timed region (the
    timer's own cost is already taken out). Recorded with every process."""

    def run(loops: int, window: Window) -> None:
        window.start()
        for _ in range(loops):
            pass
        window.stop()

    got = sorted(timed(run, 1, probe)[0] for _ in range(samples))
    return got[len(got) // 2]


class Sampler:
    """One phase's sampling, a sample at a time, so that several phases can take turns.

    `prepare` warms up and calibrates; each `step` takes one sample unless the stop rule
    says the phase is done. A phase's time limits count its own samples' wall time (with
    the untimed work around the timed region), never the warm-up and calibration before
    them nor the other phases' samples between its own.

    `calibrated=False` is for one call per sample: phases that are costly by nature
    (compile, first call), which get no warm-up call either, since warming would change what
    they measure; and microsecond calls whose distribution matters (dispatch: `warm=True`),
    timed one call each so that a slow mode shows instead of being averaged into the loop.
    `deadline` (time.time()) stops sampling when the next sample would not end before it.
    `loops` is the cell's count for a calibrated phase (its first process chose it): used as
    given, with no calibration, so that every process of a cell times the same loop.
    `single_calls` raises the floor of samples to that many, as far as they fit in
    SINGLE_CALL_WALL_S of wall time (a 10 us dispatch that waits 170 ms for its matmul
    before the next one gets fewer), judged from the fastest of its warm-up calls.
    """

    def __init__(
        self,
        run: PhaseRun,
        rule: StopRule,
        calibrated: bool = True,
        deadline: float | None = None,
        probe: Probe | None = None,
        warm: bool | None = None,
        single_calls: int = 0,
        loops: int | None = None,
    ) -> None:
        self.run, self.rule, self.calibrated, self.loops = run, rule, calibrated, loops
        self.deadline, self.probe, self.single_calls = deadline, probe, single_calls
        self.warm = calibrated if warm is None else warm
        self.out = Collected()
        self.last_wall = 0.0
        self.spent = 0.0
        self.walls: list[float] = []  # wall seconds of each warm-up call

    @property
    def warms_for(self) -> float:
        """Seconds of warm-up calls this phase wants before calibrating (0: none)."""
        return self.rule.warmup_s if self.warm and self.rule.warmup > 0 else 0.0

    def warm_call(self) -> None:
        t0 = time.perf_counter()
        timed(self.run, 1, count_faults=False)
        self.walls.append(time.perf_counter() - t0)

    def prepare(self) -> None:
        walls = self.walls
        if self.warm:
            # a single-call phase judges how many calls fit from its fastest of a few
            # warm-up calls: one call that a neighbour slowed must not cut the floor
            need = max(self.rule.warmup, SINGLE_CALL_WARMUPS if self.single_calls else 0)
            while len(walls) < need:
                self.warm_call()
            self.last_wall = walls[-1] if walls else 0.0
        if self.single_calls:
            fit = int(SINGLE_CALL_WALL_S / max(min(walls, default=0.0), 1e-9))
            floor = max(self.rule.min_samples, min(self.single_calls, fit))
            self.rule = replace(self.rule, min_samples=floor)
            self.out.floor = floor
            self.last_wall = 0.0
        self.spent = self.last_wall
        if self.calibrated and self.loops:
            self.out.loops, self.out.loops_from = self.loops, "cell"
        elif self.calibrated:
            out = self.out
            out.loops_from = "calibrated"
            out.loops, tries = calibrate(
                self.run, self.rule.sample_time_s, self.rule.long_sample_s, probe=self.probe
            )
            for got in tries:
                self._keep(got.spent, got.window)
            self.spent = sum(t.own_s for t in tries)
            self.last_wall = tries[-1].own_s

    def _keep(self, spent: float, window: Window) -> None:
        out = self.out
        out.samples_s.append(spent / out.loops)
        out.disturbances.append(window.disturbance())
        out.faults.append(window.faults / out.loops)
        out.probe_s += window.probe_s

    def step(self) -> bool:
        """Take one sample (a group of them, for a single-call phase with a probe); False
        (and `out.stop` set) once the phase is done."""
        out = self.out
        if out.samples_s:
            out.stop = _stop_reason(out, self.rule, self.spent, self.last_wall, self.deadline)
            if out.stop:
                return False
        if self.single_calls and self.probe is not None:
            t0 = time.perf_counter()
            room = self.rule.max_samples - len(out.samples_s)
            samples, disturbance, faults = grouped(self.run, min(PROBE_GROUP, room), self.probe)
            out.samples_s += samples
            out.disturbances += [disturbance] * len(samples)
            out.faults += [faults] * len(samples)
            self.last_wall = time.perf_counter() - t0
        else:
            got = tried(self.run, out.loops, self.probe)
            self._keep(got.spent, got.window)
            self.last_wall = got.own_s  # the phase's time limits count its own time only
        self.spent += self.last_wall
        return True


def collect(run: PhaseRun, rule: StopRule, **options: Any) -> Collected:
    """Sample a phase until the stop rule says so; every raw sample is kept. `options` are
    `Sampler`'s."""
    return in_turn([Sampler(run, rule, **options)])[0]


def warm_up(samplers: list[Sampler]) -> None:
    """Untimed calls of the phases that warm up, one of each in turn, until the longest
    `warmup_s` among them has passed; each phase's `warmup` count is then made up in
    `prepare`. Time, not a count: what settles is the process (XLA's pool threads finding
    their cores, 10 ms to 0.3 s of calls), and a count long enough for a 10 ms call is far
    too short for a 10 us one."""
    warming = [s for s in samplers if s.warms_for > 0]
    seconds = max((s.warms_for for s in warming), default=0.0)
    t0 = time.perf_counter()
    while warming and time.perf_counter() - t0 < seconds:
        for sampler in warming:
            sampler.warm_call()


def in_turn(samplers: list[Sampler]) -> list[Collected]:
    """Sample several phases of one cell alternately, one sample of each in turn, until
    every one is done. Phases that a claim divides by each other (A2: the readback over the
    blocked call) then see the same seconds of the machine: a minute in which the host
    runs slow raises both, and their ratio within the process stays put."""
    warm_up(samplers)
    for sampler in samplers:
        sampler.prepare()
    going = list(samplers)
    while going:
        going = [s for s in going if s.step()]
    return [s.out for s in samplers]


def undisturbed(out: Collected) -> int:
    """Samples that count towards the floor: every sample no disturbance took out."""
    return sum(1 for d in out.disturbances if d is None or not excluded(d.cause))


def _stop_reason(
    out: Collected, rule: StopRule, elapsed: float, last_wall: float, deadline: float | None
) -> str:
    n = undisturbed(out)
    taken = len(out.samples_s)
    if n >= rule.min_samples:
        out.rel_ci = relative_ci_halfwidth(out.samples_s)
    if taken >= rule.max_samples:
        return SAMPLE_CAP
    if taken == n == 1 and out.samples_s[0] * out.loops >= rule.long_sample_s:
        return LONG
    if n < rule.min_samples and taken >= EXTRA_FOR_DISTURBED * rule.min_samples:
        return DISTURBED
    if n >= rule.min_samples:
        if elapsed >= rule.min_time_s and out.rel_ci <= rule.target_rel_ci:
            out.converged = True
            return CONVERGED
        if elapsed >= rule.max_time_s:
            return TIME_CAP
    if deadline is not None and time.time() + last_wall > deadline:
        return BUDGET
    return ""
