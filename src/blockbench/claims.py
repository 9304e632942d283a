"""Judging the articles' claims against measurements (rules from blockbench.claim_rules).

A claim has parts; each part is one of
- `ratio`: sum of `num` phase medians over sum of `den` phase medians at one size;
- `trend`: that ratio at every common size; holds when it grows with size;
- `growth`: the log-log slope of a phase's time against the workload's amount of work;
- `check`: every named cell matched the float64 reference (and published values, if any).
A part's `size` is the article's. Measured there, the part holds or fails; measured at
another size (the article's was not in this run), its outcome is only indicative. The claim
is `not_reproduced` when a part fails at the article's setup, `not_run` when a part could
not be measured (with the cells' own reason), `inconclusive` when the rest rests on
indicative parts, and `reproduced` when every part holds at the article's setup.
"""

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from blockbench.claim_rules import condition_holds

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN = (
    "reproduced",
    "not_reproduced",
    "inconclusive",
    "not_run",
)
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
MIN_SAMPLES = 5  # fewer samples than this in a phase a part uses is flagged


@dataclass
class PartResult:
    name: str
    outcome: str  # holds, fails, not_run
    measured: float | None = None
    article: float | None = None
    condition: str = ""
    size: int | None = None
    article_size: int | None = None
    devices: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    detail: str = ""
    code: str = ""
    n_min: int | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def indicative(self) -> bool:
        """Measured, but not at the article's size: shown, never decisive."""
        return self.article_size is not None and self.size != self.article_size

    @property
    def setup(self) -> str:
        if self.size is None:
            return ""
        if self.article_size is None:
            return f"measured at {self.size}"
        if self.indicative:
            return f"measured at {self.size} (article {self.article_size})"
        return f"article's setup ({self.size})"


class Missing(Exception):
    """A cell a claim needs was not measured fine; the message says why."""


@dataclass(frozen=True)
class Term:
    median_s: float
    model: str
    n: int
    warnings: str


class RunView:
    """The rows of one run label, with lookups that explain what is missing."""

    def __init__(self, df: pd.DataFrame, run_label: str):
        self.run_label = run_label
        self.df = df[df["run_label"] == run_label]
        self.devices = set(self.df["device"])  # requested in this run, present or not

    @classmethod
    def each(cls, df: pd.DataFrame) -> list["RunView"]:
        """One view per run label: claims are judged run by run."""
        return [cls(df, label) for label in sorted(df["run_label"].unique())]

    def _cell_rows(self, term: dict[str, Any], size: int | None = None) -> pd.DataFrame:
        d = self.df
        mask = (
            (d["device"] == term["device"])
            & (d["workload"] == term["workload"])
            & (d["impl"] == term["impl"])
        )
        if size is not None:
            mask &= d["size"] == size
        return d[mask]

    def ok_rows(self, term: dict[str, Any], size: int | None = None) -> pd.DataFrame:
        rows = self._cell_rows(term, size)
        return rows[(rows["status"] == "ok") & (rows["phase"] == term.get("phase", "steady"))]

    def why_missing(self, term: dict[str, Any], size: int | None = None) -> str:
        rows = self._cell_rows(term, size)
        where = f"{term['workload']}/{term['impl']} on {term['device']}"
        if size is not None:
            where += f" at size {size}"
        if term["device"] not in self.devices:
            return f"{term['device']} not in this run (devices: {', '.join(sorted(self.devices))})"
        bad = rows[rows["status"] != "ok"]
        if not bad.empty:
            first = bad.iloc[0]
            return f"{where} is {first['status']}: {first['reason']}"
        if not rows.empty:
            return f"{where}: phase {term.get('phase', 'steady')} was not measured"
        return f"{where} was not measured"

    def sizes_ok(self, term: dict[str, Any]) -> set[int]:
        return set(self.ok_rows(term)["size"])

    def term(self, term: dict[str, Any], size: int) -> Term:
        hit = self.ok_rows(term, size)
        if hit.empty:
            raise Missing(self.why_missing(term, size))
        row = hit.iloc[0]
        warnings = row.get("warnings")
        return Term(
            float(row["median_s"]),
            str(row["device_model"]),
            int(row["n"]),
            warnings if isinstance(warnings, str) else "",
        )


def _terms(spec: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return spec if isinstance(spec, list) else [spec]


def choose_size(view: RunView, terms: list[dict[str, Any]], article_size: int | None) -> int:
    """The article's size where every term measured fine there, else the largest such size."""
    common = set.intersection(*(view.sizes_ok(t) for t in terms))
    if article_size in common:
        return article_size
    if not common:
        missing = [t for t in terms if not view.sizes_ok(t)] or terms
        raise Missing(view.why_missing(missing[0]))
    return max(common)


@dataclass
class Measured:
    """What the terms of one part gave at one size."""

    value: float
    models: set[str]
    n_min: int
    warnings: list[str]


def ratio_at(view: RunView, part: dict[str, Any], size: int) -> Measured:
    models: set[str] = set()
    counts: list[int] = []
    warnings: list[str] = []

    def total(spec: Any) -> float:
        s = 0.0
        for t in _terms(spec):
            got = view.term(t, size)
            models.add(f"{t['device']}: {got.model}")
            counts.append(got.n)
            phase = t.get("phase", "steady")
            if got.n < MIN_SAMPLES:
                warnings.append(f"{t['impl']} {phase} at {size}: {got.n} sample(s)")
            if got.warnings:
                warnings.append(f"{t['impl']} at {size}: {got.warnings}")
            s += got.median_s
        return s

    value = total(part["num"]) / total(part["den"])
    return Measured(value, models, min(counts), sorted(set(warnings)))


def _result(part: dict[str, Any], outcome: bool, **fields: Any) -> PartResult:
    return PartResult(
        part["name"],
        "holds" if outcome else "fails",
        article=part.get("article"),
        condition=part.get("holds_if", "every cell passes its check"),
        article_size=part.get("size"),
        code=part.get("code", ""),
        **fields,
    )


def eval_ratio(view: RunView, part: dict[str, Any]) -> PartResult:
    terms = _terms(part["num"]) + _terms(part["den"])
    size = choose_size(view, terms, part.get("size"))
    got = ratio_at(view, part, size)
    return _result(
        part,
        condition_holds(part["holds_if"], got.value),
        measured=got.value,
        size=size,
        devices={t["device"] for t in terms},
        models=got.models,
        n_min=got.n_min,
        warnings=got.warnings,
    )


def eval_trend(view: RunView, part: dict[str, Any]) -> PartResult:
    terms = _terms(part["num"]) + _terms(part["den"])
    sizes = sorted(set.intersection(*(view.sizes_ok(t) for t in terms)))
    if len(sizes) < 3:
        lacking = [t for t in terms if len(view.sizes_ok(t)) < 3]
        if lacking and not view.sizes_ok(lacking[0]):
            raise Missing(view.why_missing(lacking[0]))
        raise Missing(f"needs 3 sizes where every term measured fine, has {sizes}")
    each = [ratio_at(view, part, s) for s in sizes]
    ratios = [m.value for m in each]
    rho = float(sps.spearmanr(sizes, ratios).statistic)
    growth = ratios[-1] / ratios[0]
    holds = condition_holds(part["holds_if"], growth) and rho >= part.get("min_rho", 0.0)
    detail = (
        f"ratio {ratios[0]:.3g} at {sizes[0]} -> {ratios[-1]:.3g} at {sizes[-1]}; "
        f"Spearman rho {rho:.2f} (needs >= {part.get('min_rho', 0.0)})"
    )
    return _result(
        part,
        holds,
        measured=growth,
        size=sizes[-1],
        devices={t["device"] for t in terms},
        models=each[-1].models,
        detail=detail,
        n_min=min(m.n_min for m in each),
        warnings=sorted({w for m in each for w in m.warnings}),
    )


def eval_growth(view: RunView, part: dict[str, Any]) -> PartResult:
    term = part["of"]
    rows = view.ok_rows(term)
    if len(rows) < 3:
        if rows.empty:
            raise Missing(view.why_missing(term))
        raise Missing(
            f"needs 3 sizes of {term['workload']}/{term['impl']} {term['phase']}, "
            f"has {sorted(rows['size'].tolist())}"
        )
    fit = sps.linregress(np.log(rows["work"].astype(float)), np.log(rows["median_s"]))
    detail = (
        f"{term['phase']} time ~ work^{fit.slope:.2f} over sizes "
        f"{sorted(rows['size'].tolist())} (r={fit.rvalue:.3f})"
    )
    few = rows[rows["n"] < MIN_SAMPLES]
    return _result(
        part,
        condition_holds(part["holds_if"], fit.slope),
        measured=float(fit.slope),
        size=int(rows["size"].max()),
        devices={term["device"]},
        models={f"{term['device']}: {rows['device_model'].iloc[0]}"},
        detail=detail,
        n_min=int(rows["n"].min()),
        warnings=[f"{term['phase']} at {r.size}: {r.n} sample(s)" for r in few.itertuples()],
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
        bool(measured["check_passed"].astype(bool).all()),
        measured=worst,
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
            "not_run",
            article=part.get("article"),
            condition=part.get("holds_if", ""),
            article_size=part.get("size"),
            detail=str(why),
            code=part.get("code", ""),
        )


def verdict(parts: list[PartResult]) -> tuple[str, str]:
    """(verdict, reason): a failure at the article's setup refutes; anything unmeasured
    leaves the claim open; a part measured only at another setup cannot decide it."""
    failed = [p for p in parts if p.outcome == "fails" and not p.indicative]
    missing = [p for p in parts if p.outcome == "not_run"]
    indicative = [p for p in parts if p.outcome != "not_run" and p.indicative]
    if failed:
        return NOT_REPRODUCED, "; ".join(f"{p.name} fails ({p.condition})" for p in failed)
    if missing:
        held = [p.name for p in parts if p.outcome == "holds"]
        reason = "; ".join(f"{p.name}: {p.detail}" for p in missing)
        return NOT_RUN, reason + (f" (measured parts hold: {', '.join(held)})" if held else "")
    if indicative:
        return INCONCLUSIVE, "; ".join(
            f"{p.name} {p.outcome} but was {p.setup}: indicative only" for p in indicative
        )
    return REPRODUCED, ""


def fmt(x: float | None) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:.3g}"


def evaluate(df: pd.DataFrame, claims: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (run label, claim); the first part's figures are the headline."""
    rows = []
    for view in RunView.each(df):
        for claim in claims:
            parts = [evaluate_part(view, p) for p in claim["parts"]]
            verdict_, reason = verdict(parts)
            head = parts[0]
            rows.append(
                {
                    "run_label": view.run_label,
                    "claim_id": claim["id"],
                    "slug": claim["slug"],
                    "source": claim["source"],
                    "verdict": verdict_,
                    "measured": head.measured,
                    "article": head.article,
                    "metric": head.name,
                    "condition": head.condition,
                    "device": "+".join(sorted(set().union(*(p.devices for p in parts))))
                    or "+".join(sorted(claim.get("devices", []))),
                    "device_model": "; ".join(sorted(set().union(*(p.models for p in parts)))),
                    "size": head.size,
                    "article_size": head.article_size,
                    "setup": head.setup,
                    "n_min": min((p.n_min for p in parts if p.n_min is not None), default=None),
                    "parts": " | ".join(
                        f"{p.name}: {fmt(p.measured) or '-'} vs article {fmt(p.article) or '-'}"
                        f" [{p.condition}] -> {p.outcome}"
                        + (f", {p.setup}" if p.setup else "")
                        + (f" ({p.detail})" if p.detail else "")
                        for p in parts
                    ),
                    "warnings": "; ".join(w for p in parts for w in p.warnings),
                    "note": "; ".join(x for x in (reason, claim.get("note", "")) if x),
                    "statement": claim["statement"],
                    "article_figures": claim["article"],
                }
            )
    return pd.DataFrame(rows)


def claim_ratios(df: pd.DataFrame, claims: list[dict[str, Any]]) -> pd.DataFrame:
    """Every part of every claim as a row: the ratios the claims need, and their setup."""
    rows = []
    for view in RunView.each(df):
        for claim in claims:
            for part in claim["parts"]:
                r = evaluate_part(view, part)
                rows.append(
                    {
                        "run_label": view.run_label,
                        "claim_id": claim["id"],
                        "part": r.name,
                        "kind": part.get("kind", "ratio"),
                        "size": r.size,
                        "article_size": r.article_size,
                        "indicative": r.indicative and r.outcome != "not_run",
                        "setup": r.setup,
                        "measured": r.measured,
                        "article": r.article,
                        "condition": r.condition,
                        "outcome": r.outcome,
                        "n_min": r.n_min,
                        "code": r.code,
                        "warnings": "; ".join(r.warnings),
                        "detail": r.detail,
                    }
                )
    return pd.DataFrame(rows)
