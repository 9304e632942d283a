"""Where a claim becomes its verdict: the catalog's claims (blockbench.judge.claim_rules)
judged run by run, each part, then each claim's verdict and its confidence; runs on the same
hardware pooled; the claims and parts tables that every later step reads, with the words
they say it in (where runs on the same hardware disagree: blockbench.present.run_comparison).

Each part is measured and judged on the run's own 95% CI (blockbench.judge.part_evaluators),
then again with the spread of a between-run study's runs where one exists for the run's kind
of machine (blockbench.judge.studies, .between_runs): it `holds` when its whole CI satisfies
its rule, `fails` when none of it does, and is `inconclusive` when the CI straddles the
rule's boundary. Measured at another size than the article's, its outcome is only
indicative. The claim's verdict follows from its parts (`verdict`).

One row per (run, claim) in the claims table, one per (run, claim, part) in the parts
table; pooled columns repeat on every run of a pool so that each row reads on its own.
"""

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge.between_runs import StudyPart, judged
from blockbench.judge.claim import FAILS, HOLDS, INCONCLUSIVE, Claim, Part, decide, region
from blockbench.judge.part_evaluators import LOOK_CONFIDENCE, evaluate_part
from blockbench.judge.part_result import NOT_REPRODUCED, NOT_RUN, REPRODUCED, PartResult
from blockbench.judge.pooling import PooledPart, pool_groups, pool_part
from blockbench.judge.run_view import RunView, collapse
from blockbench.judge.studies import MIN_PROCESS_VALUES, Study
from blockbench.judge.uncertainty import from_scale, on_scale
from blockbench.measure.core_speed import STEADY, UNKNOWN
from blockbench.records.machines import Kind
from blockbench.records.spec import CONFIDENCE


def judge(
    cells: pd.DataFrame,
    processes: pd.DataFrame,
    claims: list[Claim],
    studies: dict[Kind, Study] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(claims table, parts table): one row per (run, claim) with the figures of the part
    its verdict rests on as the headline (`headline`), and one per (run, claim, part)."""
    views = RunView.each(cells, processes, studies)
    judged_parts = {(v.run_label, c.id): _claim_parts(v, c) for v in views for c in claims}
    pools = _pools(views, claims, judged_parts)
    rows, part_rows = [], []
    for view in views:
        for claim in claims:
            parts = judged_parts[(view.run_label, claim.id)]
            pool = pools.get((view.run_label, claim.id))
            rows.append(_claim_row(view, claim, parts, pool))
            part_rows += _part_rows(view, claim, parts, pool)
    return pd.DataFrame(rows), pd.DataFrame(part_rows)


def judge_part(view: RunView, claim_id: str, part: Part) -> PartResult:
    """One part of a claim measured and judged on the run's own interval, then with the
    between-run study of the run's kind of machine where one applies."""
    study = view.study.part(claim_id, part.name) if view.study else None
    return with_study(evaluate_part(view, part), study)


def _claim_parts(view: RunView, claim: Claim) -> list[PartResult]:
    """The claim's parts judged; one not run that the run could have measured says so where
    the claim needs a device the run lacks (the grid measures none of it: `partial_claims`)."""
    parts = [judge_part(view, claim.id, p) for p in claim.parts]
    named = [p.devices for p in claim.parts]
    if not (lacks := sorted(set().union(*named) - view.devices)):
        return parts
    gone = " and ".join(f"{d} not in this run" for d in lacks)
    why = f"; its claim also needs {gone} (partial_claims: true measures it)"
    return [
        replace(r, detail=r.detail + why) if r.outcome == NOT_RUN and d <= view.devices else r
        for r, d in zip(parts, named, strict=True)
    ]


def with_study(r: PartResult, study: StudyPart | None) -> PartResult:
    """The part judged again with the runs of a between-run study of its kind of machine
    (blockbench.judge.between_runs.judged): never narrower than the run's own interval."""
    if study is None or r.spread is None or study.runs < 2:
        return r
    low, high = (from_scale(x, r.scale) for x in judged(r.spread, r.processes, study))
    outcome = r.stepwise(decide(r.condition, low, high))  # a falling step still refuses it
    return replace(r, ci_low=low, ci_high=high, outcome=outcome, study=study)


def verdict(parts: list[PartResult]) -> tuple[str, str]:
    """(verdict, reason): a failure at the article's setup refutes; anything unmeasured
    leaves the claim open; reproduced needs every part to hold at the article's setup."""
    failed = [p for p in parts if p.outcome == FAILS and not p.indicative]
    missing = [p for p in parts if p.outcome == NOT_RUN]
    open_ = [p for p in parts if p.outcome == INCONCLUSIVE or p.indicative]
    if failed:
        return NOT_REPRODUCED, "; ".join(
            f"{p.name} fails: {decided_ci(p)} is outside {p.condition}" for p in failed
        )
    if missing:
        held = [p.name for p in parts if p.outcome == HOLDS]
        reason = "; ".join(f"{p.name}: {p.detail}" for p in missing)
        return NOT_RUN, reason + (f" (measured parts hold: {', '.join(held)})" if held else "")
    if open_:
        return INCONCLUSIVE, "; ".join(undecided(p) for p in open_)
    looked = [p for p in parts if p.decided_low is not None]
    return REPRODUCED, "; ".join(f"{p.name} holds on {decided_ci(p)}" for p in looked)


def headline(verdict_: str, parts: list[PartResult]) -> PartResult:
    """The part a claim's verdict rests on, whose figures its row shows: for not_reproduced
    its first part that fails at the article's setup; for inconclusive its first undecided
    one; for not_run its first part not run (what it lacks; the parts that ran are said in
    words, so that no part's value reads as the claim's); for reproduced the part that came
    closest to failing (`margin`), since every part holds and the weakest is what the
    verdict is worth."""
    decides = {
        NOT_REPRODUCED: lambda p: p.outcome == FAILS and not p.indicative,
        INCONCLUSIVE: lambda p: p.outcome == INCONCLUSIVE or p.indicative,
        NOT_RUN: lambda p: p.outcome == NOT_RUN,
    }
    if verdict_ == REPRODUCED:
        return min(parts, key=margin)  # the first of equals
    return next(filter(decides.get(verdict_, bool), parts), parts[0])


def margin(p: PartResult) -> float:
    """How far inside its rule a part's interval lies: the gap from the nearer end of the
    interval it was decided on to the rule's nearer boundary, in half-widths of that
    interval, on the part's scale (a ratio's log). In half-widths because a ratio (on the
    log scale) and an exponent (as it is) have no common unit, and the gap over the
    half-width is the one the part's own test reads: the smallest is the part whose
    interval came closest to the rule's boundary. inf without an interval (a check)."""
    low, high = p.bounds
    if low is None or high is None or p.measured is None:
        return math.inf
    rule = region(p.condition)
    log = p.scale == "log"
    bottom, top = (
        -math.inf if log and b <= 0 else on_scale(b, p.scale) for b in (rule.low, rule.high)
    )
    mid, low, high = (on_scale(x, p.scale) for x in (p.measured, low, high))
    gaps = [(low - bottom) / (mid - low) if mid > low else math.inf]
    gaps.append((top - high) / (high - mid) if high > mid else math.inf)
    return min(gaps)


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
    return said if len(tested) == 1 else f"{said}, any of {len(tested)} parts"


def unsupported_by(core_speed: str, study: Study | None, parts: list[PartResult]) -> str:
    """Why a run's intervals may not cover 95% ('' where they are supported): they cover the
    spread between one run's processes, which a between-run study of the host widens to its
    runs'; only on a host whose cores kept their speed through the run (measure.core_speed)
    did docs/statistics.md's simulations find one run's own intervals covering 95%, and a
    study of too few process values on a host whose cores change speed (`small_study`)
    covered 0.90 there."""
    if core_speed == STEADY:
        return ""
    tested = [p for p in parts if p.run_low is not None and not p.indicative]
    if study is None or any(p.study is None for p in tested):
        if core_speed == UNKNOWN:
            return "the run's cores were not read for speed, and no between-run study judges it"
        return (
            f"the run's cores read as {core_speed}, where one run's intervals cover less than 95%"
        )
    return small_study(study, tested)


def small_study(study: Study | None, parts: list[PartResult]) -> str:
    """Why intervals judged with a study may not cover 95% ('' where they are supported):
    on a host whose cores change speed, a study under MIN_PROCESS_VALUES process values
    may hold no slow process, and simulated there its intervals covered 0.90 (0.096 missed
    on one side), not the 95% a bound needs."""
    if study is None or study.core_speed == STEADY:
        return ""
    if not any(p.study and study.too_small(p.study) for p in parts if not p.indicative):
        return ""
    return (
        f"judged with a between-run study of under {MIN_PROCESS_VALUES} process values on a "
        "host whose cores change speed, whose intervals covered 0.90 in simulation"
    )


@dataclass(frozen=True)
class Pool:
    """One claim pooled over the runs of one kind of machine and JAX release."""

    parts: list[PooledPart]
    verdict: str  # '' where a part's runs were too few to pool
    runs: list[str]
    unsupported: str = ""  # why its intervals may not cover 95% (small_study; '': none)


def _pools(
    views: list[RunView],
    claims: list[Claim],
    judged_parts: dict[tuple[str, str], list[PartResult]],
) -> dict[tuple[str, str], Pool]:
    """Per (run, claim): its pool, where the run has company on the same hardware: each part
    pooled over the runs (blockbench.judge.pooling), and the verdict the pooled parts give,
    none ('') where a part's runs were too few to pool, whose runs' own verdicts then stand."""
    pools = {}
    for members in pool_groups(views):
        labels = [v.run_label for v in members]
        study = next((v.study for v in members if v.study), None)
        for claim in claims:
            per_run = [judged_parts[(label, claim.id)] for label in labels]
            parts = [pool_part(list(runs)) for runs in zip(*per_run, strict=True)]
            results = [p.result for p in parts]
            said = "" if any(p.too_few for p in parts) else verdict(results)[0]
            pool = Pool(parts, said, labels, small_study(study, results))
            for label in labels:
                pools[(label, claim.id)] = pool
    return pools


def _claim_row(
    view: RunView, claim: Claim, parts: list[PartResult], pool: Pool | None
) -> dict[str, Any]:
    """One claim in one run: its verdict, its confidence, and the part it rests on as the
    headline (`metric` names it)."""
    verdict_, reason = verdict(parts)
    unsupported = unsupported_by(view.core_speed, view.study, parts)
    head = headline(verdict_, parts)
    return {
        **_keys(view, claim),
        "slug": claim.slug,
        "source": claim.source,
        "verdict": verdict_,
        "confidence": confidence(verdict_, parts, unsupported),
        # the one to quote: the pooled verdict where runs are pooled, else its own
        "primary_verdict": pool.verdict if pool and pool.verdict else verdict_,
        **_interval(head),
        "between_run": between_note(view, parts),
        **_pooled_columns(pool, _position(parts, head), claim=True),
        "article": head.article,
        "metric": head.name,
        "condition": head.condition,
        "why": head.why,
        "device": "+".join(sorted(set().union(*(p.devices for p in parts)))),
        "device_model": "; ".join(sorted(set().union(*(p.models for p in parts)))),
        # the kind of machine runs are pooled by (judge.studies.Kind)
        "machine": view.kind.describe() if view.kind else "",
        "size": head.size,
        "article_size": head.article_size,
        "setup": head.setup,
        "n_min": min((p.n_min for p in parts if p.n_min is not None), default=None),
        "parts": " | ".join(map(part_line, parts)),
        "pooled_parts": " | ".join(part_line(p.result) for p in pool.parts) if pool else "",
        "warnings": "; ".join(collapse(w for p in parts for w in p.warnings)),
        "samples": "; ".join(dict.fromkeys(s for p in parts for s in p.samples)),
        "note": "; ".join(x for x in (reason, claim.note) if x),
        "statement": claim.statement,
        "article_figures": claim.article,
    }


def _part_rows(
    view: RunView, claim: Claim, parts: list[PartResult], pool: Pool | None
) -> list[dict[str, Any]]:
    """Each part of one claim in one run, beside its pooled figures."""
    return [
        {
            **_keys(view, claim),
            "part": r.name,
            "device_model": "; ".join(sorted(r.models)),
            "kind": part.kind,
            "size": r.size,
            "article_size": r.article_size,
            "indicative": r.indicative,
            "setup": r.setup,
            **_interval(r),
            "article": r.article,
            "condition": r.condition,
            "why": r.why,
            "outcome": r.outcome,
            **_pooled_columns(pool, i, claim=False),
            "n_min": r.n_min,
            "code": r.code,
            "warnings": "; ".join(collapse(r.warnings)),
            "samples": "; ".join(r.samples),
            "detail": r.detail,
        }
        for i, (part, r) in enumerate(zip(claim.parts, parts, strict=True))
    ]


def _keys(view: RunView, claim: Claim) -> dict[str, Any]:
    return {
        "run_label": view.run_label,
        "jax_version": view.jax_version,
        "claim_id": claim.id,
        "catalog": claim.catalog,
    }


def _interval(r: PartResult) -> dict[str, Any]:
    """A part's value, its 95% interval (judged with a study where one applies), the
    interval it was decided on where that is another (a look's, at LOOK_CONFIDENCE), and
    the run's own, with the run's own uncertainty: the t terms on the part's scale, whose
    root sum of squares is its standard error, and the processes (rounds) behind it, which
    pooling and a study read back (blockbench.judge.pooling, .study_build)."""
    measured = r.spread is not None and r.run_low is not None
    return {
        "measured": r.measured,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "decided_low": r.decided_low,
        "decided_high": r.decided_high,
        "run_ci_low": r.run_low,
        "run_ci_high": r.run_high,
        "run_spread": r.spread.to_text() if measured else None,
        "processes": r.processes if measured else None,
        "scale": r.scale,
    }


def _position(parts: list[PartResult], part: PartResult) -> int:
    return next(i for i, p in enumerate(parts) if p is part)


def _pooled_columns(pool: Pool | None, index: int, claim: bool) -> dict[str, Any]:
    """Part `index`'s pooled figures; for a claim's row (`claim`), those of the part the
    pooled verdict rests on (`headline`; part `index`, the run's own headline, where the
    runs were too few to pool), named by `pooled_metric`, with the pooled verdict."""
    if pool is None:
        empty = dict.fromkeys(("pooled_value", "pooled_ci_low", "pooled_ci_high", "i2", "tau"))
        text = ("pool", "pooled_verdict", "pooled_confidence", "pooled_detail", "pooled_metric")
        return {**empty, **dict.fromkeys(text, ""), "runs_pooled": 1}
    results = [p.result for p in pool.parts]
    if claim and pool.verdict:
        index = _position(results, headline(pool.verdict, results))
    part = pool.parts[index]
    return {
        "pool": " ".join(pool.runs),  # the runs pooled, by label
        "runs_pooled": len(pool.runs),
        "pooled_metric": part.result.name,
        "pooled_value": part.result.measured,
        "pooled_ci_low": part.result.ci_low,
        "pooled_ci_high": part.result.ci_high,
        "pooled_verdict": pool.verdict if claim else part.result.outcome,
        "pooled_confidence": confidence(pool.verdict, results, pool.unsupported) if claim else "",
        "i2": None if math.isnan(part.i2) else part.i2,
        "tau": None if math.isnan(part.tau) else part.tau,
        "pooled_detail": part.result.detail,
    }


# ---- the words: values with their intervals, and why a part or a claim is undecided, as the
# tables, the report and the figures print them


def fmt(x: float | None) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:.3g}"


def value_ci(value: Any, low: Any, high: Any) -> str:
    """`2.1 [1.44, 3.26]`, the value alone where it has no CI, '' where nothing."""
    if pd.isna(value):
        return ""
    if pd.isna(low):
        return fmt(value)
    return f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"


def part_ci(p: PartResult) -> str:
    return value_ci(p.measured, p.ci_low, p.ci_high)


def decided_ci(p: PartResult) -> str:
    """'its 95% CI 2.1 [1.44, 3.26]': the interval a part was decided on, by its level (a
    look's, 97.5%, where its 95% CI is not the one: PartResult.decided_low)."""
    if p.decided_low is None:
        return f"its {CONFIDENCE:.0%} CI {part_ci(p)}"
    return f"its {LOOK_CONFIDENCE:.1%} interval {value_ci(p.measured, *p.bounds)}"


def undecided(p: PartResult) -> str:
    if p.indicative:
        return f"{p.name} {p.outcome} but was {p.setup}: indicative only"
    if p.falling and decide(p.condition, *p.bounds) == HOLDS:
        falls = "; ".join(map(str, p.falling))
        return f"{p.name}: {decided_ci(p)} meets {p.condition}, but a step falls: {falls}"
    return f"{p.name}: {decided_ci(p)} straddles the rule {p.condition}"


def part_line(p: PartResult) -> str:
    return (
        f"{p.name}: {part_ci(p) or '-'} vs article {fmt(p.article) or '-'}"
        f" [{p.condition}] -> {p.outcome}"
        + (f" on {decided_ci(p)}" if p.decided_low is not None else "")
        + (f", {p.setup}" if p.setup else "")
        + (f" ({p.detail})" if p.detail else "")
    )


# What a run's own interval covers: the spread between its worker processes, on this host in
# this hour; not what another day, host or build would measure (docs/statistics.md).
RUN_ONLY = "covers this run's processes only"


def between_note(view: RunView, parts: list[PartResult]) -> str:
    """What a run's intervals cover, and which between-run study judged them and why, in the
    words claims.md and the report use ('' where the claim has no interval in this run: a
    check, or nothing measured)."""
    if all(p.run_low is None for p in parts):
        return ""
    if view.kind is None:
        return f"{RUN_ONLY}: its cells do not name their machine"
    if view.study is None:
        why = view.study_note or f"no between-run study of this host ({view.kind.describe()})"
        return f"{RUN_ONLY}: {why}"
    studied = [p.study for p in parts if p.study is not None]
    if not studied:
        return f"{RUN_ONLY}: the study of this host lacks this claim"
    study = view.study
    said = f"covers {study.covers()} (study {Path(study.source).name or 'given'})"
    if small_study(study, parts):
        said += (
            f"; under {MIN_PROCESS_VALUES} process values (runs x processes): on a host "
            "whose cores change speed the study may hold no slow process"
        )
    return said
