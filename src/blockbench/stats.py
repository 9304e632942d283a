"""Summary statistics of one phase's samples (pyperf's split: computing, not collecting)."""

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

CONFIDENCE = 0.95


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
