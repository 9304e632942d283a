"""Every sample knows whether it was disturbed, and by whom (blockbench.measure.disturbance).

A process spinning on the cell's core must flag the samples it shared the core with as
disturbed from outside; a thread of the cell's own process spinning there flags them as
disturbed from inside; on a quiet core the samples stay clean.
"""

import gzip
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from blockbench.measure.disturbance import INSIDE, OUTSIDE, Probe, between, combine
from blockbench.measure.sampling import collect
from blockbench.records.spec import StopRule

pytestmark = pytest.mark.skipif(
    not Probe((0,)).available or not hasattr(os, "sched_setaffinity"),
    reason="needs Linux per-thread scheduler statistics and CPU affinity",
)

SPIN = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def busy_run(loops: int, window) -> None:
    window.start()
    for _ in range(loops):
        busy(0.01)
    window.stop()


@pytest.fixture
def one_core():
    """This process on one core of its own choosing, restored afterwards."""
    before = os.sched_getaffinity(0)
    core = max(before)
    os.sched_setaffinity(0, {core})
    yield core
    os.sched_setaffinity(0, before)


def sample(core: int, n: int = 12):
    rule = StopRule(min_samples=n, max_samples=n, min_time_s=0, max_time_s=60, warmup=0)
    probe = Probe((core,))
    try:
        got = collect(busy_run, rule, calibrated=False, probe=probe)
    finally:
        probe.close()
    return got.disturbances


@pytest.mark.serial
def test_a_quiet_core_gives_undisturbed_samples(one_core):
    """Most samples on a quiet core are clean (three tries: a test machine has neighbours
    of its own now and then)."""
    for _ in range(3):
        got = sample(one_core)
        clean = [d for d in got if not d.cause]
        if len(clean) >= 0.8 * len(got):
            return
    pytest.fail(f"no quiet try: {[(d.cause, d.other_cpu_ns, d.main_wait_ns) for d in got]}")


def test_a_process_spinning_on_the_cells_core_disturbs_from_outside(one_core):
    spinner = subprocess.Popen([sys.executable, "-c", SPIN, str(one_core)])
    try:
        time.sleep(0.3)  # let it start and pin itself
        got = sample(one_core)
    finally:
        spinner.kill()
        spinner.wait()
    outside = [d for d in got if d.cause == OUTSIDE]
    assert len(outside) >= 0.8 * len(got), [(d.cause, d.other_cpu_ns) for d in got]
    # the spinner had about half the core: its CPU time is seen, and ours waited for it
    assert min(d.other_cpu_ns for d in outside) > 1_000_000
    assert sum(d.main_wait_ns for d in got) > 0.2 * sum(d.span_ns for d in got)


@pytest.mark.serial
def test_the_cells_own_thread_on_its_core_disturbs_from_inside(one_core):
    """Threads of this process that compute without the GIL (hashing a large buffer)
    compete with the measuring thread for the one core: contention inside the cell."""
    stop = threading.Event()
    data = os.urandom(1 << 22)

    def hash_forever() -> None:
        while not stop.is_set():
            hashlib.sha256(data).digest()

    # six pool threads on the one core: the measuring thread waits most of each sample
    pool = [threading.Thread(target=hash_forever, daemon=True) for _ in range(6)]
    for t in pool:
        t.start()
    tries = []
    try:
        time.sleep(0.1)
        for _ in range(3):  # the GIL's hand-offs now and then make the wait a sleep instead
            got = sample(one_core)
            tries.append(got)
            if sum(d.cause == INSIDE for d in got) >= 0.7 * len(got):
                break
    finally:
        stop.set()
        for t in pool:
            t.join()
    seen = [(d.cause, d.main_wait_ns, d.span_ns) for d in tries[-1]]
    assert sum(d.cause == INSIDE for d in tries[-1]) >= 0.7 * len(tries[-1]), seen
    # none of it is blamed on another process: a misreading would blame most samples; one
    # sample of the tries may meet a real neighbour (a kernel thread: the CI VM runs kdamond)
    blamed = [d for got in tries for d in got if d.cause == OUTSIDE]
    assert len(blamed) <= 1, seen


def test_regions_of_one_sample_add_up_and_any_disturbed_region_marks_it(one_core):
    probe = Probe((one_core,))
    try:
        a = probe.read()
        busy(0.002)
        b = probe.read()
        busy(0.002)
        c = probe.read()
    finally:
        probe.close()
    first, second = between(a, b, 1), between(b, c, 1)
    both = combine([first, second])
    assert both.span_ns == first.span_ns + second.span_ns
    assert combine([first]) is first and combine([None]) is None


def test_a_core_at_half_speed_part_of_the_time_is_told_from_a_steady_one():
    """blockbench.measure.core_speed: what the guest's counters cannot see, timing shows."""
    from blockbench.measure.core_speed import CoreSpeed, Window, describe, summarize, verdict

    halves = [Window(0, 0.005, 1.0)] * 6 + [Window(0, 0.0095, 1.0)] * 4
    steady = [Window(1, 0.005 * (1 + i / 100), 1.0) for i in range(10)]
    two_speeds, kept = summarize(halves + steady)
    assert (two_speeds.core, two_speeds.slow, two_speeds.windows) == (0, 4, 10)
    assert two_speeds.slow_factor == pytest.approx(1.9)
    assert two_speeds.slow_ci[0] > 0.1
    assert kept.slow == 0 and kept.slow_factor is None
    lines = describe([two_speeds, kept], 0.0, verdict(halves + steady))
    assert "cores change speed" in lines[-1]
    assert "(1.00x the fastest core's)" in lines[0] and "(1.00x the fastest core's)" in lines[1]
    slower = describe([kept, CoreSpeed(2, 0.01, 10, 0, (0.0, 0.3), None, 1.0)], 0.0, "steady")
    assert "(2.00x the fastest core's)" in slower[1]
    assert describe([kept], 0.0, verdict(steady))[-1] == "every core kept its speed"


def test_the_probe_and_a_runs_readings_judge_the_same_windows_alike():
    """One rule for `blockbench core-speed` and the claims stage: the probe of 2026-11-25
    (3 of 34 windows slow at 1.65x on one core) said "every core kept its speed" by a looser
    rule of its own while every run's readings said two-speed."""
    from blockbench.measure.core_speed import Window, classify, describe, summarize, verdict

    probe = [Window(0, 7.4e-4 * (1 + i / 1000), 1.0) for i in range(34)]
    probe += [Window(1, 7.4e-4 * (1 + i / 1000), 1.0) for i in range(31)]
    probe += [Window(1, 1.22e-3, 1.0)] * 3
    as_read = [{"core": w.core, "call_s": w.call_s, "cpu_share": w.cpu_share} for w in probe]
    assert verdict(probe) == classify(as_read) == "two-speed"
    assert describe(summarize(probe), 0.0, verdict(probe))[-1].startswith("cores change speed")
    quiet = probe[:34] + [Window(1, 7.4e-4, 1.0)] * 300 + [Window(1, 1.22e-3, 1.0)]
    assert verdict(quiet) == "steady"  # 1 slow window of 301: not over 2.5% with 95% confidence
    assert verdict([Window(0, 1.22e-3, 0.5)]) == "unknown"  # preempted: not a speed


def test_a_runs_readings_tell_a_two_speed_host_from_a_steady_one(monkeypatch):
    """Every process reads its cores (measure.core_speed.reading); the run's readings
    together decide: a core slow in a few of many windows changes speed, none is steady."""
    from blockbench.measure.core_speed import (
        FAKE_CORE_SPEED,
        READING_WINDOWS,
        classify,
        reading,
    )

    steady = [{"core": c, "call_s": 7e-4 * (1 + i / 1000), "cpu_share": 1.0}
              for c in (0, 1) for i in range(266)]  # fmt: skip
    slow = [{"core": 1, "call_s": 1.4e-3, "cpu_share": 1.0}]
    # what runs on steady VMs read (0 to 6 slow windows of about 266: stalls), and the
    # two-speed VMs' quietest run on its slower core (19 of 314 windows slow)
    assert classify(steady) == classify(steady + slow * 3) == classify(steady + slow * 6)
    assert classify(steady) == "steady"
    assert classify(steady + slow * 19) == "two-speed"
    preempted = [{"core": 1, "call_s": 1.4e-3, "cpu_share": 0.6}] * 20  # not a speed
    assert classify(steady + preempted) == "steady"
    assert classify([]) == "unknown"
    real = reading(sorted(os.sched_getaffinity(0)))
    assert len(real) == READING_WINDOWS * len(os.sched_getaffinity(0))
    assert all(w["call_s"] > 0 for w in real)
    for made_up in ("steady", "two-speed"):
        monkeypatch.setenv(FAKE_CORE_SPEED, made_up)
        assert classify(reading([0, 1]) * 50) == made_up


# the core readings of every run committed until 6ab2eca, by what their VM did
# (docs/studies.md): each VM's runs, whose readings decide which between-run study judges
# them. tests/data/core_speed.json.gz holds each run's windows, as its records'
# provenance.core_speed gave them, by the run's folder then; the runs are in git history.
STEADY_VMS = ("dev-2core-zen5", "dev-2core-epyc")
TWO_SPEED_VMS = (
    "dev-2core-epyc-rounds",
    "dev-2core-epyc-study",
    "superseded/dev-2core-epyc-study-02b34473",
)


def test_every_committed_run_reads_the_speed_its_vm_kept():
    """The rule, on every committed run that read its cores: the steady VMs' runs, whose
    cores stalled for a window now and then (up to 6 of 226), read steady, so their study
    judges all of them, and every run of the two-speed VMs reads two-speed."""
    from blockbench.measure.core_speed import STEADY, TWO_SPEED, classify

    data = Path(__file__).resolve().parent / "data/core_speed.json.gz"
    by_vm = json.loads(gzip.decompress(data.read_bytes()))
    for folders, expected in ((STEADY_VMS, STEADY), (TWO_SPEED_VMS, TWO_SPEED)):
        read = {
            run: classify(windows)
            for folder in folders
            for run, windows in sorted(by_vm[folder].items())
            if windows
        }
        assert len(read) >= (30 if expected == STEADY else 13)
        assert set(read.values()) == {expected}, read


def test_the_core_speed_probe_visits_every_core_and_restores_the_affinity():
    from blockbench.measure.core_speed import probe

    before = os.sched_getaffinity(0)
    cores = sorted(before)
    windows = probe(cores, 0.2, window_s=0.02)
    assert os.sched_getaffinity(0) == before
    assert {w.core for w in windows} == set(cores)
    assert all(w.call_s > 0 and 0 < w.cpu_share <= 1.05 for w in windows)


def test_a_hand_off_times_a_round_trip_between_two_cores_and_leaves_nothing_behind():
    """measure.core_speed.handoff: what a microsecond jit call pays for XLA's pool thread on
    the other core; its helper thread, pipes and the caller's affinity do not outlive it."""
    from blockbench.measure.core_speed import handoff, handoffs

    before, threads = os.sched_getaffinity(0), threading.active_count()
    fds = len(os.listdir("/proc/self/fd"))
    cores = sorted(before)
    pair = (cores[0], cores[-1])
    assert 0 < handoff(*pair, trips=20) < 0.1
    assert 0 < handoff(cores[0], cores[0], trips=20) < 0.1
    windows = handoffs(pair, 0.05, trips=10)
    assert len(windows.across) == len(windows.within) >= 1
    assert os.sched_getaffinity(0) == before and threading.active_count() == threads
    assert len(os.listdir("/proc/self/fd")) == fds
    with pytest.raises(ValueError, match="trips >= 1"):
        handoff(cores[0], max(cores) + 1)
    with pytest.raises(ValueError, match="trips >= 1"):
        handoff(cores[0], cores[0], trips=0)


def test_a_process_reads_its_hand_off_on_two_cores_and_none_on_one(monkeypatch):
    """measure.core_speed.handoff_reading: what the worker keeps after its samples."""
    from blockbench.measure.core_speed import FAKE_CORE_SPEED, handoff_reading

    cores = sorted(os.sched_getaffinity(0))
    assert handoff_reading(cores[:1]) is None
    if len(cores) > 1:
        real = handoff_reading(cores)
        assert real["cores"] == cores[:2] and real["within_s"] > 0 and 0 < real["across_s"] < 0.1
    monkeypatch.setenv(FAKE_CORE_SPEED, "steady")
    assert handoff_reading([3, 5, 7]) == {"cores": [3, 5], "across_s": 3e-5, "within_s": 5e-6}


def test_the_hand_off_line_gives_its_fast_round_trip_and_its_slow_windows():
    from blockbench.measure.core_speed import Handoffs, Window, describe, summarize

    alone = (5e-6,) * 10
    quiet = Handoffs((0, 1), (30e-6,) * 10, alone)
    assert quiet.describe() == (
        "hand-off between cores 0 and 1: 30.0 µs a round trip when fast, "
        "5.0 µs on core 0 alone; no slow window in 10"
    )
    stretches = Handoffs((0, 1), (30e-6,) * 8 + (60e-6, 66e-6), alone).describe()
    assert stretches.endswith("2 of 10 windows slow, at 2.20x")
    cores = summarize([Window(0, 5e-4, 1.0)])
    lines = describe(cores, 0.0, "steady", stretches)
    assert lines[1] == stretches and lines[-1] == "every core kept its speed"
    assert describe(cores, 0.0, "steady")[1].startswith("steal counted")


@pytest.mark.serial
def test_the_core_speed_tool_prints_a_line_per_core_and_a_conclusion():
    short = ["--seconds", "0.2", "--window-s", "0.02", "--handoff-s", "0.05"]
    out = subprocess.run(
        [sys.executable, "-m", "blockbench", "core-speed", *short],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    cores = sorted(os.sched_getaffinity(0))
    assert [line.split(":")[0] for line in out[: len(cores)]] == [f"core {c}" for c in cores]
    # a hand-off needs two cores
    assert out[len(cores) : -2] == [
        line for line in out if len(cores) > 1 and line.startswith("hand-off between cores")
    ]
    assert out[-2].startswith("steal counted")
    assert out[-1] == "every core kept its speed" or out[-1].startswith("cores change speed")
