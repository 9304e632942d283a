"""Judging the articles' claims against measurements (rules from blockbench.judge.claim_rules).

A claim has parts; each part is one of
- `ratio`: sum of `num` cell times over sum of `den` cell times at one size;
- `trend`: the exponent of that ratio against size (> 0: it grows with size);
- `growth`: the exponent of a phase's time against the workload's amount of work;
- `check`: every named cell matched the float64 reference (and published values, if any).
Every measured value carries a 95% CI from the cells' bootstrap replicates
(blockbench.judge.resampling), widened by the between-run variance stored for the run's kind of
machine where a study exists (blockbench.judge.studies, blockbench.judge.random_effects), and a part
`holds` when its whole CI satisfies its rule, `fails` when none of it does, and is
`inconclusive` when the CI straddles the rule's boundary.
A part's `size` is the article's; measured at another size, its outcome is only
indicative. The claim is `not_reproduced` when a part fails at the article's setup,
`not_run` when a part could not be measured (with the cells' own reason), `reproduced` when
every part holds at the article's setup, and `inconclusive` otherwise.
"""

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from blockbench.judge import resampling
from blockbench.judge.aggregate import CELL, replicate_key
from blockbench.judge.claim_rules import FAILS, HOLDS, INCONCLUSIVE, decide
from blockbench.judge.random_effects import Between, se_of, widen
from blockbench.judge.studies import Kind, Study, kind_of
from blockbench.records.spec import PHASES

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
    # the scale its uncertainty is modelled on: "log" (a ratio) or "linear" (an exponent)
    scale: str = "log"
    df: float = math.inf  # degrees of freedom of this run's own interval
    run_low: float | None = None  # this run's own interval, before any between-run term
    run_high: float | None = None
    between: Between | None = None  # the between-run variance added (None: none known)

    def on_scale(self, x: float) -> float:
        return on_scale(x, self.scale)

    def from_scale(self, x: float) -> float:
        return from_scale(x, self.scale)

    @property
    def se(self) -> float | None:
        """This run's own standard error on the analysis scale (from its own interval)."""
        got = scaled(self.measured, self.run_low, self.run_high, self.df, self.scale)
        return None if got is None else got[1]

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


def on_scale(x: float, scale: str) -> float:
    """A ratio's log, an exponent as it is: where a run's error is modelled as normal."""
    return math.log(x) if scale == "log" else x


def from_scale(x: float, scale: str) -> float:
    return math.exp(x) if scale == "log" else x


def scaled(value: Any, low: Any, high: Any, df: Any, scale: str) -> tuple[float, float] | None:
    """(estimate, standard error) on the analysis scale from a value and its own t interval
    with `df`; None where there is no usable interval."""
    if any(x is None or pd.isna(x) for x in (value, low, high, df)):
        return None
    if scale == "log" and min(value, low, high) <= 0:
        return None
    return on_scale(value, scale), se_of(on_scale(low, scale), on_scale(high, scale), df)


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

    def __init__(
        self,
        cells: pd.DataFrame,
        processes: pd.DataFrame,
        run_label: str,
        studies: dict[Kind, Study] | None = None,
    ):
        self.run_label = run_label
        self.df = cells[cells["run_label"] == run_label]
        mine = processes[processes["run_label"] == run_label]
        self._processes = {
            key: g.set_index("repeat")
            for key, g in mine[mine["phase"].notna()].groupby([*CELL, "phase"])
        }
        self.devices = set(self.df["device"])  # requested in this run, present or not
        # a run measures one JAX release (blockbench.run.versions)
        self.jax_version = ", ".join(sorted(set(self.df["jax_version"].dropna())))
        self.kind = kind_of(self.df) if "cpu_model" in self.df else None
        # the between-run study of this kind of machine, if one was made
        self.study = (studies or {}).get(self.kind) if self.kind else None

    @classmethod
    def each(
        cls,
        cells: pd.DataFrame,
        processes: pd.DataFrame,
        studies: dict[Kind, Study] | None = None,
    ) -> list["RunView"]:
        """One view per run label: claims are judged run by run."""
        return [
            cls(cells, processes, label, studies) for label in sorted(cells["run_label"].unique())
        ]

    @property
    def pool_key(self) -> tuple | None:
        """Runs that may be pooled share this: the kind of machine and the JAX release
        (None: the kind is unknown, so the run stands alone)."""
        if self.kind is None:
            return None
        return (self.kind, self.jax_version)

    def process_df(self, terms: list[dict[str, Any]], size: int) -> float:
        """Degrees of freedom of an interval over the processes the terms share (their
        count - 1); with one process, its samples (a normal approximation)."""
        count = min(len(self.processes_of(t, size)) for t in terms)
        return float(count - 1) if count > 1 else math.inf

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
        phases are added; across processes, blockbench.judge.resampling. A single phase draws the
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
        round by round (blockbench.run.run_order). The ratio is taken within each process (round)
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


def term_warnings(warnings: str, phase: str) -> list[str]:
    """A cell's warnings that bear on one phase of it: that phase's, and the cell's own
    (thread parity, a busy host); another phase's unstable samples are no concern of a part
    that does not use it. The cell's processes each warn alike: one line per kind of
    warning, the first process's figures, and how many processes said it."""
    kinds: dict[str, list[str]] = {}
    for warning in filter(None, warnings.split("; ")):
        about = warning.split(":", 1)[0]
        if about not in PHASES or about == phase:
            kind = re.sub(r"\d[\d.]*", "#", warning.split(" (", 1)[0])  # figures aside
            kinds.setdefault(kind, []).append(warning)
    out = []
    for said in kinds.values():
        first, n = said[0], len(said)
        if n > 1:
            first = (
                f"{first[:-1]}; {n} processes)"
                if first.endswith(")")
                else f"{first} ({n} processes)"
            )
        out.append(first)
    return out


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
    df: float  # of the interval of its replicates


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
        mine = term_warnings(got.warnings, t.get("phase", "steady"))
        if mine:
            warnings.append(f"{t['impl']} at {size}: {'; '.join(mine)}")
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
        value,
        reps,
        models,
        min(counts),
        sorted(set(warnings)),
        list(dict.fromkeys(samples)),
        how,
        view.process_df(num + den, size),
    )


def _result(
    part: dict[str, Any],
    value: float,
    reps: np.ndarray | None,
    passed: bool | None = None,
    **fields: Any,
) -> PartResult:
    """A measured part, judged on this run's CI of its replicates (blockbench.judge.studies may
    widen it later), or on `passed` (checks)."""
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
        df=got.df,
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
        scale="linear",
        df=min(m.df for m in each),
    )


@dataclass
class Growth:
    """A phase's time against the workload's amount of work, fitted as a power law."""

    rows: pd.DataFrame  # the cells fitted, by size: size, work, median_s, n_min, device_model
    exponent: float
    replicates: np.ndarray
    df: float


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
    df = min(view.process_df([term], s) for s in rows["size"])
    return Growth(rows, slope, reps, df)


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
        scale="linear",
        df=fit.df,
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


def with_between(r: PartResult, between: Between | None) -> PartResult:
    """The part judged again on its run's interval widened by a stored between-run variance
    (random_effects.widen), the interval's shape on the analysis scale kept."""
    se = r.se
    if between is None or se is None or se <= 0:
        return r
    y = r.on_scale(r.measured)
    low, high = r.on_scale(r.run_low), r.on_scale(r.run_high)
    wide_low, wide_high, _ = widen(y, se, r.df, between)
    stretch = (wide_high - wide_low) / (high - low)
    if stretch <= 1 + 1e-12:  # the run's own interval stands (random_effects.widen)
        low, high = r.run_low, r.run_high
    else:
        low, high = r.from_scale(y - (y - low) * stretch), r.from_scale(y + (high - y) * stretch)
    return replace(
        r, ci_low=low, ci_high=high, outcome=decide(r.condition, low, high), between=between
    )


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
        return INCONCLUSIVE, "; ".join(_undecided(p) for p in open_)
    return REPRODUCED, ""


def part_ci(p: PartResult) -> str:
    return value_ci(p.measured, p.ci_low, p.ci_high)


def _undecided(p: PartResult) -> str:
    if p.indicative:
        return f"{p.name} {p.outcome} but was {p.setup}: indicative only"
    return f"{p.name}: its 95% CI {part_ci(p)} straddles the rule {p.condition}"


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
