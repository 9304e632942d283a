"""A trend's steps (docs/statistics.md, "A trend's steps"): each step between consecutive
sizes is read as growing, falling or unclear on its Bonferroni interval, and a trend whose
exponent holds while a step falls is inconclusive. Simulated: where no true step falls, the
rule reads one as falling at most at its stated rate; where one falls, it catches it."""

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats
from test_claims import judged, row, trend_part

from blockbench.judge import uncertainty
from blockbench.judge.part_evaluators import steps
from blockbench.judge.part_result import FALLS, GROWS, UNCLEAR
from blockbench.judge.uncertainty import Spread
from blockbench.records.spec import CONFIDENCE

SIZES = (1000, 5000, 10000)  # C6's GPU matmul trend: 2 steps
STATED = (1 - CONFIDENCE) / 2  # the most a part reads some step as falling where none does
PER_STEP = STATED / (len(SIZES) - 1)
RUNS = 120  # simulated runs a design: every step's interval is a numerical inversion


@dataclass(frozen=True)
class Design:
    """Each size's speedup from `rounds` paired rounds, a round's log ratio normal with sd
    `sds[i]` at size i."""

    rounds: int
    sds: tuple[float, ...]

    def step_se(self, i: int) -> float:
        """The true standard deviation of step i's log estimate."""
        a, b = self.sds[i], self.sds[i + 1]
        return math.sqrt((a * a + b * b) / self.rounds)


# The H200 reference's: 3 paired rounds a size, a round's log ratio with sd about 0.1
# (its 5000's spread, 0.066, times sqrt(3)). Two equal terms on 2 df: the fiducial sum is
# conservative there.
H200 = Design(3, (0.1, 0.1, 0.1))
# One size's noise ten times the next's: the first step's sum is nearly one t, where the
# fiducial sum is nearly exact, so its bound is nearly reached.
LOPSIDED = Design(5, (0.3, 0.03, 0.03))


@functools.cache
def drawn(design: Design) -> list[list[Spread]]:
    """RUNS runs, each size's log speedup made by the shipped code from its rounds, its
    truth 0 (a fixed seed)."""
    rng = np.random.default_rng(20261128)
    return [
        [
            uncertainty.of_processes(np.exp(sd * rng.standard_normal(design.rounds)))
            for sd in design.sds
        ]
        for _ in range(RUNS)
    ]


def falls(design: Design, truth: tuple[float, ...]) -> tuple[float, list[float]]:
    """(share of runs the rule reads some step as falling in, each step's chance of being
    read so): the runs of `design` with their true log speedups moved to `truth`. A move
    changes no spread's terms, so each interval is the one already computed
    (uncertainty.half_width is cached). The chance, given the spreads drawn, is exact over
    the estimates: for normal rounds a mean is independent of their spread, so a step at
    truth d falls with chance Phi((-h - d) / se), h its interval's half-width. Its mean over
    the runs carries only the spreads' simulation error, far below that of counting runs."""
    count, chances = 0, np.zeros(len(SIZES) - 1)
    for logs in drawn(design):
        moved = [Spread(s.estimate + t, s.terms) for s, t in zip(logs, truth, strict=True)]
        got = steps(SIZES, moved)
        count += any(s.reading == FALLS for s in got)
        for i, s in enumerate(got):
            d = truth[i + 1] - truth[i]
            z = (-s.log.half_width(s.level) - d) / design.step_se(i)
            chances[i] += 0.5 * special.erfc(-z / math.sqrt(2))
    return count / RUNS, list(chances / RUNS)


NO_FALL = {
    "grows at every step": (0.0, 0.3, 0.6),
    "flat at the first step": (0.0, 0.0, 0.3),
    "flat at the second step": (0.0, 0.3, 0.3),
    "flat at both": (0.0, 0.0, 0.0),
}


@pytest.mark.parametrize("design", [H200, LOPSIDED], ids=["h200", "lopsided"])
@pytest.mark.parametrize("truth", NO_FALL.values(), ids=NO_FALL.keys())
def test_where_no_step_falls_the_rule_reads_a_fall_at_most_at_its_stated_rate(design, truth):
    share, chances = falls(design, truth)
    assert sum(chances) <= STATED, chances  # the sum: a bound on the chance of any
    # the runs counted agree: no more than a binomial at the stated rate gives 99.9% of times
    assert share * RUNS <= stats.binom.ppf(0.999, RUNS, STATED), share


def test_the_bound_is_nearly_reached_where_one_size_dominates_a_flat_step():
    """Not a bound no rule could exceed: where a flat step's interval is nearly one t, the
    rule reads it as falling about as often as its share of the bound, 2.5% / 2."""
    _, (flat, _) = falls(LOPSIDED, NO_FALL["flat at the first step"])
    assert 0.5 * PER_STEP <= flat <= 1.5 * PER_STEP, flat


@pytest.mark.parametrize(
    ("design", "to", "at_least"),
    [
        (H200, 0.5, 0.7),  # the speedup halves from 5000 to 10000
        (LOPSIDED, 0.84, 0.95),  # the H200's fall, measured finely
    ],
    ids=["h200-halves", "lopsided-h200s-fall"],
)
def test_a_step_that_falls_is_caught(design, to, at_least):
    share, (_, caught) = falls(design, (0.0, 0.5, 0.5 + math.log(to)))
    assert share >= at_least and caught >= at_least, (share, caught)


def test_steps_are_read_on_their_bonferroni_interval():
    logs = [Spread(math.log(v), ((0.01, 4.0),)) for v in (1.0, 2.0, 2.0, 1.5)]
    got = steps([10, 20, 40, 80], logs)
    assert [s.reading for s in got] == [GROWS, UNCLEAR, FALLS]
    assert {s.level for s in got} == {1 - (1 - CONFIDENCE) / 3}
    assert str(got[2]) == "40->80 falls 0.75 [0.711, 0.792]"


def trend(medians: dict[int, float]) -> list:
    """A trend's cells, the speedup numpy / jax at each size as given, the processes of each
    cell a little apart (so every value has an interval)."""
    rows = [row("jax", s, median=1.0, process_spread=0.01, spread=0.01) for s in medians]
    return rows + [
        row("numpy", s, median=v, process_spread=0.01, spread=0.01) for s, v in medians.items()
    ]


def test_a_trend_whose_exponent_holds_while_a_step_falls_is_inconclusive():
    part = {**trend_part(), "sizes": [10, 20, 40]}
    table, parts, markdown = judged(trend({10: 1.0, 20: 8.0, 40: 6.0}), part)
    got = parts.iloc[0]
    assert got["ci_low"] > 0  # its exponent alone would hold
    assert got["outcome"] == "inconclusive" and table.iloc[0]["verdict"] == "inconclusive"
    assert "steps (97.5% intervals): 10->20 grows 8.05 [" in got["detail"]
    assert "20->40 falls 0.737 [0.68, 0.798]" in got["detail"]
    assert "20->40 falls 0.737 [0.68, 0.798]" in markdown  # the report's parts table


def test_a_trend_that_grows_at_every_step_still_holds():
    part = {**trend_part(), "sizes": [10, 20, 40]}
    table, parts, _ = judged(trend({10: 1.0, 20: 2.0, 40: 4.0}), part)
    got = parts.iloc[0]
    assert got["outcome"] == "holds" and table.iloc[0]["verdict"] == "reproduced"
    assert "10->20 grows 2.01 [1.88, 2.15]; 20->40 grows 1.96 [1.81, 2.13]" in got["detail"]


ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "results/reference/h200-gpu-quick"


@pytest.mark.parametrize("folder", ["run", "repeat"])
def test_the_h200_readmes_c6_steps_are_its_records_judged_now(folder):
    """The steps its README quotes for C6's GPU matmul trend, judged again from the records
    by this checkout's code (they are method version 10's records: no verdict is published)."""
    from blockbench.judge import claim_rules, verdicts
    from blockbench.judge.aggregate import cells, processes
    from blockbench.records.layout import raw_files

    quoted = re.search(rf"^- {folder}: `([^`]+)`$", (H200 / "README.md").read_text(), re.M)
    c6 = [c for c in claim_rules.read_claims(ROOT / "config/claims/articles") if c.id == "C6"]
    proc = processes(raw_files(H200 / folder / "raw/gpu-quick"))
    _, parts = verdicts.judge(cells(proc), proc, c6)
    detail = parts.set_index("part").loc["matmul, GPU speedup grows", "detail"]
    assert quoted and detail.endswith(f"steps (97.5% intervals): {quoted.group(1)}"), detail
