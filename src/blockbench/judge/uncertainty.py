"""Uncertainty of cell times, and of anything computed from them, carried as distributions.

Noise lives at two levels: between the samples of one worker process, and between processes
(thread placement, allocator state, a neighbour on the machine; Kalibera and Jones 2013).
Each process's median already carries its own sampling noise, so the spread of a cell's
process medians measures both levels at once. With the few processes a run affords,
resampling the processes cannot reach 95% (a percentile bootstrap over 3 processes gives
about the range of their medians, which covers the true median 75% of the time), so the
process level is modelled: log process medians are taken as normal, a cell's time is their
geometric mean, and its error on the log scale is a Student t with R - 1 degrees of freedom.

A quantity is a `Spread`: an estimate plus a weighted sum of independent Student t terms
(scale, df). A cell, a paired ratio and a sum of one cell's phases are one term, whose
bounds are the t quantiles. A ratio of unpaired cells, a sum of cells and a fitted exponent
are sums of several terms; their bounds are the quantiles of the sum's distribution (the
Behrens-Fisher fiducial interval, as GUM Supplement 1 propagates distributions: not an
exact confidence interval, and conservative; benchmarks/interval_coverage.py shows it
meets its level where Welch-Satterthwaite's does not), computed by numerical inversion of
its characteristic function with the integral's error checked: no random draws, so no
verdict depends on a seed. Sums of cells are linearised on the log scale (each cell's term
weighted by its share of the sum). With a single process only the within-process level is
known: the distribution-free interval of that process's median from its order statistics.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import integrate, optimize, special  # not scipy.stats: 0.6 s more to import

from blockbench.measure.stats import median_ci
from blockbench.records.spec import CONFIDENCE

NORMAL_DF = math.inf


def on_scale(x: float, scale: str) -> float:
    """A claim part's analysis scale: a ratio's error is modelled on the log scale, an
    exponent's as it is; its interval, the between-run term and pooling all work there."""
    return math.log(x) if scale == "log" else x


def from_scale(x: float, scale: str) -> float:
    return math.exp(x) if scale == "log" else x


@dataclass(frozen=True)
class Spread:
    """estimate + sum of scale_i * T(df_i), on the analysis scale (the log of a time or a
    ratio, or an exponent as it is). Terms with scale 0 are dropped."""

    estimate: float
    terms: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        kept = tuple((abs(float(s)), float(df)) for s, df in self.terms if s != 0)
        object.__setattr__(self, "terms", kept)

    @property
    def se(self) -> float:
        """The root sum of the terms' squared scales: the standard error of a normal-theory
        analysis (a weight, never a bound)."""
        return math.sqrt(sum(s * s for s, _ in self.terms))

    def times(self, c: float) -> "Spread":
        return Spread(c * self.estimate, tuple((c * s, df) for s, df in self.terms))

    def plus(self, other: "Spread") -> "Spread":
        return Spread(self.estimate + other.estimate, self.terms + other.terms)

    def half_width(self, level: float = CONFIDENCE) -> float:
        return half_width(self.terms, level)

    def interval(self, level: float = CONFIDENCE) -> tuple[float, float]:
        half = self.half_width(level)
        return self.estimate - half, self.estimate + half

    def to_text(self) -> str:
        """`scale:df,scale:df`: the terms as one table cell."""
        return ",".join(f"{s:.9g}:{df:g}" for s, df in self.terms)

    @classmethod
    def from_text(cls, estimate: float, text: str) -> "Spread":
        terms = [t.split(":") for t in str(text).split(",") if t]
        return cls(estimate, tuple((float(s), float(df)) for s, df in terms))


def t_quantile(df: float, level: float = CONFIDENCE) -> float:
    """Upper quantile of a central `level` t interval on `df` (inf: normal), as scipy.stats'."""
    p = 0.5 + level / 2
    return float(special.ndtri(p) if math.isinf(df) else special.stdtrit(df, p))


# Above this half-df, scipy's scaled Bessel K overflows far from zero (df 1000: everywhere
# below z = 400), so the uniform (Debye) expansion of K_v(v t) takes over; with three
# correction terms it agrees with the Bessel function to 1e-9 in the log at v = 50.
DEBYE_V = 50.0
# The most a probability of the sum may be off by the Fourier integral's own error
# estimate: two orders below the quantile's own tolerance (an interval refuses, it is not
# widened, when the inversion cannot reach it).
CDF_TOLERANCE = 1e-7


def _log_char_t(u: float, df: float) -> float:
    """The log of the characteristic function of a Student t on `df` at u > 0 (real: it is
    symmetric): log of K_v(z) z^v / (Gamma(v) 2^(v-1)), z = sqrt(df) u, v = df / 2."""
    if math.isinf(df):
        return -u * u / 2
    z, v = math.sqrt(df) * u, df / 2
    tail = v * math.log(z) - special.gammaln(v) - (v - 1) * math.log(2)
    if v >= DEBYE_V:
        t = z / v
        root = math.sqrt(1 + t * t)
        p = 1 / root
        u1 = (3 * p - 5 * p**3) / 24
        u2 = (81 * p**2 - 462 * p**4 + 385 * p**6) / 1152
        u3 = (30375 * p**3 - 369603 * p**5 + 765765 * p**7 - 425425 * p**9) / 414720
        eta = root + math.log(t / (1 + root))
        log_k = (
            0.5 * math.log(math.pi / (2 * v))
            - v * eta
            - 0.5 * math.log(root)
            + math.log1p(-u1 / v + u2 / v**2 - u3 / v**3)
        )
        return log_k + tail
    scaled = special.kve(v, z)  # K scaled by e^z
    if not math.isfinite(scaled):
        # below v = 50 K overflows only where z is tiny beside v (z < 1e-5), where the
        # function is 1 - z^2 / (4 (v - 1)) to within (z^2 / v)^2
        return math.log1p(-z * z / (4 * (v - 1)))
    return math.log(scaled) - z + tail


def _cdf_of_sum(x: float, terms: tuple[tuple[float, float], ...]) -> float:
    """P(sum of scale_i T_i <= x), x > 0, by Gil-Pelaez inversion of the product of the
    terms' characteristic functions (which decays at least exponentially). Raises where
    QUADPACK's error estimate exceeds CDF_TOLERANCE."""

    def char(u: float) -> float:
        if u <= 0:
            return 0.0
        return math.exp(sum(_log_char_t(s * u, df) for s, df in terms)) / u

    # 1/2 + (1/pi) * integral_0^inf sin(u x) phi(u) / u du: QUADPACK's Fourier integral
    value, error, *rest = integrate.quad(
        char, 0, math.inf, weight="sin", wvar=x, limlst=200, full_output=1
    )
    if len(rest) > 1 or error / math.pi > CDF_TOLERANCE:  # a message: QUADPACK's ier > 0
        said = rest[1].splitlines()[0] if len(rest) > 1 else "no warning"
        raise ArithmeticError(
            f"the distribution of a sum of t terms {terms} at {x:.6g}: the numerical "
            f"integral's error estimate {error / math.pi:.2g} (limit {CDF_TOLERANCE:g}; "
            f"{said})"
        )
    return 0.5 + value / math.pi


@cache
def half_width(terms: tuple[tuple[float, float], ...], level: float = CONFIDENCE) -> float:
    """Half the central `level` interval of the sum of scaled t terms: the t quantile where
    there is one term, the sum's distribution (numerically inverted) otherwise."""
    if not terms:
        return 0.0
    if len(terms) == 1:
        scale, df = terms[0]
        return scale * t_quantile(df, level)
    largest = max(s for s, _ in terms)
    if largest != 1.0:  # in units of the largest scale, where the inversion is well posed
        return largest * half_width(tuple((s / largest, df) for s, df in terms), level)
    p = 0.5 + level / 2
    # the sum's quantile lies near the largest term's own and below the sum of all terms' own
    low = max(s * t_quantile(df, level) for s, df in terms)
    high = sum(s * t_quantile(df, level) for s, df in terms)
    return float(
        optimize.brentq(lambda x: _cdf_of_sum(x, terms) - p, low * 0.5, high * 1.5, xtol=low * 1e-7)
    )


def of_processes(
    values: Sequence[float], rounds: Sequence[int] | None = None, first: int = 0
) -> Spread:
    """The log of the geometric mean of one value per process (R >= 2), with its Student t
    on R - 1 degrees of freedom; or, where the count R was chosen from the spread of a
    first stage (the rounds numbered below `first`; `rounds` gives each value's round, None:
    its position), Stein's: the first stage's spread over sqrt(R), on its count - 1 degrees
    of freedom, which covers as its level says whatever R the first stage chose (Stein
    1945; blockbench.judge.stopping). The first stage is taken by round number, never by
    position: a first-stage process that failed must not let a round added after the
    decision into the spread that made it."""
    logs = np.log(np.asarray(values, dtype=float))
    r = logs.size
    if r < 2:
        raise ValueError("a process-level interval needs at least 2 processes")
    staged = (np.arange(r) if rounds is None else np.asarray(rounds, dtype=int)) < first
    used = logs[staged] if 2 <= staged.sum() < r else logs
    scale = float(used.std(ddof=1) / math.sqrt(r))
    return Spread(float(logs.mean()), ((scale, used.size - 1.0),))


def of_samples(samples: Sequence[float]) -> Spread:
    """The log of one process's median with the distribution-free interval of a median
    (order statistics at the binomial quantiles: blockbench.measure.stats.median_ci; the
    range below 6 samples, where no such interval reaches 95%), as a normal term of the same
    width: within-process noise only."""
    x = np.log(np.asarray(samples, dtype=float))
    middle = float(np.median(x))
    low, high = median_ci(x)
    if low is None or high is None:
        low, high = float(x.min()), float(x.max())
    half = max(middle - low, high - middle)
    return Spread(middle, ((half / t_quantile(NORMAL_DF), NORMAL_DF),))


def of_cell(
    processes: Sequence[Sequence[float]], rounds: Sequence[int] | None = None, first: int = 0
) -> Spread:
    """A cell's time on the log scale: the geometric mean of its processes' medians (each
    process counts once, Stein's interval where rounds were added: `of_processes`), or one
    process's median where there is one. The one interval of a cell: its table, its
    figure's band and the claims all read it."""
    if len(processes) == 1:
        return of_samples(processes[0])
    return of_processes([float(np.median(p)) for p in processes], rounds, first)


def log_sum(parts: Sequence[Spread]) -> Spread:
    """The log of a sum of independent positive quantities, each given as a log Spread:
    linearised, each term weighted by its share of the sum (the delta method)."""
    values = np.exp([p.estimate for p in parts])
    total = float(values.sum())
    out = Spread(math.log(total))
    for p, v in zip(parts, values, strict=True):
        out = out.plus(Spread(0.0, p.times(float(v) / total).terms))
    return out


def log_slope(x: Sequence[float], ys: Sequence[Spread]) -> Spread:
    """The least-squares slope of log(y) against log(x), each log(y) a Spread: the exponent
    of a power law; a linear combination of the points, so its terms are theirs, weighted."""
    lx = np.log(np.asarray(x, dtype=float))
    c = (lx - lx.mean()) / float(((lx - lx.mean()) ** 2).sum())
    out = Spread(0.0)
    for weight, y in zip(c, ys, strict=True):
        out = out.plus(y.times(float(weight)))
    return out
