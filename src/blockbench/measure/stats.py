"""Summary statistics of one phase's samples (pyperf's split: computing, not collecting)."""

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from blockbench.measure.disturbance import OUTSIDE
from blockbench.records.spec import CONFIDENCE


@lru_cache(maxsize=4096)
def _median_ranks(n: int) -> int:
    """How many order statistics lie outside the median's CI on each side: the largest k
    with P(Binomial(n, 1/2) < k) <= (1 - CONFIDENCE) / 2, the classic distribution-free
    interval (the one scipy.stats.quantile_test gives; computed here because importing
    scipy.stats costs every worker process half a second before its first sample)."""
    log_half_n = n * math.log(0.5)
    cdf, k = 0.0, 0
    while k < n:
        log_pmf = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        pmf = math.exp(log_pmf + log_half_n)
        if cdf + pmf > (1 - CONFIDENCE) / 2:
            break
        cdf += pmf
        k += 1
    return k


def median_ci(samples: np.ndarray | list[float]) -> tuple[float | None, float | None]:
    """Distribution-free 95% CI of the median from order statistics.

    Timing samples are skewed (preemption only ever adds time), so a normal-theory interval
    would be wrong; with too few samples a bound does not exist and is returned as None.
    """
    x = np.sort(np.asarray(samples, dtype=float))
    k = _median_ranks(x.size) if x.size >= 2 else 0
    if k == 0:
        return None, None
    return float(x[k - 1]), float(x[x.size - k])


def relative_ci_halfwidth(samples: np.ndarray | list[float]) -> float:
    """Largest distance from the median to a CI bound, relative to the median (inf if unknown)."""
    low, high = median_ci(samples)
    med = float(np.median(samples))
    if low is None or high is None or med <= 0:
        return math.inf
    return max(med - low, high - med) / med


@dataclass(frozen=True)
class Summary:
    median_s: float
    min_s: float
    max_s: float
    mean_s: float
    std_s: float
    iqr_s: float
    ci95_s: tuple[float | None, float | None]
    n: int

    def as_dict(self) -> dict[str, object]:
        return {
            "median_s": self.median_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "mean_s": self.mean_s,
            "std_s": self.std_s,
            "iqr_s": self.iqr_s,
            "ci95_s": list(self.ci95_s),
            "n": self.n,
        }


def summarize(samples: list[float]) -> Summary:
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        raise ValueError("no samples to summarize")
    return Summary(
        median_s=float(np.median(x)),
        min_s=float(x.min()),
        max_s=float(x.max()),
        mean_s=float(x.mean()),
        std_s=float(x.std(ddof=1)) if x.size > 1 else 0.0,
        iqr_s=float(np.subtract(*np.percentile(x, [75, 25]))),
        ci95_s=median_ci(x),
        n=int(x.size),
    )


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson score interval (at CONFIDENCE) of a binomial proportion k/n: unlike the
    normal approximation it stays inside [0, 1] and is not empty at k = 0 or k = n."""
    if n == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# A sample slower than this multiple of the phase's fast mode (its 10th percentile) is in a
# slow mode: a preempted dispatch takes milliseconds where a clean one takes tens of us.
SLOW_FACTOR = 2.0
# Share of samples in the slow mode from which a phase is called bimodal or heavy-tailed.
SLOW_SHARE = 0.05


def slow_mode(samples: list[float]) -> dict[str, object] | None:
    """The fraction of samples in a slow mode, with its CI; None with too few samples."""
    x = np.asarray(samples, dtype=float)
    if x.size < 10:
        return None
    threshold = SLOW_FACTOR * float(np.percentile(x, 10))
    slow = x[x > threshold]
    low, high = wilson(int(slow.size), int(x.size))
    return {
        "fraction": slow.size / x.size,
        "ci": [low, high],
        "n": int(slow.size),
        "threshold_s": threshold,
        "median_s": float(np.median(slow)) if slow.size else None,
    }


# Undisturbed samples stand for the phase when there are at least this many of them and at
# least this share of all; otherwise every sample does, and the record says so.
MIN_UNDISTURBED = 2
MIN_UNDISTURBED_SHARE = 0.25


def excluded(cause: str) -> bool:
    """Whether a sample's disturbance takes it out of the statistics: only one from outside
    (another process held the cell's cores: the machine's time, not the operation's). A
    sample disturbed from inside, where the measuring thread waited for a core its own pool
    held (on few cores XLA's pool preempts the thread that dispatches), is kept: a user
    timing the operation on that machine sees it too. Both shares are recorded and shown
    beside the statistics, and the median of the samples neither disturbed (`clean_median`)
    as a diagnostic."""
    return cause == OUTSIDE


def kept_samples(phase: dict[str, object]) -> list[float]:
    """The samples a phase's statistics stand on: its undisturbed ones where the record kept
    those (`kept: undisturbed`), else all of them (records without the kernel's account of
    each sample, from hosts or versions without it, keep all)."""
    samples = list(phase["samples_s"])  # type: ignore[arg-type]
    causes = (phase.get("disturbance") or {}).get("cause")  # type: ignore[union-attr]
    if phase.get("kept") != "undisturbed" or not causes:
        return samples
    return [s for s, cause in zip(samples, causes, strict=True) if not excluded(cause)]


def choose_kept(causes: list[str]) -> str:
    clean = sum(1 for c in causes if not excluded(c))
    enough = clean >= MIN_UNDISTURBED and clean >= MIN_UNDISTURBED_SHARE * len(causes)
    return "undisturbed" if causes and enough else "all"
