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
preempts the Python thread that dispatches the next call; docs/measuring-traps.md).
Where the kernel does not expose these files (not Linux, no CONFIG_SCHED_INFO) the probe
reports nothing and every sample counts as undisturbed, which the record says.
"""

import os
import resource
import threading
import time
from dataclasses import dataclass

from blockbench.measure.cores import thread_ids

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
    main_wait_ns: int
    pool_wait_ns: int
    main_nivcsw: int
    other_exec_ns: int


class _Tasks:
    """Open schedstat files of a set of tasks, read without reopening (2-3 us each); with
    `where`, also each task's stat file, for the CPU it last ran on."""

    def __init__(self, where: bool = False) -> None:
        self.where = where
        self.fds: dict[tuple[int, int], tuple[int, int | None]] = {}

    def keep(self, keys: set[tuple[int, int]]) -> None:
        for key in set(self.fds) - keys:
            self._close(key)
        for key in keys - set(self.fds):
            base = f"{PROC}/{key[0]}/task/{key[1]}"
            try:
                sched = os.open(f"{base}/schedstat", os.O_RDONLY)
                stat = os.open(f"{base}/stat", os.O_RDONLY) if self.where else None
            except OSError:
                continue
            self.fds[key] = (sched, stat)

    def _close(self, key: tuple[int, int]) -> None:
        for fd in self.fds.pop(key):
            if fd is not None:
                os.close(fd)

    def read(self) -> dict[tuple[int, int], tuple[int, int, int]]:
        """(ns on a CPU, ns waiting, the CPU it last ran on or -1) per live task."""
        out = {}
        for key, (sched, stat) in list(self.fds.items()):
            try:
                ran, waited = _schedstat(sched)
                cpu = _last_cpu(stat) if stat is not None else -1
            except (OSError, ValueError, IndexError):  # the task ended
                self._close(key)
                continue
            out[key] = (ran, waited, cpu)
        return out

    def close(self) -> None:
        self.keep(set())


def _last_cpu(fd: int) -> int:
    """Field 39 of /proc/<pid>/task/<tid>/stat: the CPU the task last ran on (fields are
    counted after the command name, which may itself hold spaces and parentheses)."""
    text = os.pread(fd, 1024, 0)
    return int(text[text.rindex(b")") + 2 :].split()[36])


class Probe:
    """Reads the counters; `classify` turns two readings into a sample's verdict."""

    def __init__(self, cores: tuple[int, ...]) -> None:
        self.cores = frozenset(cores or range(os.cpu_count() or 1))
        self.pid = os.getpid()
        self.main_tid = threading.get_native_id()
        self.own = _Tasks()
        self.others = _Tasks(where=True)
        self.available = os.path.exists(f"{PROC}/{self.pid}/task/{self.main_tid}/schedstat")
        self._refreshed = -1.0
        # Other tasks' CPU time on the cell's cores, summed from reading to reading: a task's
        # time since the last reading counts where it last ran on one of the cell's cores
        # (a task first seen counts from then on: its earlier CPU is not ours to see).
        self._last_ran: dict[tuple[int, int], int] = {}
        self._other_total = 0

    def _refresh(self) -> None:
        own, others = set(), set()
        for entry in os.listdir(PROC):
            if not entry.isdigit():
                continue
            pid = int(entry)
            for tid in thread_ids(pid):
                if pid == self.pid:
                    own.add((pid, tid))
                elif self._may_share(tid):
                    others.add((pid, tid))
        self.own.keep(own)
        self.others.keep(others)
        self._last_ran = {k: v for k, v in self._last_ran.items() if k in others}
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
        main = own.get((self.pid, self.main_tid), (0, 0, -1))
        others = self.others.read()
        for key, (ran, _, cpu) in others.items():
            before = self._last_ran.get(key, ran)
            self._last_ran[key] = ran
            if cpu in self.cores:
                self._other_total += ran - before
        return Reading(
            at_ns=time.perf_counter_ns(),
            main_wait_ns=main[1],
            pool_wait_ns=sum(wait for _, wait, _ in own.values()) - main[1],
            main_nivcsw=resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw,
            other_exec_ns=self._other_total,
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
