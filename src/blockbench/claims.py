"""Judging the articles' claims against measurements (rules from blockbench.claim_rules).

A claim has parts; each part is one of
- `ratio`: sum of `num` cell times over sum of `den` cell times at one size;
- `trend`: the exponent of that ratio against size (> 0: it grows with size);
- `growth`: the exponent of a phase's time against the workload's amount of work;
- `check`: every named cell matched the float64 reference (and published values, if any).
Every measured value carries a 95% CI from the cells' bootstrap replicates
(blockbench.resampling), and a part `holds` when its whole CI satisfies its rule, `fails`
when none of it does, and is `inconclusive` when the CI straddles the rule's boundary.
A part's `size` is the article's; measured at another size, its outcome is only
indicative. The claim is `not_reproduced` when a part fails at the article's setup,
`not_run` when a part could not be measured (with the cells' own reason), `reproduced` when
every part holds at the article's setup, and `inconclusive` otherwise.
"""

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from blockbench import resampling
from blockbench.aggregate import CELL, replicate_key
from blockbench.claim_rules import FAILS, HOLDS, INCONCLUSIVE, decide

REPRODUCED, NOT_REPRODUCED, NOT_RUN = "reproduced", "not_reproduced", "not_run"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
MIN_SAMPLES = 5  # fewer samples than this in a phase a part uses is flagged


@dataclass
class PartResult:
    name: str
    outcome: str  # holds, fails, inconclusive, not_run
    measured: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    article: float | None = None
    condition: str = ""
    why: str = ""
    size: int | None = None
    article_size: int | None = None
    devices: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    detail: str = ""
    code: str = ""
    n_min: int | None = None
    warnings: list[str] = field(default_factory=list)
    # what the kernel said of the samples behind the value (disturbed, slow mode)
    samples: list[str] = field(default_factory=list)

    @property
    def indicative(self) -> bool:
        """Measured, but not at the article's size: shown, never decisive."""
        return (
            self.outcome != NOT_RUN
            and self.article_size is not None
            and self.size != self.article_size
        )

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
    model: str
    n_min: int
    warnings: str
    samples: str  # disturbed and slow-mode shares of the samples, where known


def samples_note(row: Any, term: dict[str, Any]) -> str:
    """'jax dispatch at 1000: of 90 samples 1% disturbed from outside [0%, 6%] and 12% inside
    the cell [7%, 20%], left out; 10% in a slow mode [...]': where the statistics' samples
    came from."""
    said = []
    share = row.get("disturbed_fraction")
    inside = row.get("inside_fraction")
    if share is not None and not pd.isna(share) and (share > 0 or inside > 0):
        said.append(
            f"of {int(row['n_all'])} samples {share:.0%} disturbed from outside "
            f"[{row['disturbed_ci_low']:.0%}, {row['disturbed_ci_high']:.0%}] and "
            f"{row['inside_fraction']:.0%} inside the cell "
            f"[{row['inside_ci_low']:.0%}, {row['inside_ci_high']:.0%}], left out"
        )
    slow = row.get("slow_fraction")
    if slow is not None and not pd.isna(slow) and slow > 0:
        said.append(
            f"{slow:.0%} in a slow mode [{row['slow_ci_low']:.0%}, {row['slow_ci_high']:.0%}]"
        )
    if not said:
        return ""
    return f"{term['impl']} {_phase(term)} at {row['size']}: " + "; ".join(said)


class RunView:
    """The cells of one run label, with their processes for resampling, and lookups that
    explain what is missing."""

    def __init__(self, cells: pd.DataFrame, processes: pd.DataFrame, run_label: str):
        self.run_label = run_label
        self.df = cells[cells["run_label"] == run_label]
        mine = processes[processes["run_label"] == run_label]
        self._processes = {
            key: g.set_index("repeat")
            for key, g in mine[mine["phase"].notna()].groupby([*CELL, "phase"])
        }
        self.devices = set(self.df["device"])  # requested in this run, present or not
        # a run measures one JAX release (blockbench.versions)
        self.jax_version = ", ".join(sorted(set(self.df["jax_version"].dropna())))

    @classmethod
    def each(cls, cells: pd.DataFrame, processes: pd.DataFrame) -> list["RunView"]:
        """One view per run label: claims are judged run by run."""
        return [cls(cells, processes, label) for label in sorted(cells["run_label"].unique())]

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

    def processes_of(self, term: dict[str, Any], size: int) -> pd.DataFrame:
        """The processes' rows of one cell and phase, indexed by process (`repeat`)."""
        return self._processes[(*self._cell(term, size), _phase(term))]

    def term(self, term: dict[str, Any], size: int) -> Term:
        hit = self.ok_rows(term, size)
        if hit.empty:
            raise Missing(self.why_missing(term, size))
        row = hit.iloc[0]
        warnings = row.get("warnings")
        return Term(
            str(row["device_model"]),
            int(row["n_min"]),
            warnings if isinstance(warnings, str) else "",
            samples_note(row, term),
        )

    def replicates(self, terms: list[dict[str, Any]], size: int) -> tuple[float, np.ndarray]:
        """The summed time of `terms`, all of one cell, and its replicates: per process, the
        phases are added; across processes, blockbench.resampling. A single phase draws the
        same replicates as its CI in the cell table."""
        rows = [self.processes_of(t, size) for t in terms]
        common = sorted(set.intersection(*(set(r.index) for r in rows)))
        cell = self._cell(terms[0], size)
        if len(common) == 1:  # one process: its samples are all there is
            reps = sum(
                resampling.of_samples(r.loc[common[0], "kept_s"], replicate_key(cell, _phase(t)))
                for t, r in zip(terms, rows, strict=True)
            )
            return float(sum(r.loc[common[0], "median_s"] for r in rows)), reps
        per_process = sum(r.loc[common, "median_s"].to_numpy(float) for r in rows)
        key = replicate_key(cell, "+".join(map(_phase, terms)))
        return resampling.geometric_mean(per_process), resampling.of_processes(per_process, key)

    def _cell(self, term: dict[str, Any], size: int) -> tuple:
        return (self.run_label, term["device"], term["workload"], term["impl"], size)

    def paired_ratio(self, num: list, den: list, size: int) -> tuple[float, np.ndarray] | None:
        """num / den paired by process: when every term is a phase of one cell measured by
        several processes, or the terms' cells were measured back to back in one block,
        round by round (blockbench.design). The ratio is taken within each process (round)
        first, so what it shares (the placement, the machine's minute) cancels, and its CI
        comes from the spread over processes (rounds). None where pairing does not apply."""
        cells = {(t["device"], t["workload"], t["impl"]) for t in num + den}
        rows = {id(t): self.processes_of(t, size) for t in num + den}
        if len(cells) != 1:
            blocks = {b for r in rows.values() for b in r["block"]}
            if len(blocks) != 1 or not next(iter(blocks)):
                return None
        common = sorted(set.intersection(*(set(r.index) for r in rows.values())))
        if len(common) < 2:
            return None

        def side(terms: list) -> np.ndarray:
            return sum(rows[id(t)].loc[common, "median_s"].to_numpy(float) for t in terms)

        ratios = side(num) / side(den)

        def name(t: dict[str, Any]) -> str:  # the impl only where the cells differ
            return _phase(t) if len(cells) == 1 else f"{t['device']}/{t['impl']}:{_phase(t)}"

        phases = "+".join(map(name, num)) + "/" + "+".join(map(name, den))
        key = replicate_key(self._cell(num[0], size), phases)
        return resampling.geometric_mean(ratios), resampling.of_processes(ratios, key)


def _phase(term: dict[str, Any]) -> str:
    return term.get("phase", "steady")


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
    """What the terms of one part gave at one size: the value and its replicates."""

    value: float
    replicates: np.ndarray
    models: set[str]
    n_min: int
    warnings: list[str]
    samples: list[str]
    how: str  # how num and den were paired, if they were


def ratio_at(view: RunView, part: dict[str, Any], size: int) -> Measured:
    """num / den at one size, with replicates: paired within processes where all terms are
    phases of one cell, else each side's cells resampled on their own."""
    num, den = _terms(part["num"]), _terms(part["den"])
    models: set[str] = set()
    counts: list[int] = []
    warnings: list[str] = []
    samples: list[str] = []
    for t in num + den:
        got = view.term(t, size)  # raises Missing with the reason
        if got.samples:
            samples.append(got.samples)
        models.add(f"{t['device']}: {got.model}")
        counts.append(got.n_min)
        if got.n_min < MIN_SAMPLES:
            phase = t.get("phase", "steady")
            warnings.append(f"{t['impl']} {phase} at {size}: {got.n_min} sample(s)")
        if got.warnings:
            warnings.append(f"{t['impl']} at {size}: {got.warnings}")
    paired = view.paired_ratio(num, den, size)
    how = ""
    if paired is not None and len({(t["device"], t["impl"]) for t in num + den}) > 1:
        how = "cells measured back to back in one block; ratio paired over its rounds"
    if paired is None:

        def side(terms: list) -> tuple[float, np.ndarray]:
            by_cell: dict[tuple, list] = {}
            for t in terms:
                by_cell.setdefault((t["device"], t["workload"], t["impl"]), []).append(t)
            got = [view.replicates(group, size) for group in by_cell.values()]
            return sum(v for v, _ in got), sum(r for _, r in got)

        (n_value, n_reps), (d_value, d_reps) = side(num), side(den)
        paired = (n_value / d_value, n_reps / d_reps)
    value, reps = paired
    return Measured(
        value, reps, models, min(counts), sorted(set(warnings)), list(dict.fromkeys(samples)), how
    )


def _result(
    part: dict[str, Any],
    value: float,
    reps: np.ndarray | None,
    passed: bool | None = None,
    **fields: Any,
) -> PartResult:
    """A measured part: judged on the CI of its replicates, or on `passed` (checks)."""
    if reps is None:
        low = high = None
        outcome = HOLDS if passed else FAILS
    else:
        low, high = resampling.interval(reps)
        outcome = decide(part["holds_if"], low, high)
    return PartResult(
        part["name"],
        outcome,
        measured=float(value),
        ci_low=low,
        ci_high=high,
        article=part.get("article"),
        condition=part.get("holds_if", "every cell passes its check"),
        why=part.get("why", ""),
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
        got.value,
        got.replicates,
        size=size,
        devices={t["device"] for t in terms},
        models=got.models,
        n_min=got.n_min,
        warnings=got.warnings,
        samples=got.samples,
        detail=got.how,
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
    values = np.array([m.value for m in each])
    slope = float(resampling.log_slope(sizes, values))
    reps = resampling.log_slope(sizes, np.column_stack([m.replicates for m in each]))
    detail = (
        f"ratio {values[0]:.3g} at {sizes[0]} -> {values[-1]:.3g} at {sizes[-1]}; "
        f"exponent of the ratio against size over {sizes}"
    )
    return _result(
        part,
        slope,
        reps,
        size=sizes[-1],
        devices={t["device"] for t in terms},
        models=each[-1].models,
        detail=detail,
        n_min=min(m.n_min for m in each),
        warnings=sorted({w for m in each for w in m.warnings}),
    )


@dataclass
class Growth:
    """A phase's time against the workload's amount of work, fitted as a power law."""

    rows: pd.DataFrame  # the cells fitted, by size: size, work, median_s, n_min, device_model
    exponent: float
    replicates: np.ndarray


def growth_fit(view: RunView, term: dict[str, Any]) -> Growth:
    """The exponent of `term`'s time against work over every size measured (at least 3),
    with replicates from each size's own."""
    rows = view.ok_rows(term).sort_values("size")
    if len(rows) < 3:
        if rows.empty:
            raise Missing(view.why_missing(term))
        raise Missing(
            f"needs 3 sizes of {term['workload']}/{term['impl']} {_phase(term)}, "
            f"has {sorted(rows['size'].tolist())}"
        )
    work = rows["work"].astype(float).tolist()
    slope = float(resampling.log_slope(work, rows["median_s"].to_numpy(float)))
    reps = resampling.log_slope(
        work, np.column_stack([view.replicates([term], s)[1] for s in rows["size"]])
    )
    return Growth(rows, slope, reps)


def eval_growth(view: RunView, part: dict[str, Any]) -> PartResult:
    term = part["of"]
    fit = growth_fit(view, term)
    rows = fit.rows
    detail = (
        f"{term['phase']} time ~ work^{fit.exponent:.2f} over sizes {rows['size'].tolist()} "
        f"({rows['median_s'].iloc[0]:.3g} s to {rows['median_s'].iloc[-1]:.3g} s)"
    )
    few = rows[rows["n_min"] < MIN_SAMPLES]
    return _result(
        part,
        fit.exponent,
        fit.replicates,
        size=int(rows["size"].max()),
        devices={term["device"]},
        models={f"{term['device']}: {rows['device_model'].iloc[0]}"},
        detail=detail,
        n_min=int(rows["n_min"].min()),
        warnings=[f"{term['phase']} at {r.size}: {r.n_min} sample(s)" for r in few.itertuples()],
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


def verdict(parts: list[PartResult]) -> tuple[str, str]:
    """(verdict, reason): a failure at the article's setup refutes; anything unmeasured
    leaves the claim open; reproduced needs every part to hold at the article's setup."""
    failed = [p for p in parts if p.outcome == FAILS and not p.indicative]
    missing = [p for p in parts if p.outcome == NOT_RUN]
    open_ = [p for p in parts if p.outcome == INCONCLUSIVE or p.indicative]
    if failed:
        return NOT_REPRODUCED, "; ".join(
            f"{p.name} fails: {_ci(p)} is outside {p.condition}" for p in failed
        )
    if missing:
        held = [p.name for p in parts if p.outcome == HOLDS]
        reason = "; ".join(f"{p.name}: {p.detail}" for p in missing)
        return NOT_RUN, reason + (f" (measured parts hold: {', '.join(held)})" if held else "")
    if open_:
        return INCONCLUSIVE, "; ".join(_undecided(p) for p in open_)
    return REPRODUCED, ""


def _ci(p: PartResult) -> str:
    return value_ci(p.measured, p.ci_low, p.ci_high)


def _undecided(p: PartResult) -> str:
    if p.indicative:
        return f"{p.name} {p.outcome} but was {p.setup}: indicative only"
    return f"{p.name}: its 95% CI {_ci(p)} straddles the rule {p.condition}"


def fmt(x: float | None) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:.3g}"


def value_ci(value: Any, low: Any, high: Any) -> str:
    """`2.1 [1.44, 3.26]`, the value alone where it has no CI, '' where nothing."""
    if _missing(value):
        return ""
    if _missing(low):
        return fmt(value)
    return f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and pd.isna(x))


def evaluate(
    cells: pd.DataFrame, processes: pd.DataFrame, claims: list[dict[str, Any]]
) -> pd.DataFrame:
    """One row per (run label, claim); the first part's figures are the headline."""
    rows = []
    for view in RunView.each(cells, processes):
        for claim in claims:
            parts = [evaluate_part(view, p) for p in claim["parts"]]
            verdict_, reason = verdict(parts)
            head = parts[0]
            rows.append(
                {
                    "run_label": view.run_label,
                    "jax_version": view.jax_version,
                    "claim_id": claim["id"],
                    "slug": claim["slug"],
                    "source": claim["source"],
                    "verdict": verdict_,
                    "measured": head.measured,
                    "ci_low": head.ci_low,
                    "ci_high": head.ci_high,
                    "article": head.article,
                    "metric": head.name,
                    "condition": head.condition,
                    "why": head.why,
                    "device": "+".join(sorted(set().union(*(p.devices for p in parts))))
                    or "+".join(sorted(claim.get("devices", []))),
                    "device_model": "; ".join(sorted(set().union(*(p.models for p in parts)))),
                    "size": head.size,
                    "article_size": head.article_size,
                    "setup": head.setup,
                    "n_min": min((p.n_min for p in parts if p.n_min is not None), default=None),
                    "parts": " | ".join(
                        f"{p.name}: {_ci(p) or '-'} vs article {fmt(p.article) or '-'}"
                        f" [{p.condition}] -> {p.outcome}"
                        + (f", {p.setup}" if p.setup else "")
                        + (f" ({p.detail})" if p.detail else "")
                        for p in parts
                    ),
                    "warnings": "; ".join(w for p in parts for w in p.warnings),
                    "samples": "; ".join(dict.fromkeys(s for p in parts for s in p.samples)),
                    "note": "; ".join(x for x in (reason, claim.get("note", "")) if x),
                    "statement": claim["statement"],
                    "article_figures": claim["article"],
                }
            )
    table = pd.DataFrame(rows)
    if not table.empty:
        table["other_runs"] = disagreements(table)
    return table


def covers_each_other(a: Any, b: Any) -> bool | None:
    """Whether each of two measurements' 95% CIs holds the other's value (None: a CI is
    missing). Two runs of one setup that fail this differ by more than either run's CI
    says, so neither CI can be quoted as the uncertainty of the setup."""
    if any(pd.isna(r.ci_low) or pd.isna(r.ci_high) for r in (a, b)):
        return None
    return bool(a.ci_low <= b.measured <= a.ci_high and b.ci_low <= a.measured <= b.ci_high)


def disagreements(table: pd.DataFrame) -> pd.Series:
    """Per row of the claims table: where another run on the same hardware (the same device
    models) and JAX release measured the same claim outside this run's CI, or reached
    another verdict, say so (another release is an axis, not a disagreement). A run's CI
    holds its processes' spread, not what changes between runs (the machine's state on
    another day), and merged runs are where that shows."""
    notes = pd.Series("", index=table.index, dtype=object)
    measured = table[table["device_model"].fillna("") != ""]
    for _, same in measured.groupby(["claim_id", "device_model", "jax_version"]):
        for i, a in same.iterrows():
            said = []
            for _, b in same.drop(index=i).iterrows():
                differ = covers_each_other(a, b) is False
                if differ or a["verdict"] != b["verdict"]:
                    value = value_ci(b["measured"], b["ci_low"], b["ci_high"]) or "-"
                    said.append(
                        f"run {b['run_label']} on the same hardware measured {value} "
                        f"({b['verdict']})"
                        + (": each run's value lies outside the other's CI" if differ else "")
                    )
            notes[i] = "; ".join(said)
    return notes


def claim_ratios(
    cells: pd.DataFrame, processes: pd.DataFrame, claims: list[dict[str, Any]]
) -> pd.DataFrame:
    """Every part of every claim as a row: value, CI, setup and outcome."""
    rows = []
    for view in RunView.each(cells, processes):
        for claim in claims:
            for part in claim["parts"]:
                r = evaluate_part(view, part)
                rows.append(
                    {
                        "run_label": view.run_label,
                        "jax_version": view.jax_version,
                        "claim_id": claim["id"],
                        "part": r.name,
                        "kind": part.get("kind", "ratio"),
                        "size": r.size,
                        "article_size": r.article_size,
                        "indicative": r.indicative,
                        "setup": r.setup,
                        "measured": r.measured,
                        "ci_low": r.ci_low,
                        "ci_high": r.ci_high,
                        "article": r.article,
                        "condition": r.condition,
                        "why": r.why,
                        "outcome": r.outcome,
                        "n_min": r.n_min,
                        "code": r.code,
                        "warnings": "; ".join(r.warnings),
                        "samples": "; ".join(r.samples),
                        "detail": r.detail,
                    }
                )
    return pd.DataFrame(rows)
