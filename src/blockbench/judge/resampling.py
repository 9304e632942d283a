"""Uncertainty of cell times, and of anything computed from them, as bootstrap replicates.

Noise lives at two levels: between the samples of one worker process, and between processes
(thread placement, allocator state, a neighbour on the machine; Kalibera and Jones 2013).
Each process's median already carries its own sampling noise, so the spread of a cell's
process medians measures both levels at once. With the few processes a run affords (3 by
default), resampling the processes themselves cannot reach 95%: a percentile bootstrap over
3 processes gives about the range of their medians, which covers the true median only
1 - 2 * (1/2)^3 = 75% of the time. So the process level is modelled instead: log process
medians are taken as normal, a cell's time is their geometric mean, and its uncertainty is
a Student t with R - 1 degrees of freedom. Replicates are drawn from that t (a parametric
bootstrap), so sums, ratios and fitted slopes of several cells get their CIs by being
computed on replicates. With a single process only the within-process level is known, and
the replicates resample that process's samples (and understate the uncertainty).

Replicates are seeded from what they describe, so the tables and the claims draw the same.
"""

import hashlib
from collections.abc import Sequence

import numpy as np

from blockbench.records.spec import CONFIDENCE

REPLICATES = 4000
# The method in words, for every reader-facing text (the claims report's legend, the docs):
# built from the constants above so that the sentence cannot drift from the code.
METHOD = (
    "a cell's value is the geometric mean of the medians of the worker processes that "
    "measured it; its interval, and that of any ratio, sum or fitted exponent of cells, is "
    f"the central {CONFIDENCE:.0%} of {REPLICATES} draws of a Student t on the logs with "
    "one degree of freedom fewer than the processes (with a single process: of a bootstrap "
    "over that process's samples)"
)


def _rng(key: str) -> np.random.Generator:
    digest = hashlib.sha256(key.encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def geometric_mean(values: Sequence[float]) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=float)))))


def estimate(processes: Sequence[Sequence[float]]) -> float:
    """A cell's time: the geometric mean of its processes' medians (each process counts once)."""
    return geometric_mean([np.median(p) for p in processes])


def of_processes(values: Sequence[float], key: str, n: int = REPLICATES) -> np.ndarray:
    """Replicates of the geometric mean of one value per process (R >= 2): Student t on the
    logs with R - 1 degrees of freedom."""
    logs = np.log(np.asarray(values, dtype=float))
    r = logs.size
    if r < 2:
        raise ValueError("a process-level interval needs at least 2 processes")
    se = logs.std(ddof=1) / np.sqrt(r)
    draws = logs.mean() + se * _rng(key).standard_t(r - 1, size=n)
    return np.exp(np.clip(draws, -700, 700))  # t with 1 df has draws that overflow exp


def of_samples(samples: Sequence[float], key: str, n: int = REPLICATES) -> np.ndarray:
    """Replicates of one process's median, by resampling its samples (within-process only)."""
    x = np.asarray(samples, dtype=float)
    draws = x[_rng(key).integers(0, x.size, size=(n, x.size))]
    return np.median(draws, axis=1)


def replicates(processes: Sequence[Sequence[float]], key: str, n: int = REPLICATES) -> np.ndarray:
    """Replicates of `estimate(processes)`."""
    if len(processes) == 1:
        return of_samples(processes[0], key, n)
    return of_processes([np.median(p) for p in processes], key, n)


def interval(values: np.ndarray) -> tuple[float, float]:
    """Percentile interval of replicates."""
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
