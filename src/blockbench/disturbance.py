"""What the kernel says happened around each sample: was it disturbed, and by whom?

A timing sample is only as good as the CPU time its threads got. Around every sample the
sampler reads, from the kernel's per-thread scheduler statistics (nanoseconds,
`/proc/<pid>/task/<tid>/schedstat`):

- how long the cell's own threads waited runnable but not running (run-queue delay), the
  measuring Python thread apart from the rest (XLA's or BLAS's pool threads);
- the measuring thread's involuntary context switches (`getrusage(RUSAGE_THREAD)`);
- how much CPU every other task that may run on the cell's cores used meanwhile.

A sample is *disturbed from outside* when another process ran on the cell's cores for more
than a sliver of it, and *disturbed from inside* when, with no such neighbour, the measuring
thread still waited for a CPU: its own pool threads held the cores (on few cores, XLA's pool
preempts the Python thread that dispatches the next call; MEASURING.md, traps 16 and 17).
Where the kernel does not expose these files (not Linux, no CONFIG_SCHED_INFO) the probe
reports nothing and every sample counts as undisturbed, which the record says.
"""

import os
import resource
import threading
import time
from dataclasses import dataclass

PROC = "/proc"
# Other tasks' CPU on the cell's cores above which a sample is disturbed from outside:
# the larger of an absolute floor (kernel housekeeping threads run for a few microseconds
# now and then) and a share of the sample's CPU capacity (span x cores).
OUTSIDE_FLOOR_NS = 100_000
OUTSIDE_SHARE = 0.05
# The measuring thread's run-queue delay above which a sample is disturbed from inside.
INSIDE_FLOOR_NS = 20_000
INSIDE_SHARE = 0.5
# How often the list of other tasks is read anew (a new process is counted from then on).
REFRESH_S = 0.5

OUTSIDE, INSIDE = "outside", "inside"


def _schedstat(fd: int) -> tuple[int, int]:
    """(ns on a CPU, ns waiting on a run queue) of one task."""
    fields = os.pread(fd, 96, 0).split()
    return int(fields[0]), int(fields[1])


@dataclass(frozen=True)
class Reading:
    at_ns: int
    own_exec_ns: int
    main_wait_ns: int
    pool_wait_ns: int
    main_nivcsw: int
    other_exec_ns: int


class _Tasks:
    """Open schedstat files of a set of tasks, read without reopening (2-3 us each)."""

    def __init__(self) -> None:
        self.fds: dict[tuple[int, int], int] = {}
        self.last: dict[tuple[int, int], tuple[int, int]] = {}

    def keep(self, keys: set[tuple[int, int]]) -> None:
        for key in set(self.fds) - keys:
            os.close(self.fds.pop(key))
        for key in keys - set(self.fds):
            try:
                self.fds[key] = os.open(f"{PROC}/{key[0]}/task/{key[1]}/schedstat", os.O_RDONLY)
            except OSError:
                continue

    def read(self) -> dict[tuple[int, int], tuple[int, int]]:
        out = {}
        for key, fd in list(self.fds.items()):
            try:
                out[key] = _schedstat(fd)
            except (OSError, ValueError, IndexError):  # the task ended
                os.close(self.fds.pop(key))
        return out

    def close(self) -> None:
        self.keep(set())


class Probe:
    """Reads the counters; `classify` turns two readings into a sample's verdict."""

    def __init__(self, cores: tuple[int, ...]) -> None:
        self.cores = frozenset(cores or range(os.cpu_count() or 1))
        self.pid = os.getpid()
        self.main_tid = threading.get_native_id()
        self.own = _Tasks()
        self.others = _Tasks()
        self.available = os.path.exists(f"{PROC}/{self.pid}/task/{self.main_tid}/schedstat")
        self._refreshed = -1.0
        # A task first seen in a reading counts from there: its earlier CPU is not ours to see.
        self._other_base: dict[tuple[int, int], int] = {}

    def _refresh(self) -> None:
        own, others = set(), set()
        for entry in os.listdir(PROC):
            if not entry.isdigit():
                continue
            pid = int(entry)
            try:
                tids = [int(t) for t in os.listdir(f"{PROC}/{pid}/task")]
            except OSError:
                continue
            for tid in tids:
                if pid == self.pid:
                    own.add((pid, tid))
                elif self._may_share(tid):
                    others.add((pid, tid))
        self.own.keep(own)
        self.others.keep(others)
        self._refreshed = time.monotonic()

    def _may_share(self, tid: int) -> bool:
        try:
            return bool(os.sched_getaffinity(tid) & self.cores)
        except OSError:
            return False

    def read(self) -> Reading | None:
        if not self.available:
            return None
        if time.monotonic() - self._refreshed > REFRESH_S:
            self._refresh()
        own = self.own.read()
        main = own.get((self.pid, self.main_tid), (0, 0))
        others = self.others.read()
        other_exec = 0
        for key, (ran, _) in others.items():
            other_exec += ran - self._other_base.setdefault(key, ran)
        return Reading(
            at_ns=time.perf_counter_ns(),
            own_exec_ns=sum(ran for ran, _ in own.values()),
            main_wait_ns=main[1],
            pool_wait_ns=sum(wait for _, wait in own.values()) - main[1],
            main_nivcsw=resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw,
            other_exec_ns=other_exec,
        )

    def close(self) -> None:
        self.own.close()
        self.others.close()


@dataclass(frozen=True)
class Disturbance:
    """One sample's kernel counters and what they mean."""

    span_ns: int
    main_wait_ns: int
    pool_wait_ns: int
    main_nivcsw: int
    other_cpu_ns: int
    cause: str  # "", OUTSIDE or INSIDE


def between(a: Reading | None, b: Reading | None, n_cores: int) -> Disturbance | None:
    """The sample between two readings. Tasks that ended in between are not subtracted
    (their CPU would make `other_cpu_ns` negative), so differences are clamped at zero."""
    if a is None or b is None:
        return None
    span = max(b.at_ns - a.at_ns, 1)
    main_wait = max(b.main_wait_ns - a.main_wait_ns, 0)
    other = max(b.other_exec_ns - a.other_exec_ns, 0)
    return Disturbance(
        span_ns=span,
        main_wait_ns=main_wait,
        pool_wait_ns=max(b.pool_wait_ns - a.pool_wait_ns, 0),
        main_nivcsw=max(b.main_nivcsw - a.main_nivcsw, 0),
        other_cpu_ns=other,
        cause=classify(span, main_wait, other, n_cores),
    )


def classify(span_ns: int, main_wait_ns: int, other_cpu_ns: int, n_cores: int) -> str:
    if other_cpu_ns > max(OUTSIDE_FLOOR_NS, OUTSIDE_SHARE * span_ns * max(n_cores, 1)):
        return OUTSIDE
    if main_wait_ns > max(INSIDE_FLOOR_NS, INSIDE_SHARE * span_ns):
        return INSIDE
    return ""


def combine(parts: list["Disturbance | None"], n_cores: int = 1) -> "Disturbance | None":
    """One sample made of several timed regions (a loop of compiles): counters add up, and
    the sample is disturbed if any of its regions was."""
    known = [p for p in parts if p is not None]
    if not known:
        return None
    if len(known) == 1:
        return known[0]
    causes = {p.cause for p in known}
    return Disturbance(
        span_ns=sum(p.span_ns for p in known),
        main_wait_ns=sum(p.main_wait_ns for p in known),
        pool_wait_ns=sum(p.pool_wait_ns for p in known),
        main_nivcsw=sum(p.main_nivcsw for p in known),
        other_cpu_ns=sum(p.other_cpu_ns for p in known),
        cause=OUTSIDE if OUTSIDE in causes else INSIDE if INSIDE in causes else "",
    )
