"""Where a worker process's wall time went, from the stamps its record keeps (`timeline`).

Each process stamps the moments between its stages (the parent: `job_start`, `locked`,
`worker_exit`; the worker: `imported`, `device`, ..., `sampled`). A run's report sums these
spans over its processes, so a reader sees what a minute more or less was spent on, and what
a change to how a process starts saved.
"""

from collections.abc import Mapping
from typing import Any

# Each component, in the order a process meets them: its name in the report, and the pairs
# of stamps whose spans it sums. The time between one process's end and the next one's start
# (Snakemake, the rounds checkpoint) belongs to no process: the report reads it from the order.
COMPONENTS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "start": (
        "the job's start: Python, the parent's imports and lock",
        (("job_start", "locked"),),
    ),
    "worker": ("the worker's start and imports (NumPy, JAX)", (("locked", "measure"),)),
    "backend": (
        "the backend's start and warm-up jit (JAX cells)",
        (("measure", "device"), ("provenance", "warmed")),
    ),
    "host": (
        "provenance and the core-speed probe",
        (("device", "provenance"), ("warmed", "core_speed")),
    ),
    "before": (
        "inputs, and the check that opens a steady-only plan (its call warms the phase)",
        (("core_speed", "sampling"),),
    ),
    "untimed": (
        "untimed work inside sampling: warm-up, calibration, probes, the block after a dispatch",
        (("sampling", "sampled"),),  # less the timed samples
    ),
    "timed": ("timed samples", ()),
    "after": (
        "after the samples: the check, the hand-off probe, the record written",
        (("sampled", "worker_exit"),),
    ),
}


def timed_s(phases: Mapping[str, Any]) -> float:
    """Seconds inside timed calls: every sample of every phase, times its loops."""
    return float(sum(sum(p.get("samples_s") or []) * p.get("loops", 1) for p in phases.values()))


def components(timeline: Mapping[str, float], timed: float) -> dict[str, float | None]:
    """Seconds per component of one process (None where a stamp is missing: a process that
    timed out, crashed, or was recorded before the stamp was kept)."""
    out: dict[str, float | None] = {}
    for key, (_, spans) in COMPONENTS.items():
        if key == "timed":  # from the samples themselves: a timed-out process's too
            out[key] = timed
            continue
        if not all(a in timeline and b in timeline for a, b in spans):
            out[key] = None
            continue
        out[key] = sum(timeline[b] - timeline[a] for a, b in spans)
    if out["untimed"] is not None:
        out["untimed"] = max(0.0, out["untimed"] - timed)
    return out
