"""Between-run variance: estimating it from several runs, adding it to one run's interval,
and pooling runs into one estimate.

A run's interval describes its own worker processes. Runs of one grid on one kind of
machine, made at different times, differ by more than that (the machine's state on another
day: Kalibera and Jones, "Rigorous benchmarking in reasonable time", 2013, variance at each
level of repetition). The model is two-level: run i estimates y_i = mu + b_i + e_i, with
b_i ~ N(0, tau^2) between runs and e_i ~ N(0, s_i^2) within the run (s_i its standard
error, known to nu_i degrees of freedom). Everything is on the scale where that model is
plausible: the log of a ratio, or an exponent as it is.

- `reml` estimates tau^2 (restricted maximum likelihood, which is unbiased where the
  maximum likelihood is not for few runs) and its degrees of freedom (Satterthwaite, from
  the REML information).
- `widen` adds a stored tau^2 to one run's own variance and combines the degrees of freedom
  of the two (Welch-Satterthwaite, as the GUM does for a measured and a stored
  uncertainty).
- `pool` is the random-effects estimate of several runs with the modified Knapp-Hartung
  interval (Hartung and Knapp 2001; Roever et al. 2015: the scale factor is at least 1),
  which holds its level with as few as 3 or 4 runs where the plain normal interval does
  not; with Cochran's Q, I^2 and tau beside it.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy import optimize, stats

from blockbench.records.spec import CONFIDENCE


@dataclass(frozen=True)
class Between:
    """A between-run variance on the analysis scale, with its degrees of freedom."""

    tau2: float
    df: float
    runs: int

    @property
    def tau(self) -> float:
        return math.sqrt(self.tau2)


@dataclass(frozen=True)
class Pooled:
    """Several runs as one estimate: random-effects mean and its interval, heterogeneity."""

    estimate: float
    low: float
    high: float
    runs: int
    q: float  # Cochran's Q (fixed-effect weights)
    i2: float  # share of the spread not explained by the runs' own errors, 0..1
    tau2: float


def _quantile(df: float) -> float:
    level = 0.5 + CONFIDENCE / 2
    return float(stats.t.ppf(level, df)) if math.isfinite(df) else NormalDist().inv_cdf(level)


def _restricted_nll(tau2: float, y: np.ndarray, s2: np.ndarray) -> float:
    v = s2 + tau2
    w = 1 / v
    mu = np.sum(w * y) / np.sum(w)
    return 0.5 * float(np.sum(np.log(v)) + math.log(np.sum(w)) + np.sum(w * (y - mu) ** 2))


def reml(y: Sequence[float], se: Sequence[float]) -> Between:
    """tau^2 of the runs' estimates `y` with standard errors `se` (at least 2 runs).

    Its degrees of freedom: 2 tau^4 / Var(tau^2), the variance from the REML information
    1/2 [sum w^2 - 2 sum w^3 / sum w + (sum w^2 / sum w)^2], bounded by runs - 1 (what a
    variance of that many values can have) and below by 1: a small tau^2 found by chance
    has a Satterthwaite df near 0, whose t quantile is unbounded, while simulated studies of
    4 runs keep 95-98% coverage with the bound (tests/test_between_run.py). 0 where tau^2 is
    0: it then adds nothing.
    """
    y, s2 = np.asarray(y, float), np.asarray(se, float) ** 2
    k = y.size
    if k < 2:
        raise ValueError("a between-run variance needs at least 2 runs")
    top = float(np.var(y, ddof=1)) * 10 + float(s2.max()) + 1e-12
    found = optimize.minimize_scalar(
        _restricted_nll, bounds=(0.0, top), args=(y, s2), method="bounded"
    )
    tau2 = float(found.x)
    if _restricted_nll(0.0, y, s2) <= found.fun:
        tau2 = 0.0
    if tau2 <= 0:
        return Between(0.0, 0.0, k)
    w = 1 / (s2 + tau2)
    info = 0.5 * (np.sum(w**2) - 2 * np.sum(w**3) / np.sum(w) + (np.sum(w**2) / np.sum(w)) ** 2)
    df = min(float(k - 1), max(1.0, 2 * tau2**2 * float(info)))
    return Between(tau2, df, k)


def se_of(low: float, high: float, df: float) -> float:
    """The standard error behind a symmetric t interval [low, high] with `df`."""
    return (high - low) / (2 * _quantile(df))


def widen(estimate: float, se: float, df: float, between: Between) -> tuple[float, float, float]:
    """(low, high, df) of `estimate` with its own variance se^2 (df) and the between-run
    variance added; degrees of freedom by Welch-Satterthwaite. Never narrower than the run's
    own interval: a well-known between-run term raises the degrees of freedom, and with 2 or
    3 processes that alone could shrink the interval below what the run itself supports."""
    total = se**2 + between.tau2
    parts = se**4 / df if math.isfinite(df) and df > 0 else 0.0
    if between.tau2 > 0:
        parts += between.tau2**2 / between.df
    combined = total**2 / parts if parts > 0 else math.inf
    half = max(_quantile(combined) * math.sqrt(total), _quantile(df) * se)
    return estimate - half, estimate + half, combined


def pool(y: Sequence[float], se: Sequence[float]) -> Pooled:
    """Random-effects pooling of k >= 2 runs: weights 1/(se^2 + tau^2) with tau^2 by REML;
    interval mu +- t(k-1) sqrt(max(1, q) / sum w), q the weighted residual variance
    (modified Knapp-Hartung)."""
    y, s2 = np.asarray(y, float), np.asarray(se, float) ** 2
    k = y.size
    between = reml(y, np.sqrt(s2))
    w = 1 / (s2 + between.tau2)
    mu = float(np.sum(w * y) / np.sum(w))
    q_kh = float(np.sum(w * (y - mu) ** 2)) / (k - 1)
    half = _quantile(k - 1) * math.sqrt(max(1.0, q_kh) / float(np.sum(w)))
    w0 = 1 / s2
    mu0 = np.sum(w0 * y) / np.sum(w0)
    q = float(np.sum(w0 * (y - mu0) ** 2))
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    return Pooled(mu, mu - half, mu + half, k, q, i2, between.tau2)
