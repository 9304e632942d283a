"""Judging the articles' claims against measurements (rules from blockbench.judge.claim_rules).

A claim has parts; each part is one of
- `ratio`: sum of `num` cell times over sum of `den` cell times at one size;
- `trend`: the exponent of that ratio against size (> 0: it grows with size);
- `growth`: the exponent of a phase's time against the workload's amount of work;
- `check`: every named cell matched the float64 reference (and published values, if any).
Every measured value carries a 95% CI from its cells' processes
(blockbench.judge.uncertainty.METHOD), judged with the spread of a between-run study's runs
where one exists for the run's kind of machine (blockbench.judge.studies, .between_runs),
and a part `holds` when its whole CI satisfies its rule, `fails` when none of it does, and is
`inconclusive` when the CI straddles the rule's boundary.
A part's `size` is the article's; measured at another size, its outcome is only
indicative. The claim is `not_reproduced` when a part fails at the article's setup,
`not_run` when a part could not be measured (with the cells' own reason), `reproduced` when
every part holds at the article's setup, and `inconclusive` otherwise.
"""

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from blockbench.judge import uncertainty
from blockbench.judge.between_runs import StudyPart, judged
from blockbench.judge.claim_rules import FAILS, HOLDS, INCONCLUSIVE, decide, region, side_terms
from blockbench.judge.part_result import (
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    PartResult,
)
from blockbench.judge.run_view import (
    Missing,
    RunView,
    _phase,
    choose_size,
    ratio_at,
)
from blockbench.judge.scales import from_scale
from blockbench.judge.uncertainty import Spread
from blockbench.judge.wording import part_ci, undecided
from blockbench.measure.core_speed import STEADY, UNKNOWN


def _result(
    part: dict[str, Any],
    value: float,
    spread: Spread | None,
    passed: bool | None = None,
    scale: str = "log",
    **fields: Any,
) -> PartResult:
    """A measured part, judged on this run's own CI (a between-run study may judge it again,
    `with_study`), or on `passed` (checks). `spread` is on the part's scale."""
    if spread is None:
        low = high = None
        outcome = HOLDS if passed else FAILS
    else:
        low, high = (from_scale(x, scale) for x in spread.interval())
        outcome = decide(part["holds_if"], low, high)
    return PartResult(
        part["name"],
        outcome,
        measured=float(value),
        spread=spread,
        scale=scale,
        ci_low=low,
        ci_high=high,
        run_low=low,
        run_high=high,
        article=part.get("article"),
        condition=part.get("holds_if", "every cell passes its check"),
        why=part.get("why", ""),
        article_size=part.get("size"),
        code=part.get("code", ""),
        **fields,
    )


def eval_ratio(view: RunView, part: dict[str, Any]) -> PartResult:
    terms = side_terms(part["num"]) + side_terms(part["den"])
    size = choose_size(view, terms, part.get("size"))
    got = ratio_at(view, part, size)
    return _result(
        part,
        got.value,
        got.log,
        size=size,
        devices={t["device"] for t in terms},
        models=got.models,
        n_min=got.n_min,
        warnings=got.warnings,
        samples=got.samples,
        detail=got.how,
        processes=got.processes,
    )


def eval_trend(view: RunView, part: dict[str, Any]) -> PartResult:
    terms = side_terms(part["num"]) + side_terms(part["den"])
    sizes = sorted(set.intersection(*(view.sizes_ok(t) for t in terms)))
    if len(sizes) < 3:
        lacking = [t for t in terms if len(view.sizes_ok(t)) < 3]
        if lacking and not view.sizes_ok(lacking[0]):
            raise Missing(view.why_missing(lacking[0]))
        raise Missing(f"needs 3 sizes where every term measured fine, has {sizes}")
    each = [ratio_at(view, part, s) for s in sizes]
    slope = uncertainty.log_slope(sizes, [m.log for m in each])
    detail = (
        f"ratio {each[0].value:.3g} at {sizes[0]} -> {each[-1].value:.3g} at {sizes[-1]}; "
        f"exponent of the ratio against size over {sizes}"
    )
    return _result(
        part,
        slope.estimate,
        slope,
        scale="linear",
        size=sizes[-1],
        devices={t["device"] for t in terms},
        models=each[-1].models,
        detail=detail,
        n_min=min(m.n_min for m in each),
        warnings=sorted({w for m in each for w in m.warnings}),
        processes=min(m.processes for m in each),
    )


@dataclass
class Growth:
    """A phase's time against the workload's amount of work, fitted as a power law."""

    rows: pd.DataFrame  # the cells fitted, by size: size, work, median_s, n_min, device_model
    exponent: Spread
    processes: int


def growth_fit(view: RunView, term: dict[str, Any]) -> Growth:
    """The exponent of `term`'s time against work over every size measured (at least 3),
    its uncertainty from each size's own."""
    rows = view.ok_rows(term).sort_values("size")
    if len(rows) < 3:
        if rows.empty:
            raise Missing(view.why_missing(term))
        raise Missing(
            f"needs 3 sizes of {term['workload']}/{term['impl']} {_phase(term)}, "
            f"has {sorted(rows['size'].tolist())}"
        )
    times = [view.time_of([term], s) for s in rows["size"]]
    slope = uncertainty.log_slope(rows["work"].astype(float).tolist(), [t for t, _ in times])
    return Growth(rows, slope, min(n for _, n in times))


def eval_growth(view: RunView, part: dict[str, Any]) -> PartResult:
    term = part["of"]
    fit = growth_fit(view, term)
    rows = fit.rows
    detail = (
        f"{term['phase']} time ~ work^{fit.exponent.estimate:.2f}: the slope over the sizes "
        f"measured, {rows['size'].tolist()} "
        f"({rows['median_s'].iloc[0]:.3g} s to {rows['median_s'].iloc[-1]:.3g} s), not an "
        "asymptotic exponent (a local one can rise with size)"
    )
    return _result(
        part,
        fit.exponent.estimate,
        fit.exponent,
        scale="linear",
        size=int(rows["size"].max()),
        devices={term["device"]},
        models={f"{term['device']}: {rows['device_model'].iloc[0]}"},
        detail=detail,
        n_min=int(rows["n_min"].min()),
        processes=fit.processes,
    )


def eval_check(view: RunView, part: dict[str, Any]) -> PartResult:
    spec = part["cells"]
    d = view.df
    rows = d[
        (d["device"] == spec["device"])
        & (d["workload"] == spec["workload"])
        & d["impl"].isin(spec["impls"])
    ].drop_duplicates(["impl", "size"])
    measured = rows[rows["check_passed"].notna()]
    if measured.empty or set(measured["impl"]) != set(spec["impls"]):
        absent = [i for i in spec["impls"] if i not in set(measured["impl"])]
        raise Missing(view.why_missing({**spec, "impl": absent[0] if absent else spec["impls"][0]}))
    worst = float(measured["max_rel_err"].max())
    detail = (
        f"{len(measured)} cells ({', '.join(spec['impls'])}) at sizes "
        f"{sorted(set(measured['size'].tolist()))}; worst relative error {worst:.2g}"
    )
    return _result(
        part,
        worst,
        None,
        passed=bool(measured["check_passed"].astype(bool).all()),
        size=int(measured["size"].max()),
        devices={spec["device"]},
        models={f"{spec['device']}: {measured['device_model'].iloc[0]}"},
        detail=detail,
    )


EVALUATORS = {"ratio": eval_ratio, "trend": eval_trend, "growth": eval_growth, "check": eval_check}


def evaluate_part(view: RunView, part: dict[str, Any]) -> PartResult:
    try:
        return EVALUATORS[part.get("kind", "ratio")](view, part)
    except Missing as why:
        return PartResult(
            part["name"],
            NOT_RUN,
            article=part.get("article"),
            condition=part.get("holds_if", ""),
            why=part.get("why", ""),
            article_size=part.get("size"),
            detail=str(why),
            code=part.get("code", ""),
        )


def with_study(r: PartResult, study: StudyPart | None) -> PartResult:
    """The part judged again with the runs of a between-run study of its kind of machine
    (blockbench.judge.between_runs.judged): never narrower than the run's own interval."""
    if study is None or r.spread is None or study.runs < 2:
        return r
    low, high = (r.from_scale(x) for x in judged(r.spread, r.processes, study))
    return replace(r, ci_low=low, ci_high=high, outcome=decide(r.condition, low, high), study=study)


# What a verdict says in place of a bound where the run's intervals may not cover 95%; the
# report shortens a confidence to these words and says the reason once per run.
NO_CONFIDENCE = "no confidence stated"


def confidence(verdict_: str, parts: list[PartResult], unsupported: str = "") -> str:
    """A verdict's confidence: a bound that holds if each part's interval covers 95%, not
    the chance that the verdict is right. Each part's test of a one-sided rule errs at most
    2.5%; 'reproduced' needs every part, so it errs at most 2.5%; 'not_reproduced' needs any
    one, so a claim that holds draws it at most the sum of its parts' risks (Bonferroni's
    bound, stated rather than corrected), where a two-sided rule (`between a and b`) can
    refuse a value inside it on either side: 5%. `unsupported`: why the run's intervals may
    not cover 95% (unsupported_by), said instead of a bound. '' where a verdict rests on no
    interval (not run, inconclusive, checks alone)."""
    tested = [p for p in parts if p.ci_low is not None and not p.indicative]
    if not tested or verdict_ not in (REPRODUCED, NOT_REPRODUCED):
        return ""
    if unsupported:
        return f"{NO_CONFIDENCE}: {unsupported}"
    if verdict_ == REPRODUCED:
        return ">=97.5%"
    risk = sum(5.0 if region(p.condition).two_sided else 2.5 for p in tested)
    said = f">={100 - risk:g}%"
    return said if len(tested) == 1 else f"{said} (any of {len(tested)} parts)"


def unsupported_by(core_speed: str, studied: bool) -> str:
    """Why a run's intervals may not cover 95% ('' where they are supported): they cover the
    spread between one run's processes, which a between-run study of the host widens to its
    runs'; without one, only a host whose cores kept their speed through the run
    (measure.core_speed) is one where docs/statistics.md measured them covering 95%."""
    if studied or core_speed == STEADY:
        return ""
    if core_speed == UNKNOWN:
        return "the run's cores were not read for speed, and no between-run study judges it"
    return f"the run's cores read as {core_speed}, where one run's intervals cover less than 95%"


def verdict(parts: list[PartResult]) -> tuple[str, str]:
    """(verdict, reason): a failure at the article's setup refutes; anything unmeasured
    leaves the claim open; reproduced needs every part to hold at the article's setup."""
    failed = [p for p in parts if p.outcome == FAILS and not p.indicative]
    missing = [p for p in parts if p.outcome == NOT_RUN]
    open_ = [p for p in parts if p.outcome == INCONCLUSIVE or p.indicative]
    if failed:
        return NOT_REPRODUCED, "; ".join(
            f"{p.name} fails: {part_ci(p)} is outside {p.condition}" for p in failed
        )
    if missing:
        held = [p.name for p in parts if p.outcome == HOLDS]
        reason = "; ".join(f"{p.name}: {p.detail}" for p in missing)
        return NOT_RUN, reason + (f" (measured parts hold: {', '.join(held)})" if held else "")
    if open_:
        return INCONCLUSIVE, "; ".join(undecided(p) for p in open_)
    return REPRODUCED, ""
