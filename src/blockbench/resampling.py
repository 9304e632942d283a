"""Uncertainty of a cell's time: a hierarchical bootstrap over worker processes and samples.

Noise lives at two levels: between the samples of one process, and between processes
(thread placement, allocator state, a neighbour on the machine; Kalibera and Jones 2013).
A cell's estimate is the median of its processes' medians; a bootstrap replicate picks the
processes with replacement, resamples each picked process's samples with replacement, and
takes the median of the resampled medians. Replicates are seeded from the cell, so the
tables and the claims draw the same ones, run after run.
"""

import hashlib
from collections.abc import Sequence

import numpy as np

REPLICATES = 2000
CONFIDENCE = 0.95


def estimate(processes: Sequence[Sequence[float]]) -> float:
    """The median of the processes' medians: each process counts once."""
    return float(np.median([np.median(p) for p in processes]))


def seed_of(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")


def replicates(processes: Sequence[Sequence[float]], key: str, n: int = REPLICATES) -> np.ndarray:
    """`n` bootstrap replicates of `estimate`, reproducible for a given `key`."""
    rng = np.random.default_rng(seed_of(key))
    groups = [np.asarray(p, dtype=float) for p in processes]
    r = len(groups)
    picks = rng.integers(0, r, size=(n, r))  # which process fills each slot
    medians = np.empty((n, r))
    for i, x in enumerate(groups):
        slots = picks == i
        count = int(slots.sum())
        if count:
            draws = x[rng.integers(0, x.size, size=(count, x.size))]
            medians[slots] = np.median(draws, axis=1)
    return np.median(medians, axis=1)


def interval(values: np.ndarray) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (NaN-free by construction)."""
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def log_slope(x: Sequence[float], ys: np.ndarray) -> np.ndarray:
    """Least-squares slope of log(y) against log(x), for every row of `ys` at once
    (ys: replicates x points): the exponent of a power law, with its bootstrap spread."""
    lx = np.log(np.asarray(x, dtype=float))
    lx = lx - lx.mean()
    ly = np.log(ys)
    ly = ly - ly.mean(axis=-1, keepdims=True)
    return (ly @ lx) / (lx @ lx)
