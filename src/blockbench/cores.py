"""The CPUs a cell runs on, and thread settings that give NumPy and XLA the same ones.

XLA's CPU backend sizes its thread pool from the process's CPU affinity; NumPy's BLAS sizes
its pool from OMP/OPENBLAS/MKL_NUM_THREADS, which Snakemake sets to the rule's `threads`
(1 by default). Compared that way, NumPy runs on one core and XLA on all of them. So the
parent picks the cores (every core the cell may use: its affinity, which a SLURM job step
or `taskset` bounds; or the first `threads` of them), the worker pins itself to exactly
those, and every thread variable names the same number.
"""

import os

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
