"""How busy the rest of the host was while a cell measured: other processes' CPU time
around the cell, read by the parent (which does not time anything itself).

The worker's per-sample disturbance (blockbench.measure.disturbance) sees what ran on the
cell's own cores; this sees the whole host, processes that started and ended included.
"""

import os
import resource
import time
from typing import Any

import psutil

# Other processes' CPU use during a cell above which the cell is flagged (in cores).
BUSY_HOST_CORES = 0.25


def process_cpu() -> dict[int, tuple[float, float]]:
    """Every other process's (start time, CPU seconds), the children it has reaped included
    (a solver that ran and ended between two readings is in its parent's)."""
    out = {}
    for proc in psutil.process_iter(["create_time", "cpu_times"]):
        t = proc.info["cpu_times"]
        if proc.pid == os.getpid() or t is None:
            continue
        cpu = t.user + t.system + getattr(t, "children_user", 0.0) + t.children_system
        out[proc.pid] = (proc.info["create_time"], cpu)
    return out


def ancestors() -> set[int]:
    """This process's ancestors below init: the workflow engine that started the cell."""
    out = set()
    try:
        for parent in psutil.Process().parents():
            if parent.pid > 1:
                out.add(parent.pid)
    except psutil.Error:
        pass
    return out


def cpu_used(
    before: dict[int, tuple[float, float]], after: dict[int, tuple[float, float]]
) -> dict[int, float]:
    """CPU seconds each process used between two readings (all of it for a new one)."""
    used = {}
    for pid, (start, cpu) in after.items():
        was = before.get(pid)
        used[pid] = cpu - was[1] if was and was[0] == start else cpu
    return used


class HostLoad:
    """How much CPU other processes used, on the cell's own cores, while it ran: a neighbour
    (or a hypervisor stealing time) inflates timings, and a reader must be told. The load
    average cannot say it, since the cell's own threads already keep it at the core count.

    Two independent readings: the kernel's per-CPU busy time on the cell's cores less the
    cell's own CPU (`other_cores`), and the sum of every other process's own CPU time
    (`other_processes_cores`, any core); of the latter, what the workflow engine that
    started the cell used (`orchestrator_cores`: Snakemake and the solver it runs)."""

    def __init__(self, cores: tuple[int, ...]) -> None:
        self.cores = cores
        self.processes = process_cpu()
        self.ancestors = ancestors()
        self.start = time.monotonic()
        self.cpu = self._times()
        self.own = self._own_cpu()
        self.load = os.getloadavg() if hasattr(os, "getloadavg") else None

    def _times(self) -> list[Any]:
        per_cpu = psutil.cpu_times(percpu=True)
        return [per_cpu[c] for c in self.cores if c < len(per_cpu)] or per_cpu

    @staticmethod
    def _own_cpu() -> float:
        whose = (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, whose))

    @staticmethod
    def _busy(times: list[Any]) -> float:
        """Busy CPU seconds (guest time is already inside user and nice)."""
        fields = ("user", "nice", "system", "irq", "softirq")
        return sum(getattr(t, f, 0.0) for t in times for f in fields)

    @staticmethod
    def _steal(times: list[Any]) -> float:
        return sum(getattr(t, "steal", 0.0) for t in times)

    def finish(self) -> dict[str, Any]:
        wall = max(time.monotonic() - self.start, 1e-9)
        cpu = self._times()
        own = self._own_cpu() - self.own
        other = max(0.0, self._busy(cpu) - self._busy(self.cpu) - own) / wall
        used = cpu_used(self.processes, process_cpu())
        return {
            "other_cores": round(other, 3),
            "other_processes_cores": round(sum(used.values()) / wall, 3),
            "orchestrator_cores": round(
                sum(c for pid, c in used.items() if pid in self.ancestors) / wall, 3
            ),
            "steal_cores": round((self._steal(cpu) - self._steal(self.cpu)) / wall, 3),
            "load_average_start": list(self.load) if self.load else None,
            "load_average_end": list(os.getloadavg()) if self.load else None,
        }


def load_warnings(load: dict[str, Any]) -> list[str]:
    out = []
    if load["other_cores"] > BUSY_HOST_CORES:
        out.append(
            f"busy host: other processes used {load['other_cores']:.2f} cores on average "
            "during the cell"
        )
    if load["steal_cores"] > BUSY_HOST_CORES:
        out.append(f"the hypervisor stole {load['steal_cores']:.2f} cores during the cell")
    return out
