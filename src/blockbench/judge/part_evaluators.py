"""Each part of a claim measured in one run and judged on the run's own interval: the
evaluators blockbench.judge.verdicts calls (and blockbench.judge.stopping, which sizes the
rounds a part needs). Rules from blockbench.judge.claim_rules.

A claim has parts; each part is one of
- `ratio`: sum of `num` cell times over sum of `den` cell times at one size;
- `trend`: the exponent of that ratio against size (> 0: it grows with size), and each
  step between consecutive sizes: one that falls keeps the trend from holding;
- `growth`: the exponent of a phase's time against the workload's amount of work;
- `check`: every named cell matched the float64 reference (and published values, if any).
Every measured value carries a 95% CI from its cells' processes (blockbench.judge.uncertainty);
a part that could not be measured is `not_run`, with the cells' own reason.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import pandas as pd

from blockbench.judge import uncertainty
from blockbench.judge.claim import (
    CHECK,
    FAILS,
    GROWTH,
    HOLDS,
    INCONCLUSIVE,
    RATIO,
    TREND,
    Part,
    Term,
    decide,
)
from blockbench.judge.part_result import NOT_RUN, PartResult, Step
from blockbench.judge.run_view import (
    STEIN_LOST,
    Missing,
    RunView,
    choose_size,
    measured_on,
    ratio_at,
)
from blockbench.judge.uncertainty import Spread, from_scale
from blockbench.records.spec import CONFIDENCE

# Each of a part's two looks is judged at this level, so that whichever it stops at errs at
# most 2.5% a side over both (Bonferroni; blockbench.judge.stopping).
LOOK_CONFIDENCE = 1 - (1 - CONFIDENCE) / 2


# A check's rule, in the words its row shows: its cells' own correctness checks
CHECKED = "every cell passes its check"


def _result(
    part: Part,
    value: float,
    spread: Spread | None,
    passed: bool | None = None,
    scale: str = "log",
    **fields: Any,
) -> PartResult:
    """A measured part, judged on this run's own CI (a between-run study may judge it again:
    blockbench.judge.verdicts.with_study), or on `passed` (checks). `spread` is on the
    part's scale."""
    if spread is None:
        low = high = None
        outcome = HOLDS if passed else FAILS
    else:
        low, high = (from_scale(x, scale) for x in spread.interval())
        outcome = decide(part.holds_if, low, high)
    return PartResult(
        part.name,
        outcome,
        measured=float(value),
        spread=spread,
        scale=scale,
        ci_low=low,
        ci_high=high,
        run_low=low,
        run_high=high,
        article=part.article,
        condition=part.holds_if or CHECKED,
        why=part.why,
        article_size=part.size,
        code=part.code,
        **fields,
    )


def eval_ratio(view: RunView, part: Part) -> PartResult:
    terms = part.terms
    size = choose_size(view, terms, part.size)
    got = ratio_at(view, part.num, part.den, size)
    return _result(
        part,
        got.value,
        got.log,
        size=size,
        devices=part.devices,
        models=got.models,
        n_min=got.n_min,
        warnings=got.warnings,
        samples=got.samples,
        detail=got.how,
        processes=got.processes,
    )


def eval_trend(view: RunView, part: Part) -> PartResult:
    terms = part.terms
    sizes = sorted(set.intersection(*(view.sizes_ok(t) for t in terms)))
    if len(sizes) < 3:
        lacking = [t for t in terms if len(view.sizes_ok(t)) < 3]
        if lacking and not view.sizes_ok(lacking[0]):
            raise Missing(view.why_missing(lacking[0]))
        raise Missing(f"needs 3 sizes where every term measured fine, has {sizes}")
    each = [ratio_at(view, part.num, part.den, s) for s in sizes]
    slope = uncertainty.log_slope(sizes, [m.log for m in each])
    between = steps(sizes, [m.log for m in each])
    detail = (
        f"ratio {each[0].value:.3g} at {sizes[0]} -> {each[-1].value:.3g} at {sizes[-1]}; "
        f"exponent of the ratio against size over {sizes}; "
        f"steps ({between[0].level:.1%} intervals): {'; '.join(map(str, between))}"
    )
    fitted = _result(
        part,
        slope.estimate,
        slope,
        scale="linear",
        size=sizes[-1],
        devices=part.devices,
        models=each[-1].models,
        detail=detail,
        n_min=min(m.n_min for m in each),
        warnings=sorted({w for m in each for w in m.warnings}),
        processes=min(m.processes for m in each),
        steps=between,
    )
    return replace(fitted, outcome=fitted.stepwise(fitted.outcome))


def steps(sizes: Sequence[int], logs: Sequence[Spread]) -> tuple[Step, ...]:
    """Each step between consecutive sizes: the log of the larger size's speedup over the
    smaller's (sizes are independent, as the fit takes them), on its central interval at
    1 - (1 - CONFIDENCE) / k for k steps. Together the k intervals cover every true step
    at CONFIDENCE (Bonferroni), so where every true step grows or is flat a part reads
    some step as falling at most (1 - CONFIDENCE) / 2 of the time: one part's one-sided
    risk (docs/statistics.md, "A trend's steps")."""
    level = 1 - (1 - CONFIDENCE) / (len(sizes) - 1)
    pairs = pairwise(zip(sizes, logs, strict=True))
    return tuple(Step(a, b, big.plus(small.times(-1.0)), level) for (a, small), (b, big) in pairs)


@dataclass
class Growth:
    """A phase's time against the workload's amount of work, fitted as a power law."""

    rows: pd.DataFrame  # the cells fitted, by size: size, work, median_s, n_min, device_model
    exponent: Spread
    processes: int


def growth_fit(view: RunView, term: Term) -> Growth:
    """The exponent of `term`'s time against work over every size measured (at least 3),
    its uncertainty from each size's own."""
    rows = view.ok_rows(term).sort_values("size")
    if len(rows) < 3:
        if rows.empty:
            raise Missing(view.why_missing(term))
        raise Missing(
            f"needs 3 sizes of {term.workload}/{term.impl} {term.phase}, "
            f"has {sorted(rows['size'].tolist())}"
        )
    times = [view.time_of([term], s) for s in rows["size"]]
    slope = uncertainty.log_slope(rows["work"].astype(float).tolist(), [t for t, _ in times])
    return Growth(rows, slope, min(n for _, n in times))


def eval_growth(view: RunView, part: Part) -> PartResult:
    term = part.of
    assert term is not None  # the parser gives every growth its term
    fit = growth_fit(view, term)
    rows = fit.rows
    detail = (
        f"{term.phase} time ~ work^{fit.exponent.estimate:.2f}: the slope over the sizes "
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
        devices=part.devices,
        models={measured_on(term.device, rows.iloc[0])},
        detail=detail,
        n_min=int(rows["n_min"].min()),
        processes=fit.processes,
        warnings=[
            f"{term.impl} at {s}: {STEIN_LOST}" for s in rows["size"] if view.stein_lost(term, s)
        ],
    )


def eval_check(view: RunView, part: Part) -> PartResult:
    first, impls = part.checked[0], [t.impl for t in part.checked]
    d = view.df
    rows = d[
        (d["device"] == first.device) & (d["workload"] == first.workload) & d["impl"].isin(impls)
    ].drop_duplicates(["impl", "size"])
    measured = rows[rows["check_passed"].notna()]
    if measured.empty or set(measured["impl"]) != set(impls):
        absent = [t for t in part.checked if t.impl not in set(measured["impl"])]
        raise Missing(view.why_missing(absent[0] if absent else first))
    worst = float(measured["max_rel_err"].max())
    detail = (
        f"{len(measured)} cells ({', '.join(impls)}) at sizes "
        f"{sorted(set(measured['size'].tolist()))}; worst relative error {worst:.2g}"
    )
    return _result(
        part,
        worst,
        None,
        passed=bool(measured["check_passed"].astype(bool).all()),
        size=int(measured["size"].max()),
        devices=part.devices,
        models={measured_on(first.device, measured.iloc[0])},
        detail=detail,
    )


EVALUATORS = {RATIO: eval_ratio, TREND: eval_trend, GROWTH: eval_growth, CHECK: eval_check}


def evaluate_part(view: RunView, part: Part) -> PartResult:
    """A part judged in one look, or, where rounds are added on demand and it is a ratio of
    one t term with no study, in two at LOOK_CONFIDENCE: its first stage, then every round
    (the ordinary t at max_rounds, a count fixed in advance; Stein's where cut short). The
    second look judges a part its first look decided too where its cells took rounds for
    another part: the bound covers whichever look is read, and a ratio keeps one value."""
    whole = _evaluate(view, part)
    s = whole.spread
    if not view.max_rounds or view.study or not part.one_ratio:
        return whole
    if s is None or len(s.terms) != 1 or whole.indicative:
        return whole
    first = _looked(_evaluate(view.first_stage(), part), part, 1)
    if first.outcome != INCONCLUSIVE and first.processes == whole.processes:
        return first
    at_cap = whole.processes >= view.max_rounds
    return _looked(_evaluate(view.all_rounds(), part) if at_cap else whole, part, 2)


def _looked(r: PartResult, part: Part, look: int) -> PartResult:
    """`r` decided on its interval at LOOK_CONFIDENCE (`decided_low`, `decided_high`). Its
    95% CI and its spread stay as they are: what is shown beside other parts' 95% CIs, and
    the standard error that pooling and a study read, is never the wider look's."""
    if r.spread is None or len(r.spread.terms) != 1:
        return replace(r, look=look)
    low, high = (from_scale(x, r.scale) for x in r.spread.interval(LOOK_CONFIDENCE))
    outcome = decide(part.holds_if, low, high)
    return replace(r, outcome=outcome, look=look, decided_low=low, decided_high=high)


def _evaluate(view: RunView, part: Part) -> PartResult:
    try:
        return EVALUATORS[part.kind](view, part)
    except Missing as why:
        return PartResult(
            part.name,
            NOT_RUN,
            article=part.article,
            condition=part.holds_if,
            why=part.why,
            article_size=part.size,
            detail=str(why),
            code=part.code,
        )
