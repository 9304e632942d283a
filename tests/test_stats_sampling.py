"""The statistics and the adaptive stop rule, on operations with known behaviour."""

import mmap
import random
import time

import numpy as np
import pytest

from blockbench.measure.disturbance import OUTSIDE, Disturbance
from blockbench.measure.sampling import (
    BUDGET,
    LONG,
    TIME_CAP,
    Collected,
    Sampler,
    _stop_reason,
    calibrate,
    collect,
    in_turn,
)
from blockbench.measure.stats import median_ci, relative_ci_halfwidth, summarize
from blockbench.records.spec import PROCESS_FLOOR, StopRule, per_process


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def timed(op):
    def run(loops: int, window) -> None:
        window.start()
        for _ in range(loops):
            op()
        window.stop()

    return run


def test_summary_of_known_samples():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median_s == 3.0 and s.min_s == 1.0 and s.max_s == 100.0 and s.n == 5
    assert s.mean_s == pytest.approx(22.0)
    assert s.iqr_s == pytest.approx(2.0)


def test_median_ci_brackets_the_median_and_narrows_with_more_samples():
    rng = np.random.default_rng(1)
    small, large = rng.normal(1.0, 0.1, 20), rng.normal(1.0, 0.1, 2000)
    for x in (small, large):
        low, high = median_ci(x)
        assert low <= np.median(x) <= high
    assert relative_ci_halfwidth(large) < relative_ci_halfwidth(small) / 3


def test_median_ci_is_unknown_with_too_few_samples():
    assert median_ci([1.0]) == (None, None)
    assert relative_ci_halfwidth([1.0, 2.0]) == float("inf")


def test_stop_rule_converges_on_a_steady_operation():
    rule = StopRule(target_rel_ci=0.01, min_samples=10, min_time_s=0.05, max_time_s=10.0)
    t0 = time.perf_counter()
    got = collect(timed(lambda: busy(0.002)), rule)
    assert got.converged and got.rel_ci <= 0.01
    assert len(got.samples_s) >= 10
    assert time.perf_counter() - t0 < 5.0
    assert np.median(got.samples_s) == pytest.approx(0.002, rel=0.2)


def test_stop_rule_stops_at_its_cap_on_a_noisy_operation():
    rnd = random.Random(0)
    rule = StopRule(target_rel_ci=0.01, min_samples=5, min_time_s=0.01, max_time_s=0.5)
    t0 = time.perf_counter()
    got = collect(timed(lambda: busy(rnd.uniform(0.0001, 0.004))), rule)
    elapsed = time.perf_counter() - t0
    assert not got.converged and got.rel_ci > 0.01
    assert 0.5 <= elapsed < 1.5


def test_calibration_loops_microsecond_operations():
    loops, tries = calibrate(timed(lambda: busy(20e-6)), sample_time_s=0.005)
    assert 100 <= loops <= 500
    for got in tries:  # each try at the chosen count is a sample of it
        assert 20e-6 <= got.spent / loops < 200e-6 and got.own_s >= got.spent


def test_one_slow_calibrating_sample_does_not_stop_the_loop_count_growing():
    """A 100 us call whose first sample at one loop is slowed to 30 ms of wall time (a
    neighbour, the probe's task list read anew) still gets the loops its speed asks for."""
    slowed = iter([0.03])

    def run(loops: int, window) -> None:
        busy(next(slowed, 0.0))  # untimed work around the first sample only
        window.start()
        for _ in range(loops):
            busy(100e-6)
        window.stop()

    assert 50 <= calibrate(run, sample_time_s=0.005)[0] <= 100


def test_the_probes_readings_do_not_count_against_a_calibrating_sample():
    class SlowProbe:
        cores = frozenset({0})

        def read(self):
            busy(0.015)  # two readings a sample: 30 ms, more than the 20 ms guard

    loops, tries = calibrate(timed(lambda: busy(100e-6)), sample_time_s=0.005, probe=SlowProbe())
    assert 50 <= loops <= 100
    assert all(t.window.probe_s >= 0.03 > t.own_s for t in tries)


def test_a_given_loop_count_is_used_as_it_is():
    """A later process of a cell uses its cell's count, however its own first sample went."""
    slowed = iter([0.03])

    def run(loops: int, window) -> None:
        busy(next(slowed, 0.0))
        window.start()
        for _ in range(loops):
            busy(100e-6)
        window.stop()

    rule = StopRule(min_samples=3, min_time_s=0.0, max_time_s=0.02, warmup=0)
    got = collect(run, rule, loops=50)
    assert got.loops == 50 and got.loops_from == "cell" and len(got.samples_s) >= 3
    own = collect(timed(lambda: busy(100e-6)), rule)
    assert own.loops_from == "calibrated"


def test_calibration_counts_untimed_work_against_the_sample():
    # a 10 us timed region followed by 50 ms of untimed waiting (a dispatch, then its block)
    def run(loops: int, window) -> None:
        for _ in range(loops):
            window.elapsed += 10e-6
            busy(0.05)

    assert calibrate(run, sample_time_s=0.005)[0] == 1


def test_every_raw_sample_is_kept_as_a_per_call_time():
    calls = []

    def run(loops: int, window) -> None:
        calls.append(loops)
        window.elapsed += 0.001 * loops

    got = collect(run, StopRule(min_samples=3, min_time_s=0, max_time_s=0.05), calibrated=False)
    assert got.loops == 1 and all(s == pytest.approx(0.001) for s in got.samples_s)
    assert len(got.samples_s) == len(calls)


def test_the_time_cap_never_cuts_a_slow_phase_below_min_samples():
    """A call longer than the cap still gets min_samples samples: the cap scales with it."""
    rule = StopRule(min_samples=5, min_time_s=0.0, max_time_s=0.05, warmup=0)
    got = collect(timed(lambda: busy(0.03)), rule, calibrated=False)
    assert len(got.samples_s) == 5 and got.stop == TIME_CAP


def test_the_calibration_run_is_the_first_sample():
    calls = []

    def run(loops: int, window) -> None:
        calls.append(loops)
        busy(0.01 * loops)
        window.elapsed += 0.01 * loops

    rule = StopRule(min_samples=5, min_time_s=0, max_time_s=0.01, warmup=1, warmup_s=0)
    got = collect(run, rule)
    assert calls == [1] * 6  # one warm-up call, then five samples, the first from calibration
    assert len(got.samples_s) == 5


def test_a_deadline_stops_sampling_and_says_so():
    rule = StopRule(min_samples=5, min_time_s=0.0, max_time_s=10.0, warmup=0)
    deadline = time.time() + 0.05  # room for about two 20 ms samples
    got = collect(timed(lambda: busy(0.02)), rule, calibrated=False, deadline=deadline)
    assert 1 <= len(got.samples_s) < 5 and got.stop == BUDGET
    assert time.time() < deadline + 0.5  # it did not start a sample it could not finish


@pytest.mark.parametrize("n", [*range(2, 60), 99, 100, 500, 2000])
def test_median_ci_is_the_order_statistic_interval_scipy_gives(n):
    """Computed without scipy.stats (half a second of every worker's start-up), and equal to
    scipy.stats.quantile_test's interval for the median."""
    from scipy import stats as sps

    x = np.random.default_rng(n).lognormal(size=n)
    ci = sps.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(0.95)
    expected = tuple(float(v) if np.isfinite(v) else None for v in (ci.low, ci.high))
    assert median_ci(x) == expected


def test_a_cells_sampling_is_split_over_its_processes():
    cell = {"min_samples": 5, "min_time_s": 0.06, "max_time_s": 0.3, "target_rel_ci": 0.01}
    three = per_process(cell, 3)
    # 5 over 3 processes rounds up to 2, and a process's median of 2 is their mean, which one
    # slow sample moves: each takes at least PROCESS_FLOOR
    assert three["min_samples"] == PROCESS_FLOOR == 3
    assert per_process({**cell, "min_samples": 12}, 3)["min_samples"] == 4
    assert three["max_time_s"] == pytest.approx(0.1) and three["min_time_s"] == pytest.approx(0.02)
    assert three["target_rel_ci"] == 0.01
    assert per_process(cell, 1) == cell
    assert per_process({"min_samples": 5}, 10)["min_samples"] == 3  # never a lone sample


def test_single_call_phases_take_30_samples_where_they_fit_and_fewer_where_calls_wait_long():
    rule = StopRule(min_samples=2, min_time_s=0, max_time_s=0.0, warmup=1)

    def quick(loops: int, window) -> None:  # a 10 us call, then a 1 ms wait for its result
        for _ in range(loops):
            window.start()
            busy(10e-6)
            window.stop()
            busy(0.001)

    def slow(loops: int, window) -> None:  # the same call waiting 0.5 s for its result
        for _ in range(loops):
            window.start()
            busy(10e-6)
            window.stop()
            busy(0.5)

    fast = collect(quick, rule, calibrated=False, warm=True, single_calls=30)
    assert fast.floor == 30 and len(fast.samples_s) == 30 and fast.loops == 1
    # the wait is not in the sample (were it, every sample would last 1 ms or more); a
    # sample or two may still be stretched by the hypervisor taking the core
    assert sum(s >= 0.001 for s in fast.samples_s) <= 2, fast.samples_s
    long = collect(slow, rule, calibrated=False, warm=True, single_calls=30)
    assert long.floor == 2 and len(long.samples_s) == 2  # 1 s of wall / 0.5 s a call: min_samples


def test_phases_in_turn_alternate_sample_by_sample_and_each_counts_its_own_time():
    calls: list[str] = []

    def phase(name: str, seconds: float):
        def run(loops: int, window) -> None:
            window.start()
            for _ in range(loops):
                busy(seconds)
            window.stop()
            calls.append(name)

        return run

    rule = StopRule(min_samples=4, min_time_s=0.0, max_time_s=0.05, target_rel_ci=1e-9, warmup_s=0)
    a, b = Sampler(phase("a", 0.006), rule), Sampler(phase("b", 0.006), rule)
    got_a, got_b = in_turn([a, b])
    # each warms up, then calibrates: a 6 ms call fills a sample at one loop, which the
    # fastest of three tries confirms (all three kept as samples)
    assert calls[:8] == ["a"] * 4 + ["b"] * 4
    assert calls[8:14] == ["a", "b"] * 3  # then one sample of each, in turn
    # each phase's 50 ms cap counts its own time (its calibrating tries and its samples), not
    # the other's: samples until its own reach 50 ms, and not one more (~8 of 6 ms each on a
    # quiet core; counting both phases' time would stop each near 25 ms of its own)
    for sampler, got in ((a, got_a), (b, got_b)):
        assert sum(got.samples_s[:-1]) < 0.05 <= sampler.spent, got.samples_s
        assert sum(got.samples_s) > 0.035, got.samples_s  # not ~25 ms: not both phases' time
    assert got_a.stop == got_b.stop == TIME_CAP


def test_one_clean_long_sample_stands_for_its_process_and_a_short_one_does_not():
    rule = StopRule(min_samples=3, min_time_s=0.0, max_time_s=0.01, long_sample_s=0.02)
    long = collect(timed(lambda: busy(0.03)), rule, calibrated=False)
    assert long.stop == LONG and len(long.samples_s) == 1
    short = collect(timed(lambda: busy(0.005)), rule, calibrated=False)
    assert short.stop == TIME_CAP and len(short.samples_s) == 3


def test_a_disturbed_long_sample_does_not_stand_alone():
    rule = StopRule(min_samples=2, long_sample_s=0.02)
    out = Collected(samples_s=[1.0], disturbances=[Disturbance(10**9, 0, 0, 0, 10**8, OUTSIDE)])
    assert _stop_reason(out, rule, elapsed=1.0, last_wall=1.0, deadline=None) == ""
    clean = Collected(samples_s=[1.0], disturbances=[None])
    assert _stop_reason(clean, rule, elapsed=1.0, last_wall=1.0, deadline=None) == LONG
    # a 10 us dispatch that waited a second for its result is no long sample
    quick = Collected(samples_s=[1e-5], disturbances=[None])
    assert _stop_reason(quick, rule, elapsed=1.0, last_wall=1.0, deadline=None) == ""


def test_the_single_call_floor_is_judged_from_the_fastest_warm_up_call():
    walls = iter([0.3, 0.001, 0.001])  # the first warm-up call waited behind a neighbour

    def run(loops: int, window) -> None:
        wait = next(walls, 0.001)
        window.start()
        busy(1e-5)
        window.stop()
        busy(wait)

    rule = StopRule(min_samples=2, min_time_s=0.0, max_time_s=0.001)
    got = collect(run, rule, calibrated=False, warm=True, single_calls=30)
    assert got.floor == 30 and len(got.samples_s) == 30


def test_phases_in_turn_warm_up_in_turn_for_warmup_s_before_calibrating():
    """What settles in a fresh process (XLA's pool threads on their cores) takes tens of
    milliseconds of calls, not one call: warm-up calls go on, in turn, for `warmup_s`."""
    calls: list[str] = []

    def phase(name: str):
        def run(loops: int, window) -> None:
            window.start()
            for _ in range(loops):
                busy(0.002)
            window.stop()
            calls.append(name)

        return run

    rule = StopRule(min_samples=2, min_time_s=0.0, max_time_s=0.0, warmup_s=0.04)
    t0 = time.perf_counter()
    a, b = Sampler(phase("a"), rule), Sampler(phase("b"), rule)
    in_turn([a, b])
    # pairs of calls until 40 ms have passed, and not a pair more (about 10 pairs of 2 ms
    # calls on a quiet core; fewer where another process slows the calls)
    assert len(a.walls) == len(b.walls) >= 2
    assert sum(a.walls[:-1]) + sum(b.walls[:-1]) < 0.04 <= sum(a.walls) + sum(b.walls)
    assert calls[: 2 * len(a.walls)] == ["a", "b"] * len(a.walls)
    assert time.perf_counter() - t0 < 1.0
    # a phase the check's call warmed (`warmup=0`) takes no warm-up at all
    calls.clear()
    warmed = Sampler(phase("c"), StopRule(min_samples=2, max_time_s=0.0, warmup=0))
    in_turn([warmed])
    # (its calls: calibration's, about 5 on a quiet core and a few more where another process
    # slows a try, then its samples; a warm-up of the default 0.1 s would be 50 calls of 2 ms)
    assert warmed.walls == [] and calls[0] == "c" and len(calls) < 20


def test_each_sample_counts_the_page_faults_of_its_calls():
    """A call that maps fresh memory and touches it faults once a page; one that reuses its
    memory does not. The count is the process's, read outside the timed region."""
    pages = 64

    def fresh(loops: int, window) -> None:
        window.start()
        for _ in range(loops):
            with mmap.mmap(-1, pages * mmap.PAGESIZE) as block:
                for page in range(pages):
                    block[page * mmap.PAGESIZE] = 1
        window.stop()

    reused = bytearray(pages * mmap.PAGESIZE)

    def same(loops: int, window) -> None:
        window.start()
        for _ in range(loops):
            for page in range(pages):
                reused[page * mmap.PAGESIZE] = 1
        window.stop()

    rule = StopRule(min_samples=5, min_time_s=0.0, max_time_s=0.0, warmup_s=0)
    faulting = collect(fresh, rule)
    assert len(faulting.faults) == len(faulting.samples_s)
    assert min(faulting.faults) >= pages
    assert max(collect(same, rule).faults) < pages / 4
