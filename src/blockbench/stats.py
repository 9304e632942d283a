"""Summary statistics of one phase's samples (pyperf's split: computing, not collecting)."""

import math
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


def median_ci(samples: np.ndarray | list[float]) -> tuple[float | None, float | None]:
    """Distribution-free 95% CI of the median from order statistics (scipy's quantile test).

    Timing samples are skewed (preemption only ever adds time), so a normal-theory interval
    would be wrong; with too few samples a bound does not exist and is returned as None.
    """
    from scipy import stats as sps  # 1 s to import: only the worker process needs it

    x = np.asarray(samples, dtype=float)
    if x.size < 2:
        return None, None
    ci = sps.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(CONFIDENCE)
    low, high = float(ci.low), float(ci.high)
    return (low if math.isfinite(low) else None, high if math.isfinite(high) else None)


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
