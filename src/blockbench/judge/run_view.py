"""What one run measured, as the claims read it: its cells' values and process replicates,
the sizes each cell has, and the paired ratio of two sets of cells at one size."""

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from blockbench.judge import resampling
from blockbench.judge.aggregate import CELL, replicate_key
from blockbench.judge.studies import Kind, Study, kind_of
from blockbench.records.spec import PHASES

MIN_SAMPLES = 5  # fewer samples than this in a phase a part uses is flagged


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
