"""Helpers every workload's correctness check shares."""

from __future__ import annotations

from blockbench.workloads.declare import deferred

np = deferred("numpy")


def max_rel_err(out: object, ref: np.ndarray) -> float:
    """Normwise relative error: robust where reference entries are near zero."""
    got = np.asarray(out, dtype=np.float64)
    if got.shape != ref.shape:
        raise ValueError(f"output shape {got.shape} != reference shape {ref.shape}")
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(got - ref)) / scale)
