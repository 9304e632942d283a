"""Judging the articles' claims against measurements, with rules read from config/claims.yaml.

A claim has parts; each part is one of
- `ratio`: sum of `num` phase medians over sum of `den` phase medians at one size;
- `trend`: that ratio at every common size; holds when it grows with size;
- `growth`: the log-log slope of a phase's time against the workload's amount of work;
- `check`: every named cell matched the float64 reference (and published values, if any).
A part holds when its `holds_if` condition does. The claim is `reproduced` when every part
holds, `not_reproduced` when a measured part fails, and `not_run` otherwise, with the reason
(a device absent from the run, a cell that timed out) taken from the cells themselves.
"""

import math
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy import stats as sps

REPRODUCED, NOT_REPRODUCED, NOT_RUN = "reproduced", "not_reproduced", "not_run"
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
CONDITION = re.compile(r"^\s*(>=|>|<=|<)\s*([0-9.eE+-]+)\s*$|^\s*between\s+(\S+)\s+and\s+(\S+)\s*$")


class ClaimConfigError(ValueError):
    """A claims file entry that cannot be evaluated."""


def load(path: str | Path) -> list[dict[str, Any]]:
    """Read the claims file, refusing entries that could never be judged."""
    entries = yaml.safe_load(Path(path).read_text())
    if not isinstance(entries, list):
        raise ClaimConfigError(f"{path}: expected a list of claims")
    seen: set[str] = set()
    for i, claim in enumerate(entries):
        for key in ("id", "slug", "source", "statement", "article", "parts"):
            if key not in claim:
                raise ClaimConfigError(f"{path}: claim #{i + 1} has no {key!r}")
        if claim["id"] in seen:
            raise ClaimConfigError(f"{path}: claim id {claim['id']!r} appears twice")
        seen.add(claim["id"])
        for part in claim["parts"]:
            kind = part.get("kind", "ratio")
            if kind not in EVALUATORS:
                raise ClaimConfigError(f"{path}: claim {claim['id']}: unknown kind {kind!r}")
            if "holds_if" in part:
                condition_holds(part["holds_if"], 1.0)  # raises on an unreadable rule
    return entries


def condition_holds(condition: str, value: float) -> bool:
    """`>= 5`, `> 1`, `< 0.5`, `between 1.4 and 3`: rules a reader can check by eye."""
    m = CONDITION.match(condition)
    if not m:
        raise ClaimConfigError(f"unreadable condition {condition!r}")
    if m.group(1):
        return OPS[m.group(1)](value, float(m.group(2)))
    return float(m.group(3)) <= value <= float(m.group(4))


@dataclass
class PartResult:
    name: str
    outcome: str  # holds, fails, not_run
    measured: float | None = None
    article: float | None = None
    condition: str = ""
    size: int | None = None
    devices: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    detail: str = ""


class Missing(Exception):
    """A cell a claim needs was not measured fine; the message says why."""


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
        return f"{where} was not measured"

    def sizes_ok(self, term: dict[str, Any]) -> set[int]:
        rows = self._cell_rows(term)
        phase = term.get("phase", "steady")
        return set(rows[(rows["status"] == "ok") & (rows["phase"] == phase)]["size"])

    def median(self, term: dict[str, Any], size: int) -> tuple[float, str]:
        rows = self._cell_rows(term, size)
        phase = term.get("phase", "steady")
        hit = rows[(rows["status"] == "ok") & (rows["phase"] == phase)]
        if hit.empty:
            raise Missing(self.why_missing(term, size))
        return float(hit["median_s"].iloc[0]), str(hit["device_model"].iloc[0])


def _terms(spec: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return spec if isinstance(spec, list) else [spec]


def choose_size(view: RunView, terms: list[dict[str, Any]], size: Any) -> int:
    """An exact size, or `largest` common size, or {prefer: N} falling back to the largest."""
    common = set.intersection(*(view.sizes_ok(t) for t in terms))
    if isinstance(size, int):
        if size not in common:
            missing = [t for t in terms if size not in view.sizes_ok(t)]
            raise Missing(view.why_missing(missing[0], size))
        return size
    preferred = size.get("prefer") if isinstance(size, dict) else None
    if preferred in common:
        return preferred
    if not common:
        missing = [t for t in terms if not view.sizes_ok(t)] or terms
        raise Missing(view.why_missing(missing[0]))
    return max(common)


def ratio_at(view: RunView, part: dict[str, Any], size: int) -> tuple[float, set[str]]:
    models: set[str] = set()

    def total(spec: Any) -> float:
        s = 0.0
        for term in _terms(spec):
            value, model = view.median(term, size)
            models.add(f"{term['device']}: {model}")
            s += value
        return s

    return total(part["num"]) / total(part["den"]), models


def eval_ratio(view: RunView, part: dict[str, Any]) -> PartResult:
    terms = _terms(part["num"]) + _terms(part["den"])
    size = choose_size(view, terms, part.get("size", "largest"))
    value, models = ratio_at(view, part, size)
    note = ""
    wanted = part.get("size")
    if isinstance(wanted, dict) and wanted.get("prefer") not in (None, size):
        note = f"measured at size {size}; the article used {wanted['prefer']}"
    return PartResult(
        part["name"],
        "holds" if condition_holds(part["holds_if"], value) else "fails",
        value,
        part.get("article"),
        part["holds_if"],
        size,
        {t["device"] for t in terms},
        models,
        note,
    )


def eval_trend(view: RunView, part: dict[str, Any]) -> PartResult:
    terms = _terms(part["num"]) + _terms(part["den"])
    sizes = sorted(set.intersection(*(view.sizes_ok(t) for t in terms)))
    if len(sizes) < 3:
        lacking = [t for t in terms if len(view.sizes_ok(t)) < 3]
        if lacking and not view.sizes_ok(lacking[0]):
            raise Missing(view.why_missing(lacking[0]))
        raise Missing(f"needs 3 sizes where every term measured fine, has {sizes}")
    ratios = [ratio_at(view, part, s)[0] for s in sizes]
    models = ratio_at(view, part, sizes[-1])[1]
    rho = float(sps.spearmanr(sizes, ratios).statistic)
    growth = ratios[-1] / ratios[0]
    holds = condition_holds(part["holds_if"], growth) and rho >= part.get("min_rho", 0.0)
    detail = (
        f"ratio {ratios[0]:.3g} at {sizes[0]} -> {ratios[-1]:.3g} at {sizes[-1]}; "
        f"Spearman rho {rho:.2f} (needs >= {part.get('min_rho', 0.0)})"
    )
    return PartResult(
        part["name"],
        "holds" if holds else "fails",
        growth,
        part.get("article"),
        part["holds_if"],
        sizes[-1],
        {t["device"] for t in terms},
        models,
        detail,
    )


def eval_growth(view: RunView, part: dict[str, Any]) -> PartResult:
    term = part["of"]
    rows = view.df[
        (view.df["device"] == term["device"])
        & (view.df["workload"] == term["workload"])
        & (view.df["impl"] == term["impl"])
        & (view.df["phase"] == term["phase"])
        & (view.df["status"] == "ok")
    ]
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
    outcome = "holds" if condition_holds(part["holds_if"], fit.slope) else "fails"
    return PartResult(
        part["name"],
        outcome,
        float(fit.slope),
        part.get("article"),
        part["holds_if"],
        int(rows["size"].max()),
        {term["device"]},
        {f"{term['device']}: {rows['device_model'].iloc[0]}"},
        detail,
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
    passed = bool(measured["check_passed"].astype(bool).all())
    worst = float(measured["max_rel_err"].max())
    detail = (
        f"{len(measured)} cells ({', '.join(spec['impls'])}) at sizes "
        f"{sorted(set(measured['size'].tolist()))}; worst relative error {worst:.2g}"
    )
    return PartResult(
        part["name"],
        "holds" if passed else "fails",
        worst,
        part.get("article"),
        "every cell passes its check",
        int(measured["size"].max()),
        {spec["device"]},
        {f"{spec['device']}: {measured['device_model'].iloc[0]}"},
        detail,
    )


EVALUATORS = {"ratio": eval_ratio, "trend": eval_trend, "growth": eval_growth, "check": eval_check}


def evaluate_part(view: RunView, part: dict[str, Any]) -> PartResult:
    kind = part.get("kind", "ratio")
    if kind not in EVALUATORS:
        raise ClaimConfigError(f"part {part.get('name')!r}: unknown kind {kind!r}")
    try:
        return EVALUATORS[kind](view, part)
    except Missing as why:
        return PartResult(
            part["name"],
            "not_run",
            article=part.get("article"),
            condition=part.get("holds_if", ""),
            detail=str(why),
        )


def verdict(parts: list[PartResult]) -> tuple[str, str]:
    """(verdict, reason): any measured failure refutes; anything unmeasured leaves it open."""
    failed = [p for p in parts if p.outcome == "fails"]
    missing = [p for p in parts if p.outcome == "not_run"]
    if failed:
        return NOT_REPRODUCED, "; ".join(f"{p.name} fails ({p.condition})" for p in failed)
    if missing:
        held = [p.name for p in parts if p.outcome == "holds"]
        reason = "; ".join(f"{p.name}: {p.detail}" for p in missing)
        return NOT_RUN, reason + (f" (measured parts hold: {', '.join(held)})" if held else "")
    return REPRODUCED, ""


def _fmt(x: float | None) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:.3g}"


def evaluate(df: pd.DataFrame, claims: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (run label, claim); the first part's figures are the headline."""
    rows = []
    for view in RunView.each(df):
        run_label = view.run_label
        for claim in claims:
            parts = [evaluate_part(view, p) for p in claim["parts"]]
            verdict_, reason = verdict(parts)
            head = parts[0]
            rows.append(
                {
                    "run_label": run_label,
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
                    "parts": " | ".join(
                        f"{p.name}: {_fmt(p.measured) or '-'} vs article {_fmt(p.article) or '-'}"
                        f" [{p.condition}] -> {p.outcome}" + (f" ({p.detail})" if p.detail else "")
                        for p in parts
                    ),
                    "note": "; ".join(x for x in (reason, claim.get("note", "")) if x),
                    "statement": claim["statement"],
                    "article_figures": claim["article"],
                }
            )
    return pd.DataFrame(rows)


def claim_ratios(df: pd.DataFrame, claims: list[dict[str, Any]]) -> pd.DataFrame:
    """Every measured part of every claim as a row: the ratios the claims need."""
    rows = []
    for view in RunView.each(df):
        run_label = view.run_label
        for claim in claims:
            for part in claim["parts"]:
                r = evaluate_part(view, part)
                rows.append(
                    {
                        "run_label": run_label,
                        "claim_id": claim["id"],
                        "part": r.name,
                        "kind": part.get("kind", "ratio"),
                        "size": r.size,
                        "measured": r.measured,
                        "article": r.article,
                        "condition": r.condition,
                        "outcome": r.outcome,
                        "detail": r.detail,
                    }
                )
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame, claims: list[dict[str, Any]]) -> str:
    """The claims report a reader opens first: verdict, figures side by side, why."""
    lines = ["# Claims: reproduced or not", ""]
    for run_label, runs in table.groupby("run_label", sort=True):
        lines += [
            f"## Run `{run_label}`",
            "",
            "| claim | verdict | measured | article | metric | device | size | note |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in runs.itertuples():
            note = str(r.note).replace("|", "/")
            lines.append(
                f"| {r.claim_id} `{r.slug}` | **{r.verdict}** | {_fmt(r.measured)} | "
                f"{_fmt(r.article)} | {r.metric} | {r.device_model or r.device} | "
                f"{'' if pd.isna(r.size) else int(r.size)} | {note} |"
            )
        lines.append("")
    lines += ["## What each claim says and how it is judged", ""]
    for claim in claims:
        lines.append(
            f"- **{claim['id']} `{claim['slug']}`** ({claim['source']}): "
            f"{claim['statement']} Article: {claim['article']}."
        )
        for part in claim["parts"]:
            rule = part.get("holds_if", "every cell passes its check")
            lines.append(
                f"  - {part.get('kind', 'ratio')} `{part['name']}`: holds if {rule}"
                + (f", article {part['article']}" if "article" in part else "")
            )
    return "\n".join(lines) + "\n"
