"""The claims tables: every run judged (with the between-run study of its kind of machine
where one exists), runs on the same hardware pooled, and where runs disagree.

One row per (run, claim) in the claims table, one per (run, claim, part) in the parts
table; pooled columns repeat on every run of a pool so that each row reads on its own.
"""

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from blockbench.judge.claims import (
    confidence,
    evaluate_part,
    unsupported_by,
    verdict,
    with_study,
)
from blockbench.judge.part_result import PartResult
from blockbench.judge.pooling import PooledPart, pool_claim, pool_groups
from blockbench.judge.run_view import RunView, collapse
from blockbench.judge.studies import Kind, Study
from blockbench.judge.wording import between_note, part_line, value_ci


@dataclass(frozen=True)
class Pool:
    """One claim pooled over the runs of one kind of machine and JAX release."""

    parts: list[PooledPart]
    verdict: str
    reason: str
    runs: list[str]

    @property
    def primary(self) -> bool:
        """The pooled verdict is the one to quote unless a part was too few runs to pool
        (and then there is none)."""
        return bool(self.verdict)


def _judge_runs(
    views: list[RunView], claims: list[dict[str, Any]]
) -> dict[tuple[str, str], list[PartResult]]:
    judged = {}
    for view in views:
        for claim in claims:
            parts = []
            for part in claim["parts"]:
                result = evaluate_part(view, part)
                stored = view.study.part(claim["id"], part["name"]) if view.study else None
                parts.append(with_study(result, stored))
            judged[(view.run_label, claim["id"])] = parts
    return judged


def _pools(
    views: list[RunView],
    claims: list[dict[str, Any]],
    judged: dict[tuple[str, str], list[PartResult]],
) -> dict[tuple[str, str], Pool]:
    """Per (run, claim): its pool, where the run has company on the same hardware."""
    pools = {}
    for members in pool_groups(views):
        labels = [v.run_label for v in members]
        for claim in claims:
            parts, verdict_, reason = pool_claim([judged[(label, claim["id"])] for label in labels])
            for label in labels:
                pools[(label, claim["id"])] = Pool(parts, verdict_, reason, labels)
    return pools


def _pooled_columns(pool: Pool | None, index: int = 0) -> dict[str, Any]:
    if pool is None:
        return {
            "pool": "",
            "runs_pooled": 1,
            "pooled_value": None,
            "pooled_ci_low": None,
            "pooled_ci_high": None,
            "pooled_verdict": "",
            "pooled_confidence": "",
            "i2": None,
            "tau": None,
            "pooled_detail": "",
        }
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


def _own(r: PartResult) -> dict[str, Any]:
    """A run's own uncertainty as table cells: the t terms on the part's scale and the
    processes (rounds) behind it, which pooling reads back (blockbench.judge.pooling)."""
    measured = r.spread is not None and r.run_low is not None
    return {
        "run_spread": r.spread.to_text() if measured else None,
        "processes": r.processes if measured else None,
    }


def judge(
    cells: pd.DataFrame,
    processes: pd.DataFrame,
    claims: list[dict[str, Any]],
    studies: dict[Kind, Study] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(claims table, parts table): one row per (run, claim) with the first part's figures
    as the headline, and one per (run, claim, part)."""
    views = RunView.each(cells, processes, studies)
    judged = _judge_runs(views, claims)
    pools = _pools(views, claims, judged)
    rows, part_rows = [], []
    for view in views:
        for claim in claims:
            parts = judged[(view.run_label, claim["id"])]
            pool = pools.get((view.run_label, claim["id"]))
            verdict_, reason = verdict(parts)
            unsupported = unsupported_by(view.core_speed, view.study is not None)
            head = parts[0]
            rows.append(
                {
                    "run_label": view.run_label,
                    "jax_version": view.jax_version,
                    "claim_id": claim["id"],
                    "catalog": claim.get("catalog", ""),
                    "slug": claim["slug"],
                    "source": claim["source"],
                    "verdict": verdict_,
                    "confidence": confidence(verdict_, parts, unsupported),
                    # the one to quote: the pooled verdict where runs are pooled, else its own
                    "primary_verdict": pool.verdict if pool and pool.primary else verdict_,
                    "measured": head.measured,
                    "ci_low": head.ci_low,
                    "ci_high": head.ci_high,
                    "run_ci_low": head.run_low,
                    "run_ci_high": head.run_high,
                    **_own(head),
                    "scale": head.scale,
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
                    "pooled_parts": " | ".join(part_line(p.result) for p in pool.parts)
                    if pool
                    else "",
                    "warnings": "; ".join(collapse(w for p in parts for w in p.warnings)),
                    "samples": "; ".join(dict.fromkeys(s for p in parts for s in p.samples)),
                    "note": "; ".join(x for x in (reason, claim.get("note", "")) if x),
                    "statement": claim["statement"],
                    "article_figures": claim["article"],
                }
            )
            for i, (part, r) in enumerate(zip(claim["parts"], parts, strict=True)):
                part_rows.append(
                    {
                        "run_label": view.run_label,
                        "jax_version": view.jax_version,
                        "claim_id": claim["id"],
                        "catalog": claim.get("catalog", ""),
                        "part": r.name,
                        "device_model": "; ".join(sorted(r.models)),
                        "kind": part.get("kind", "ratio"),
                        "size": r.size,
                        "article_size": r.article_size,
                        "indicative": r.indicative,
                        "setup": r.setup,
                        "measured": r.measured,
                        "ci_low": r.ci_low,
                        "ci_high": r.ci_high,
                        "run_ci_low": r.run_low,
                        "run_ci_high": r.run_high,
                        **_own(r),
                        "scale": r.scale,
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
                )
    table = pd.DataFrame(rows)
    if not table.empty:
        table["other_runs"] = disagreements(table)
    return table, pd.DataFrame(part_rows)


def covers(a: Any, b: Any) -> bool | None:
    """Whether measurement a's 95% CI holds b's value (None: a has no CI, b no value)."""
    if pd.isna(a.ci_low) or pd.isna(a.ci_high) or pd.isna(b.measured):
        return None
    return bool(a.ci_low <= b.measured <= a.ci_high)


def covers_each_other(a: Any, b: Any) -> bool | None:
    """Whether each of two measurements' 95% CIs holds the other's value (None: a CI is
    missing). Two runs of one setup that fail this differ by more than either run's CI
    says, so neither CI can be quoted as the uncertainty of the setup."""
    both = (covers(a, b), covers(b, a))
    return None if None in both else all(both)


def disagreements(table: pd.DataFrame) -> pd.Series:
    """Per row of the claims table: where another run on the same hardware and JAX release
    measured the same claim outside this run's CI, or reached another verdict, say so
    (another release is an axis, not a disagreement). The same hardware is the same kind of
    machine, as pooling defines it (`machine`; older tables: the device models). Where no
    between-run study judges a run's CI, it holds its processes' spread only, not what
    changes between runs, and merged runs are where that shows."""
    notes = pd.Series("", index=table.index, dtype=object)
    key = "machine" if "machine" in table else "device_model"
    measured = table[table[key].fillna("") != ""]
    for _, same in measured.groupby(["claim_id", key, "jax_version"]):
        for i, a in same.iterrows():
            said = []
            for _, b in same.drop(index=i).iterrows():
                differ = covers_each_other(a, b) is False
                if differ or a["verdict"] != b["verdict"]:
                    value = value_ci(b["measured"], b["ci_low"], b["ci_high"]) or "-"
                    said.append(
                        f"run {b['run_label']} on the same hardware measured {value} "
                        f"({b['verdict']})"
                        + (": one run's value lies outside the other's CI" if differ else "")
                    )
            notes[i] = "; ".join(said)
    return notes
