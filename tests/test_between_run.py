"""Between-run variance: REML, the widened single-run interval, pooled runs, and the study
files, with coverage checked by simulation under a two-level model."""

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from blockbench.errors import InputError
from blockbench.judge import claims, part_result, scales, verdicts
from blockbench.judge.pooling import pool_part
from blockbench.judge.random_effects import Between, pool, reml, widen
from blockbench.judge.studies import Kind, Study, kind_of, read_studies, read_study, study_path

PROCESSES = 3  # worker processes per run, as the default grid
# 95% intervals must cover within this band over SIMS simulated studies: the binomial
# spread of 2000 draws is +-1%, and the two-stage approximations (REML's df,
# Welch-Satterthwaite, Knapp-Hartung) may each add a point either way.
SIMS = 2000
LOW, HIGH = 0.925, 0.99


def simulated_run(rng: np.random.Generator, mu: float, tau: float, sigma: float) -> tuple:
    """One run: a run effect, then PROCESSES processes around it; the run's estimate is
    their mean and its standard error their spread, as resampling.of_processes has it."""
    values = mu + rng.normal(0, tau) + rng.normal(0, sigma, PROCESSES)
    return values.mean(), values.std(ddof=1) / math.sqrt(PROCESSES)


def coverage(seed: int, tau: float, sigma: float, interval: Any) -> float:
    """Share of SIMS studies of 4 runs (mean 0) where `interval(rng, y, se)` holds 0."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(SIMS):
        y, se = zip(*(simulated_run(rng, 0.0, tau, sigma) for _ in range(4)), strict=True)
        low, high = interval(rng, y, se)
        hits += low <= 0.0 <= high
    return hits / SIMS


@pytest.mark.parametrize("tau,sigma", [(0.0, 0.05), (0.05, 0.05), (0.15, 0.03)])
def test_pooled_interval_covers_the_mean_across_runs(tau: float, sigma: float) -> None:
    def pooled(rng: Any, y: tuple, se: tuple) -> tuple[float, float]:
        got = pool(y, se)
        return got.low, got.high

    share = coverage(1, tau, sigma, pooled)
    assert LOW <= share <= HIGH, share


@pytest.mark.parametrize("tau,sigma", [(0.0, 0.05), (0.05, 0.05), (0.15, 0.03)])
def test_floor_widened_run_covers_the_mean_across_runs(tau: float, sigma: float) -> None:
    """A study of 4 runs, then one new run judged on its interval plus the study's tau^2."""

    def widened(rng: Any, y: tuple, se: tuple) -> tuple[float, float]:
        value, own = simulated_run(rng, 0.0, tau, sigma)
        return widen(value, own, PROCESSES - 1, reml(y, se))[:2]

    share = coverage(2, tau, sigma, widened)
    assert LOW <= share <= HIGH, share


def test_unwidened_interval_undercovers_when_runs_differ() -> None:
    """Why the floor exists: with tau three times the within-run error, a run's own
    t interval covers the mean across runs far less than 95% of the time."""
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(SIMS):
        value, own = simulated_run(rng, 0.0, 0.15, 0.05 * math.sqrt(PROCESSES))
        low, high, _ = widen(value, own, PROCESSES - 1, Between(0.0, 0.0, 1))
        hits += low <= 0.0 <= high
    assert hits / SIMS < 0.8


def test_reml_recovers_tau_from_many_runs() -> None:
    rng = np.random.default_rng(4)
    y, se = zip(*(simulated_run(rng, 1.0, 0.1, 0.05) for _ in range(400)), strict=True)
    got = reml(y, se)
    assert got.tau == pytest.approx(0.1, rel=0.15)
    assert got.df == pytest.approx(399, rel=0.35)  # bounded by runs - 1
    assert reml([1.0, 1.0, 1.0], [0.1, 0.1, 0.1]) == Between(0.0, 0.0, 3)


def test_widen_without_between_is_the_run_interval() -> None:
    low, high, df = widen(0.0, 0.1, 2, Between(0.0, 0.0, 4))
    assert (low, high, df) == pytest.approx((-0.4303, 0.4303, 2), abs=1e-3)
    _, wide_high, wide_df = widen(0.0, 0.1, 2, Between(0.04, 3.0, 4))
    assert wide_high > high and 2 <= wide_df <= 5


def test_pool_heterogeneity() -> None:
    same = pool([1.0, 1.01, 0.99, 1.0], [0.05] * 4)
    assert same.i2 == 0 and same.tau2 == 0 and same.low < 1 < same.high
    apart = pool([1.0, 1.5, 0.5, 1.2], [0.02] * 4)
    assert apart.i2 > 0.9 and apart.tau2 > 0.05
    assert apart.high - apart.low > same.high - same.low


def part(value: float, low: float, high: float, rule: str = ">= 5") -> part_result.PartResult:
    return part_result.PartResult(
        "x / y",
        claims.decide(rule, low, high),
        measured=value,
        ci_low=low,
        ci_high=high,
        run_low=low,
        run_high=high,
        condition=rule,
        size=1000,
        article_size=1000,
        df=2,
    )


def test_with_between_widens_and_judges_again() -> None:
    r = part(8.0, 6.0, 10.5)
    assert r.outcome == "holds"
    wide = claims.with_between(r, Between(0.3**2, 3.0, 4))
    assert wide.ci_low < 5 < 8 < wide.ci_high and wide.outcome == "inconclusive"
    assert (wide.run_low, wide.run_high) == (6.0, 10.5)  # this run's own, kept
    assert claims.with_between(r, None) is r


def test_pool_part_of_runs_that_agree_and_of_a_check() -> None:
    runs = [part(8.0, 6.0, 10.5), part(9.0, 7.0, 11.0), part(7.5, 6.2, 9.0)]
    got = pool_part(runs)
    assert got.runs == 3 and got.result.outcome == "holds"
    assert 7.0 < got.result.measured < 9.0 and got.result.ci_low > 5
    check = part_result.PartResult("match", "holds", measured=1e-7, condition="every cell passes")
    failed = part_result.PartResult("match", "fails", measured=0.2, condition="every cell passes")
    assert pool_part([check, failed]).result.outcome == "fails"
    not_run = part_result.PartResult("x / y", part_result.NOT_RUN, detail="no gpu")
    assert pool_part([not_run, not_run]).runs == 0


def test_study_file_round_trip(tmp_path) -> None:
    kind = Kind("AMD EPYC", 2)
    study = Study(kind, [{"label": "a", "started": "t", "commit": "c"}])
    study.parts[("A1", "blocked / dispatch")] = Between(0.02, 2.5, 4)
    path = study_path(tmp_path, kind)
    assert path.name == "amd-epyc-2cpu.yaml"
    path.write_text(study.to_yaml())
    back = read_study(path)
    assert back.kind == kind and back.runs == study.runs
    got = back.between("A1", "blocked / dispatch")
    assert got.tau2 == pytest.approx(0.02, rel=1e-4) and got.df == 2.5
    with pytest.raises(InputError, match="second study"):
        read_studies([path, path])
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nkind: nothing\n")
    with pytest.raises(InputError, match=r"bad\.yaml"):
        read_study(bad)


def two_runs(models: tuple[str, str], ratios: tuple[list, list]) -> tuple[pd.DataFrame, ...]:
    """Cells and processes of two runs of a num/den pair, one block each (paired)."""
    cells, procs = [], []
    for label, model, ratio in zip(("r1", "r2"), models, ratios, strict=True):
        for impl, times in (("num", [1.0] * 3), ("den", [1.0 / x for x in ratio])):
            base = {
                "run_label": label,
                "device": "cpu",
                "workload": "w",
                "impl": impl,
                "size": 10,
                "phase": "steady",
                "status": "ok",
                "device_model": model,
                "cpu_model": model,
                "host_cpus": 2,
                "jax_version": "0.10.2",
            }
            cells.append({**base, "n_min": 9, "warnings": ""})
            for repeat, t in enumerate(times):
                procs.append({**base, "repeat": repeat, "median_s": t, "block": "b1"})
    return pd.DataFrame(cells), pd.DataFrame(procs)


CLAIM = {
    "id": "Z1",
    "slug": "z",
    "source": "test",
    "statement": "num is slower",
    "article": "-",
    "parts": [
        {
            "name": "num / den",
            "num": {"device": "cpu", "workload": "w", "impl": "num"},
            "den": {"device": "cpu", "workload": "w", "impl": "den"},
            "size": 10,
            "holds_if": ">= 2",
            "code": "-",
        }
    ],
}


def test_runs_on_one_kind_are_pooled_and_a_study_widens_them() -> None:
    cells, procs = two_runs(("EPYC", "EPYC"), ([3.0, 3.2, 2.9], [3.1, 2.8, 3.3]))
    table, _ = verdicts.judge(cells, procs, [CLAIM])
    assert list(table["runs_pooled"]) == [2, 2]
    assert table["pooled_verdict"].iloc[0] == "reproduced"
    assert table["pooled_ci_low"].iloc[0] > 2
    assert table["between_run"].str.startswith("covers this run only").all()
    study = Study(kind_of(cells), [{"label": x} for x in "abcd"])
    study.parts[("Z1", "num / den")] = Between(0.5**2, 3.0, 4)
    wide, _ = verdicts.judge(cells, procs, [CLAIM], {study.kind: study})
    assert (wide["ci_high"] > table["ci_high"]).all()
    assert (wide["run_ci_high"] == table["ci_high"]).all()
    assert set(wide["verdict"]) == {"inconclusive"}
    assert wide["between_run"].iloc[0] == (
        "includes between-run variance measured from 4 runs on this kind of machine"
    )


def test_runs_on_different_hardware_are_never_pooled() -> None:
    cells, procs = two_runs(("EPYC", "Xeon"), ([3.0, 3.2, 2.9], [3.1, 2.8, 3.3]))
    table, _ = verdicts.judge(cells, procs, [CLAIM])
    assert list(table["runs_pooled"]) == [1, 1]
    assert table["pooled_value"].isna().all()


RUNS_DIR = Path(__file__).resolve().parents[1] / "results/reference/dev-2core-epyc-runs"
STUDY = Path(__file__).resolve().parents[1] / "config/between_run/amd-epyc-2cpu.yaml"


def test_committed_study_pools_the_earlier_runs_into_a_ci_that_covers_the_last() -> None:
    """The real check: the default runs of one commit on the development VM, the last an
    hour after the others (the study's runs, in the order they were made). Pooled over all
    but the last, each measured claim's interval holds the last run's value."""
    runs = [r["label"] for r in sorted(read_study(STUDY).runs, key=lambda r: r["started"])]
    assert len(runs) >= 3
    table = pd.read_csv(RUNS_DIR / "claims.csv")
    checked = covered = 0
    for _, rows in table.groupby("claim_id"):
        by_run = rows.set_index("run_label")
        points = [
            scales.scaled(
                *by_run.loc[r, ["measured", "run_ci_low", "run_ci_high", "run_df"]],
                by_run.loc[r, "scale"],
            )
            for r in runs[:-1]
        ]
        if any(p is None for p in points):
            continue
        got = pool(*zip(*points, strict=True))
        last = by_run.loc[runs[-1]]
        checked += 1
        covered += got.low <= scales.on_scale(last["measured"], last["scale"]) <= got.high
    assert checked >= 8 and covered == checked, (covered, checked)


def test_article_figures_pool_a_rows_points_only_where_two_runs_measured_it() -> None:
    from blockbench.judge.article_points import Point, pooled_point

    points = [Point(2.0, 1.5, 2.6, "", 2.0), Point(2.4, 2.0, 2.9, "", 2.0)]
    got = pooled_point(points)
    assert 2.0 < got.value < 2.4 and got.low < got.value < got.high
    assert pooled_point([points[0], Point(note="not run: no GPU")]).note == "not pooled"
    assert pooled_point([Point(note="not run: no GPU")] * 2) == Point()
