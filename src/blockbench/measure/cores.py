"""The CPUs a cell runs on, and thread settings that give NumPy and XLA the same ones.

XLA's CPU backend sizes its thread pool from the process's CPU affinity; NumPy's BLAS sizes
its pool from OMP/OPENBLAS/MKL_NUM_THREADS, which Snakemake sets to the rule's `threads`
(1 by default). Compared that way, NumPy runs on one core and XLA on all of them. So the
parent picks the cores (every core the cell may use: its affinity, which a SLURM job step
or `taskset` bounds; or the first `threads` of them), the worker pins itself to exactly
those, and every thread variable names the same number.
"""

import os
import threading

# Every variable through which a BLAS or OpenMP runtime (or Snakemake) sets a pool size.
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def allowed() -> list[int]:
    """The CPUs this process may run on (all of them where affinity is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def choose(threads: int | None) -> tuple[int, ...]:
    """All allowed CPUs, or the first `threads` of them (never more than are allowed:
    provenance then shows the request next to what was granted)."""
    cores = allowed()
    return tuple(cores[:threads] if threads else cores)


def thread_env(n: int) -> dict[str, str]:
    return dict.fromkeys(THREAD_VARS, str(n))


def pin(cores: tuple[int, ...]) -> None:
    """Bind this process (and the pools it starts later) to `cores`, where the OS can."""
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)


def spare(cores: tuple[int, ...]) -> tuple[int, ...]:
    """Cores this process may use that are not the cell's (where its measuring thread can go)."""
    return tuple(c for c in allowed() if c not in cores)


def thread_ids(pid: int | str = "self") -> list[int]:
    """A process's thread ids, from Linux's /proc/<pid>/task ([] where it cannot be read:
    not Linux, or the process ended). The one place the task list is read."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _thread_cores() -> list[int]:
    """The cores this process's other threads may run on (XLA's pool among them)."""
    me = threading.get_native_id()
    out: set[int] = set()
    for tid in thread_ids():
        if tid != me:
            try:
                out |= os.sched_getaffinity(tid)
            except OSError:
                continue
    return sorted(out)


def separate_measuring_thread(
    cell_cores: tuple[int, ...], spare_cores: tuple[int, ...]
) -> dict[str, object]:
    """Move the measuring (Python) thread of a JAX cell to a spare core outside the cell's,
    where the job has one, so that XLA's pool computes on the cell's cores with nothing
    else on them and never preempts the thread that times the next dispatch
    (docs/measuring-traps.md). The pool keeps its cores, so NumPy and XLA still compute on
    the same number.
    Called once the backend has started its threads: they keep the affinity they were born
    with, and `sched_setaffinity(0)` moves the calling thread alone. Returns what was done."""
    if not spare_cores or not hasattr(os, "sched_setaffinity"):
        return {
            "separate": False,
            "measuring_thread_cores": list(cell_cores),
            "pool_cores": _thread_cores() if hasattr(os, "sched_getaffinity") else None,
            "why": "no core outside the cell's: the measuring thread shares them with the pool",
        }
    os.sched_setaffinity(0, {spare_cores[0]})
    return {
        "separate": True,
        "measuring_thread_cores": [spare_cores[0]],
        "pool_cores": _thread_cores(),
        "why": "",
    }
