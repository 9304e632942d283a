"""Pooled runs recover the between-run spread they were simulated with: tau and I^2 through
the code that makes a run's part (its interval, its two looks) and pools it
(blockbench.judge.pooling), where a run's standard error must be its own, never the wider
scale its look was decided on."""

import math
from dataclasses import replace

import numpy as np
import pytest

from blockbench.judge import part_evaluators, uncertainty
from blockbench.judge.claim import RATIO, Part
from blockbench.judge.part_evaluators import LOOK_CONFIDENCE
from blockbench.judge.part_result import PartResult
from blockbench.judge.pooling import pool_part
from blockbench.judge.uncertainty import Spread, t_quantile

# The model of docs/statistics.md, level 3: run i's log ratio is mu + b_i + e_i, b_i ~ N(0,
# TAU^2), and each of its PROCESSES per-process log ratios adds N(0, SIGMA^2), so e_i has
# variance SIGMA^2 / PROCESSES. Three processes (2 df), as the reference run's D1, where a
# look's scale is 2.08 times the variance of its standard error.
RUNS, PROCESSES, SIGMA, TAU = 12, 3, 0.15, 0.2
POOLS = 2000
PART = Part(name="x / y", kind=RATIO, code="", holds_if="> 1", size=1000)
WITHIN = SIGMA**2 / PROCESSES
I2 = TAU**2 / (TAU**2 + WITHIN)
# The moment estimate's I^2 = 1 - own / s^2, own (the runs' mean squared standard error)
# independent of s^2 (the variance of the runs' values, a scaled chi^2 on RUNS - 1 df) under
# normality, so E[I^2] = 1 - (1 - I^2) E[1 / chi^2 / df] = 1 - (1 - I^2) (k - 1) / (k - 3):
# the estimator's own small-sample bias, read from the truth (truncation at 0, where s^2
# falls below own, has probability about 0.001 here and is left out).
EXPECTED_I2 = 1 - (1 - I2) * (RUNS - 1) / (RUNS - 3)


def a_run(logs: np.ndarray) -> PartResult:
    """One run's part from its processes' log ratios, as the claims stage makes it: its
    Student t interval (uncertainty.of_processes), judged at its second look."""
    spread = uncertainty.of_processes(np.exp(logs))
    made = part_evaluators._result(
        PART, math.exp(spread.estimate), spread, size=1000, processes=PROCESSES
    )
    return part_evaluators._looked(made, PART, 2)


def widened(r: PartResult) -> PartResult:
    """The same run as its spread was stored before: the look's wider scale."""
    ((scale, df),) = r.spread.terms
    wider = scale * t_quantile(df, LOOK_CONFIDENCE) / t_quantile(df)
    return replace(r, spread=Spread(r.spread.estimate, ((wider, df),)))


def simulate(widen: bool) -> tuple[np.ndarray, np.ndarray]:
    """tau^2 and I^2 of POOLS pools of RUNS runs each (a fixed seed)."""
    rng = np.random.default_rng(2026)
    taus, i2s = [], []
    for _ in range(POOLS):
        runs = rng.normal(0.0, TAU, (RUNS, 1)) + rng.normal(0.0, SIGMA, (RUNS, PROCESSES))
        parts = [a_run(logs) for logs in runs]
        got = pool_part([widened(p) for p in parts] if widen else parts)
        taus.append(got.tau**2)
        i2s.append(got.i2)
    return np.array(taus), np.array(i2s)


def within(values: np.ndarray, truth: float) -> bool:
    """Whether the mean of `values` lies within 4 of its own Monte Carlo standard errors of
    `truth` (a false alarm about 1 in 16,000)."""
    return abs(values.mean() - truth) <= 4 * values.std(ddof=1) / math.sqrt(values.size)


@pytest.mark.parametrize("widen", [False, True], ids=["own standard error", "look's scale"])
def test_pooled_runs_recover_the_between_run_spread_they_were_simulated_with(widen):
    """Pooled with each run's own standard error, the mean tau^2 is TAU^2 and the mean I^2
    the estimator's expectation at the true I^2 (0.84 here: 0.81 expected of 12 runs), each
    within 4 Monte Carlo standard errors; with the look's scale read as a standard error
    (what `run_spread` stored before), 2.08 times the variance at 2 df, both fall short."""
    tau2, i2 = simulate(widen)
    assert within(tau2, TAU**2) != widen, (math.sqrt(tau2.mean()), TAU)
    assert within(i2, EXPECTED_I2) != widen, (i2.mean(), EXPECTED_I2)
