"""What changes between runs: a run judged with the spread of a study's runs, and several
runs pooled into one answer.

A run's own interval describes its worker processes. Runs of one grid on one kind of
machine, made at different times, differ by more than that (the machine's state on another
day: Kalibera and Jones, "Rigorous benchmarking in reasonable time", 2013, variance at each
level of repetition). The model is one-way random effects over one host's runs (what ISO
5725-3 calls intermediate precision, not reproducibility across hosts):
run i's value is y_i = mu + b_i + e_i, with b_i between runs and e_i within the run. For runs
of one design (the same number of processes behind each value) the y_i are alike, and a new
run's y minus mu, over the spread S of k earlier runs' values, is a Student t on k - 1
degrees of freedom whatever the split between b and e: no variance component is estimated.

- `judged`: one run's interval with a study: half-width max(t_{k-1} S, the run's own). A run
  with fewer processes than the study's design also carries the share of its own error the
  study's runs did not hold (its own terms times sqrt(1 - R_run / R_study)), added to S's
  term as a sum of t terms (blockbench.judge.uncertainty); benchmarks/interval_coverage.py
  shows every setting meets its coverage target (docs/statistics.md, with the candidates
  dropped). Monotone in S and in the run's own spread by construction.
- `pool`: several runs of one kind as one estimate: their mean, with the study's S over
  sqrt(runs) where a study exists, and with the runs' own spread on runs - 1 df where three
  or more are pooled (the wider of the two); two runs with no study are too few.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from blockbench.judge.uncertainty import Spread

MIN_UNSTUDIED = 3  # runs pooled with no study: their own spread is all there is


@dataclass(frozen=True)
class StudyPart:
    """One claim part as the runs of a study measured it: each run's value on the part's
    scale, and the design (processes or rounds behind a value, the median over the runs)."""

    values: tuple[float, ...]
    processes: float

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def spread(self) -> float:
        """S: the standard deviation of the runs' values."""
        return float(np.std(self.values, ddof=1))

    def term(self) -> Spread:
        """A run's error as the study measured it: S times a t on k - 1 df."""
        return Spread(0.0, ((self.spread, self.runs - 1.0),))


def shortfall(own_processes: float, study_processes: float) -> float:
    """c: the share (as a scale) of a run's own error that a study of a larger design did
    not hold: sqrt(1 - R_run / R_study), 0 where the run has the study's design or more."""
    if not own_processes or not study_processes:
        return 0.0
    return math.sqrt(max(0.0, 1.0 - own_processes / study_processes))


def _study_half(owns: Sequence[Spread], processes: Sequence[float], study: StudyPart) -> float:
    """The half-width of the mean of k runs judged with a study: its S / sqrt(k) on k - 1 df,
    plus the share of each run's own error that a study of a larger design did not hold."""
    k = len(owns)
    out = study.term().times(1 / math.sqrt(k))
    for own, r in zip(owns, processes, strict=True):
        out = out.plus(Spread(0.0, own.times(shortfall(r, study.processes) / k).terms))
    return out.half_width()


def between_half(own: Spread, processes: float, study: StudyPart) -> float:
    """The half-width a study of its kind gives a run, whatever the run's own: the floor
    that more rounds of the run cannot lower (blockbench.judge.stopping)."""
    return _study_half([own], [processes], study)


def judged(own: Spread, processes: float, study: StudyPart) -> tuple[float, float]:
    """(low, high) on the analysis scale of a run judged with a study of its kind."""
    half = max(own.half_width(), between_half(own, processes, study))
    return own.estimate - half, own.estimate + half


@dataclass(frozen=True)
class Pooled:
    """Several runs as one estimate on the analysis scale: their mean and its interval (None
    where the runs are too few to give one), with what the spread between them says."""

    estimate: float
    low: float | None
    high: float | None
    runs: int
    tau: float  # the between-run standard deviation beyond the runs' own errors
    i2: float  # tau^2 over the runs' variance: the share the runs' own errors do not explain
    how: str


def pool(
    values: Sequence[float],
    owns: Sequence[Spread],
    processes: Sequence[float],
    study: StudyPart | None = None,
) -> Pooled:
    """The mean of k >= 2 runs' values with its interval (see the module's docstring)."""
    y = np.asarray(values, dtype=float)
    k = y.size
    mean = float(y.mean())
    s2 = float(np.var(y, ddof=1))
    own2 = float(np.mean([o.se**2 for o in owns]))
    tau2 = max(0.0, s2 - own2)  # the moment estimate: the runs' spread beyond their own
    i2 = tau2 / s2 if s2 > 0 else 0.0
    halves, said = [], []
    if study is not None:
        halves.append(_study_half(owns, processes, study))
        said.append(f"the study's spread over {study.runs} runs")
    if k >= MIN_UNSTUDIED:
        halves.append(Spread(0.0, ((math.sqrt(s2 / k), k - 1.0),)).half_width())
        said.append(f"these {k} runs' own spread")
    if not halves:
        how = (
            f"too few runs to pool on an unstudied machine ({k}; {MIN_UNSTUDIED} needed, or "
            "a between-run study of this kind of machine)"
        )
        return Pooled(mean, None, None, k, math.sqrt(tau2), i2, how)
    half = max(halves)
    how = f"mean of {k} runs; interval from " + " and ".join(said) + " (the wider)"
    return Pooled(mean, mean - half, mean + half, k, math.sqrt(tau2), i2, how)
