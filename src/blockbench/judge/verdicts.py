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
from blockbench.judge.claim_rules import FAILS, HOLDS, INCONCLUSIVE, cells_named, decide, region
from blockbench.judge.part_evaluators import evaluate_part
from blockbench.judge.part_result import NOT_REPRODUCED, NOT_RUN, REPRODUCED, PartResult
from blockbench.judge.pooling import PooledPart, pool_groups, pool_part
from blockbench.judge.run_view import RunView, collapse
from blockbench.judge.studies import MIN_PROCESS_VALUES, Kind, Study
from blockbench.judge.uncertainty import from_scale
from blockbench.measure.core_speed import STEADY, UNKNOWN


def judge(
    cells: pd.DataFrame,
    processes: pd.DataFrame,
    claims: list[dict[str, Any]],
    studies: dict[Kind, Study] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(claims table, parts table): one row per (run, claim) with the first part's figures
    as the headline, and one per (run, claim, part)."""
    views = RunView.each(cells, processes, studies)
    judged_parts = {(v.run_label, c["id"]): _claim_parts(v, c) for v in views for c in claims}
    pools = _pools(views, claims, judged_parts)
    rows, part_rows = [], []
    for view in views:
        for claim in claims:
            parts = judged_parts[(view.run_label, claim["id"])]
            pool = pools.get((view.run_label, claim["id"]))
            rows.append(_claim_row(view, claim, parts, pool))
            part_rows += _part_rows(view, claim, parts, pool)
    return pd.DataFrame(rows), pd.DataFrame(part_rows)


def judge_part(view: RunView, claim_id: str, part: dict[str, Any]) -> PartResult:
    """One part of a claim measured and judged on the run's own interval, then with the
    between-run study of the run's kind of machine where one applies."""
    study = view.study.part(claim_id, part["name"]) if view.study else None
    return with_study(evaluate_part(view, part), study)


def _claim_parts(view: RunView, claim: dict[str, Any]) -> list[PartResult]:
    """The claim's parts judged; one not run that the run could have measured says so where
    the claim needs a device the run lacks (the grid measures none of it: `partial_claims`)."""
    parts = [judge_part(view, claim["id"], p) for p in claim["parts"]]
    named = [{t["device"] for t in cells_named(p)} for p in claim["parts"]]
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
    return replace(r, ci_low=low, ci_high=high, outcome=decide(r.condition, low, high), study=study)


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


@dataclass(frozen=True)
class Pool:
    """One claim pooled over the runs of one kind of machine and JAX release."""

    parts: list[PooledPart]
    verdict: str  # '' where a part's runs were too few to pool
    runs: list[str]


def _pools(
    views: list[RunView],
    claims: list[dict[str, Any]],
    judged_parts: dict[tuple[str, str], list[PartResult]],
) -> dict[tuple[str, str], Pool]:
    """Per (run, claim): its pool, where the run has company on the same hardware: each part
    pooled over the runs (blockbench.judge.pooling), and the verdict the pooled parts give,
    none ('') where a part's runs were too few to pool, whose runs' own verdicts then stand."""
    pools = {}
    for members in pool_groups(views):
        labels = [v.run_label for v in members]
        for claim in claims:
            per_run = [judged_parts[(label, claim["id"])] for label in labels]
            parts = [pool_part(list(runs)) for runs in zip(*per_run, strict=True)]
            said = "" if any(p.too_few for p in parts) else verdict([p.result for p in parts])[0]
            for label in labels:
                pools[(label, claim["id"])] = Pool(parts, said, labels)
    return pools


def _claim_row(
    view: RunView, claim: dict[str, Any], parts: list[PartResult], pool: Pool | None
) -> dict[str, Any]:
    """One claim in one run: its verdict, its confidence, and its first part as the headline."""
    verdict_, reason = verdict(parts)
    unsupported = unsupported_by(view.core_speed, view.study is not None)
    head = parts[0]
    return {
        **_keys(view, claim),
        "slug": claim["slug"],
        "source": claim["source"],
        "verdict": verdict_,
        "confidence": confidence(verdict_, parts, unsupported),
        # the one to quote: the pooled verdict where runs are pooled, else its own
        "primary_verdict": pool.verdict if pool and pool.verdict else verdict_,
        **_interval(head),
        "between_run": between_note(view, parts),
        **_pooled_columns(pool),
        "article": head.article,
        "metric": head.name,
        "condition": head.condition,
        "why": head.why,
        "device": "+".join(sorted(set().union(*(p.devices for p in parts))))
        or "+".join(sorted(claim.get("devices", []))),
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
        "note": "; ".join(x for x in (reason, claim.get("note", "")) if x),
        "statement": claim["statement"],
        "article_figures": claim["article"],
    }


def _part_rows(
    view: RunView, claim: dict[str, Any], parts: list[PartResult], pool: Pool | None
) -> list[dict[str, Any]]:
    """Each part of one claim in one run, beside its pooled figures."""
    return [
        {
            **_keys(view, claim),
            "part": r.name,
            "device_model": "; ".join(sorted(r.models)),
            "kind": part.get("kind", "ratio"),
            "size": r.size,
            "article_size": r.article_size,
            "indicative": r.indicative,
            "setup": r.setup,
            **_interval(r),
            "article": r.article,
            "condition": r.condition,
            "why": r.why,
            "outcome": r.outcome,
            **_pooled_columns(pool, i),
            "n_min": r.n_min,
            "code": r.code,
            "warnings": "; ".join(collapse(r.warnings)),
            "samples": "; ".join(r.samples),
            "detail": r.detail,
        }
        for i, (part, r) in enumerate(zip(claim["parts"], parts, strict=True))
    ]


def _keys(view: RunView, claim: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_label": view.run_label,
        "jax_version": view.jax_version,
        "claim_id": claim["id"],
        "catalog": claim.get("catalog", ""),
    }


def _interval(r: PartResult) -> dict[str, Any]:
    """A part's value, its judged interval and the run's own, with the run's own uncertainty:
    the t terms on the part's scale and the processes (rounds) behind it, which a study
    reads back (blockbench.judge.study_making)."""
    measured = r.spread is not None and r.run_low is not None
    return {
        "measured": r.measured,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "run_ci_low": r.run_low,
        "run_ci_high": r.run_high,
        "run_spread": r.spread.to_text() if measured else None,
        "processes": r.processes if measured else None,
        "scale": r.scale,
    }


def _pooled_columns(pool: Pool | None, index: int = 0) -> dict[str, Any]:
    if pool is None:
        empty = dict.fromkeys(("pooled_value", "pooled_ci_low", "pooled_ci_high", "i2", "tau"))
        text = dict.fromkeys(("pool", "pooled_verdict", "pooled_confidence", "pooled_detail"), "")
        return {**empty, **text, "runs_pooled": 1}
    part = pool.parts[index]
    return {
        "pool": " ".join(pool.runs),  # the runs pooled, by label
        "runs_pooled": len(pool.runs),
        "pooled_value": part.result.measured,
        "pooled_ci_low": part.result.ci_low,
        "pooled_ci_high": part.result.ci_high,
        "pooled_verdict": pool.verdict if index == 0 else part.result.outcome,
        "pooled_confidence": confidence(pool.verdict, [p.result for p in pool.parts])
        if index == 0
        else "",
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


def undecided(p: PartResult) -> str:
    if p.indicative:
        return f"{p.name} {p.outcome} but was {p.setup}: indicative only"
    return f"{p.name}: its 95% CI {part_ci(p)} straddles the rule {p.condition}"


def part_line(p: PartResult) -> str:
    return (
        f"{p.name}: {part_ci(p) or '-'} vs article {fmt(p.article) or '-'}"
        f" [{p.condition}] -> {p.outcome}"
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
    if study.core_speed != "steady" and any(study.too_small(s) for s in studied):
        said += (
            f"; under {MIN_PROCESS_VALUES} process values (runs x processes): on a host "
            "whose cores change speed the study may hold no slow process"
        )
    return said
