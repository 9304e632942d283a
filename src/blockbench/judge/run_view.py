"""What one run measured, as the claims read it: its cells' values and their uncertainty
(blockbench.judge.uncertainty), the sizes each cell has, and the paired ratio of two sets of
cells at one size."""

import copy
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from blockbench.judge import aggregate, uncertainty
from blockbench.judge.claim import Term
from blockbench.judge.studies import Study, blas_of, design_of, host_of, kind_of
from blockbench.judge.uncertainty import Spread
from blockbench.measure.core_speed import classify
from blockbench.records.layout import CELL, Cell
from blockbench.records.machines import Kind
from blockbench.records.spec import PHASES
from blockbench.workloads.matmul import BELOW_FLOAT32


class Missing(Exception):
    """A cell a claim needs was not measured fine; the message says why."""


def samples_note(row: Any, term: Term) -> str:
    """'jax dispatch at 1000: of 90 samples 1% disturbed from outside [0%, 6%], left out, and
    12% inside the cell [7%, 20%], kept; 10% in a slow mode [...]': where the statistics'
    samples came from."""
    said = []
    share = row.get("disturbed_fraction")
    inside = row.get("inside_fraction")
    if share is not None and not pd.isna(share) and (share > 0 or inside > 0):
        said.append(
            f"of {int(row['n_all'])} samples {share:.0%} disturbed from outside "
            f"[{row['disturbed_ci_low']:.0%}, {row['disturbed_ci_high']:.0%}], left out, and "
            f"{row['inside_fraction']:.0%} inside the cell "
            f"[{row['inside_ci_low']:.0%}, {row['inside_ci_high']:.0%}], kept"
        )
    slow = row.get("slow_fraction")
    if slow is not None and not pd.isna(slow) and slow > 0:
        said.append(
            f"{slow:.0%} in a slow mode [{row['slow_ci_low']:.0%}, {row['slow_ci_high']:.0%}]"
        )
    if not said:
        return ""
    return f"{term.impl} {term.phase} at {row['size']}: " + "; ".join(said)


class RunView:
    """The cells of one run label, with their processes for the intervals, and lookups that
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
        # a run measures one JAX release (blockbench.pipeline.versions)
        self.jax_version = ", ".join(sorted(set(self.df["jax_version"].dropna())))
        self.kind = kind_of(self.df) if "cpu_model" in self.df else None
        # whether its host's cores kept their speed, from every process's reading
        self.core_speed = core_speed_of(mine)
        # the kernel NumPy's BLAS ran: another kernel is another NumPy speed
        self.blas = blas_of(mine)
        # the between-run study of this kind of machine, if one was made by this method on
        # this host (or one the study's scope admits) that behaved as this run's
        found = (studies or {}).get(self.kind) if self.kind else None
        self.study_note = (
            found.why_not_applied(self.core_speed, design_of(mine), self.blas, host_of(mine))
            if found
            else ""
        )
        self.study = found if found and not self.study_note else None
        # two looks (blockbench.judge.stopping): the most rounds a cell may take (0: one look)
        self.max_rounds = int(mine["max_rounds"].max()) if "max_rounds" in mine else 0
        self.stein = True  # an interval on rounds added on demand is Stein's (see all_rounds)

    @classmethod
    def each(
        cls, cells: pd.DataFrame, processes: pd.DataFrame, studies: dict[Kind, Study] | None = None
    ) -> list["RunView"]:
        """One view per run label: claims are judged run by run."""
        return [
            cls(cells, processes, label, studies) for label in sorted(cells["run_label"].unique())
        ]

    @property
    def pool_key(self) -> tuple | None:
        """Runs that may be pooled share this: the kind of machine, NumPy's BLAS kernel and
        the JAX release (None: the kind is unknown, so the run stands alone)."""
        if self.kind is None:
            return None
        return (self.kind, self.blas, self.jax_version)

    def steadied(self, cells: Iterable[Cell]) -> "RunView":
        """This view with the processes of `cells` all at their
        geometric mean: what a value would spread without those cells' process-to-process
        variation (blockbench.judge.stopping weighs a part's units by it)."""
        keys = {(self.run_label, c.device, c.workload, c.impl, c.size) for c in cells}
        other = copy.copy(self)
        other._processes = {
            key: (
                g.assign(median_s=math.exp(float(np.log(g["median_s"].astype(float)).mean())))
                if key[:5] in keys
                else g
            )
            for key, g in self._processes.items()
        }
        return other

    def first_stage(self) -> "RunView":
        """This view with each cell's processes cut to its first stage: the first look."""
        other = copy.copy(self)
        other._processes = {
            key: g[g.index < g["first_rounds"]] if (g["first_rounds"] > 0).all() else g
            for key, g in self._processes.items()
        }
        return other

    def all_rounds(self) -> "RunView":
        """This view with the ordinary t over every round: the second look's interval where
        a part took max_rounds, a count fixed before anything was measured."""
        other = copy.copy(self)
        other.stein = False
        return other

    def _cell_rows(self, term: Term, size: int | None = None) -> pd.DataFrame:
        d = self.df
        mask = (
            (d["device"] == term.device)
            & (d["workload"] == term.workload)
            & (d["impl"] == term.impl)
        )
        if size is not None:
            mask &= d["size"] == size
        return d[mask]

    def ok_rows(self, term: Term, size: int | None = None) -> pd.DataFrame:
        """The rows a part may be judged on: measured fine, and its float32 products run in
        float32 (a TF32 product on a GPU is several times faster than the articles' was)."""
        rows = self._cell_rows(term, size)
        fine = (rows["status"] == "ok") & (rows["phase"] == term.phase)
        return rows[fine & ~below_float32(rows)]

    def why_missing(self, term: Term, size: int | None = None) -> str:
        rows = self._cell_rows(term, size)
        where = f"{term.workload}/{term.impl} on {term.device}"
        if size is not None:
            where += f" at size {size}"
        if term.device not in self.devices:
            return f"{term.device} not in this run (devices: {', '.join(sorted(self.devices))})"
        bad = rows[rows["status"] != "ok"]
        if not bad.empty:
            first = bad.iloc[0]
            return f"{where} is {first['status']}: {first['reason']}"
        if below_float32(rows).any():
            asked = rows["matmul_precision"].iloc[0]
            return (
                f"{where} multiplied in {BELOW_FLOAT32}, not float32 (its measured precision;"
                f" matmul_precision: {asked}, where the article computed float32)"
            )
        if not rows.empty:
            return f"{where}: phase {term.phase} was not measured"
        return f"{where} was not measured"

    def stein_lost(self, term: Term, size: int) -> bool:
        """Whether a cell took rounds after its first stage and kept fewer than two of that
        stage's processes: uncertainty.of_processes then has no first-stage spread and uses
        every round, whose count that stage chose (the part says so: STEIN_LOST)."""
        rows = self.processes_of(term, size)
        first = first_rounds([rows])
        added = bool((rows.index >= first).any())
        return self.stein and first > 0 and added and (rows.index < first).sum() < 2

    def sizes_ok(self, term: Term) -> set[int]:
        return set(self.ok_rows(term)["size"])

    def processes_of(self, term: Term, size: int) -> pd.DataFrame:
        """The processes' rows of one cell and phase, indexed by process (`repeat`)."""
        cell = (self.run_label, term.device, term.workload, term.impl, size)
        return self._processes[(*cell, term.phase)]

    def row(self, term: Term, size: int) -> pd.Series:
        """The cell table's row of one term at one size, or Missing saying why there is none."""
        hit = self.ok_rows(term, size)
        if hit.empty:
            raise Missing(self.why_missing(term, size))
        return hit.iloc[0]

    def time_of(self, terms: Sequence[Term], size: int) -> tuple[Spread, int]:
        """The log of the summed time of `terms`, all of one cell, and the processes behind
        it: per process the phases are added, then blockbench.judge.uncertainty.of_processes
        (a single phase gives the interval of the cell table, `of_cell`)."""
        rows = [self.processes_of(t, size) for t in terms]
        common = sorted(set.intersection(*(set(r.index) for r in rows)))
        if len(common) == 1:  # one process: its samples are all there is
            samples = [r.loc[common[0], "kept_s"] for r in rows]
            if len(samples) == 1:
                return uncertainty.of_samples(samples[0]), 1
            parts = [uncertainty.of_samples(x) for x in samples]
            return uncertainty.log_sum(parts), 1
        per_process = sum(r.loc[common, "median_s"].to_numpy(float) for r in rows)
        first = first_rounds(rows) if self.stein else 0
        return uncertainty.of_processes(per_process, common, first), len(common)

    def paired_ratio(self, num: list, den: list, size: int) -> tuple[Spread, int] | None:
        """log(num / den) paired by process, and the processes (rounds) it stands on: when
        every term is a phase of one cell measured by several processes, or the terms' cells
        were measured back to back in one block, round by round (blockbench.pipeline.run_order).
        The ratio is taken within each process (round) first, so what it shares (the
        placement, the machine's minute) cancels, and its t has one df fewer than the rounds
        both sides share. None where pairing does not apply."""
        cells = {t.cell for t in num + den}
        rows = {id(t): self.processes_of(t, size) for t in num + den}
        if len(cells) != 1:
            blocks = {b for r in rows.values() for b in r["block"]}
            if len(blocks) != 1 or not next(iter(blocks)):
                return None
        common = sorted(set.intersection(*(set(r.index) for r in rows.values())))
        if len(common) < 2 or split_over_nodes(list(rows.values())):
            return None

        def side(terms: list) -> Any:
            return sum(rows[id(t)].loc[common, "median_s"].to_numpy(float) for t in terms)

        first = first_rounds(list(rows.values())) if self.stein else 0
        return uncertainty.of_processes(side(num) / side(den), common, first), len(common)


def split_over_nodes(rows: list[pd.DataFrame]) -> bool:
    """Whether some round of one block's cells (their process rows) ran on two nodes (a
    cluster placed the cells apart): then nothing that pairing would cancel is shared."""
    blocks = {b for r in rows for b in r["block"]}
    if any("hostname" not in r for r in rows) or len(blocks) != 1 or not next(iter(blocks)):
        return False  # not a block: its cells are independent anyway
    common = sorted(set.intersection(*(set(r.index) for r in rows)))
    nodes = pd.concat([r.loc[common, "hostname"].rename(i) for i, r in enumerate(rows)], axis=1)
    return bool((nodes.nunique(axis=1) > 1).any())


def first_rounds(rows: list[pd.DataFrame]) -> int:
    """The first stage of the cells behind a value, where rounds were added on demand (0: a
    fixed design, or a run made before rounds were): the fewest any of them had."""
    if any("first_rounds" not in r for r in rows):
        return 0
    return int(min(r["first_rounds"].min() for r in rows))


def core_speed_of(processes: pd.DataFrame) -> str:
    """What the core-speed readings of these processes, together, say of their host
    (blockbench.measure.core_speed.classify); `unknown` where none has one."""
    if "core_windows" not in processes:
        return classify([])
    readings = processes.drop_duplicates([*CELL, "repeat"])["core_windows"]
    return classify([w for ws in readings if ws is not None for w in ws])


PLACED = re.compile(r"(\S+) at (\d+): (.*)", re.S)


def collapse(warnings: Iterable[str]) -> list[str]:
    """Each warning once, naming every cell it came from, and each cell's once, with all of
    its warnings ('numpy at 64, 256, 1000: ...'): a forced BLAS kernel warns in every NumPy
    cell, and a fit over four sizes said it four times. A warning tied to no cell stays as
    it is."""
    places: dict[str, dict[str, list[int]]] = {}
    for w in warnings:
        placed = PLACED.fullmatch(w)
        impl, size, text = placed.groups() if placed else ("", "0", w)
        places.setdefault(text, {}).setdefault(impl, []).append(int(size))
    said: dict[str, list[str]] = {}
    for text, where in places.items():
        cells = ", ".join(
            f"{impl} at {', '.join(map(str, sorted(set(sizes))))}"
            for impl, sizes in where.items()
            if impl
        )
        said.setdefault(cells, []).append(text)
    return [
        f"{cells}: {'; '.join(texts)}" if cells else "; ".join(texts)
        for cells, texts in said.items()
    ]


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


def choose_size(view: RunView, terms: Sequence[Term], article_size: int | None) -> int:
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
    """What the terms of one part gave at one size: the log of the ratio, with its
    uncertainty, and the processes (or paired rounds) behind it."""

    log: Spread
    processes: int
    models: set[str]
    n_min: int
    warnings: list[str]
    samples: list[str]
    how: str  # how num and den were paired, if they were

    @property
    def value(self) -> float:
        return math.exp(self.log.estimate)


# Stein's interval needs two first-stage processes; where fewer survive it cannot be built,
# and the ordinary t over every round stands in for it (uncertainty.of_processes).
STEIN_LOST = (
    "fewer than 2 of its first stage's processes survived: its interval is the ordinary t "
    "over every round, whose count that stage chose (it may read narrower than it is)"
)


def below_float32(rows: pd.DataFrame) -> pd.Series:
    """Which cells' float32 products ran in TF32 or lower (False in a table made before
    the probe's reading was kept)."""
    if "product_precision" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["product_precision"] == BELOW_FLOAT32


def measured_on(device: str, row: Any) -> str:
    """`gpu: NVIDIA H200, float32 products (measured)`: the device a term ran on and, off the
    CPU, the precision its products were measured to run in (a claim of float32 is judged
    only on float32: RunView.ok_rows)."""
    said = f"{device}: {row['device_model']}"
    precision = row.get("product_precision")
    measured = device != "cpu" and isinstance(precision, str)
    return said + (f", {precision} products (measured)" if measured else "")


def ratio_at(view: RunView, num: Sequence[Term], den: Sequence[Term], size: int) -> Measured:
    """num / den at one size: paired within processes (rounds) where it can be, else each
    side's cells on their own, a side's cells summed, and the sides' terms combined."""
    num, den = list(num), list(den)
    models: set[str] = set()
    counts: list[int] = []
    warnings: list[str] = []
    samples: list[str] = []
    for t in num + den:
        row = view.row(t, size)  # raises Missing with the reason
        samples.append(samples_note(row, t))  # '' where the kernel said nothing of them
        models.add(measured_on(t.device, row))
        counts.append(int(row["n_min"]))
        warned = row.get("warnings")
        said = warned if isinstance(warned, str) else ""
        warnings += [f"{t.impl} at {size}: {w}" for w in term_warnings(said, t.phase)]
        if view.stein_lost(t, size):
            warnings.append(f"{t.impl} at {size}: {STEIN_LOST}")
    paired = view.paired_ratio(num, den, size)
    how = ""
    if paired is not None and len({(t.device, t.impl) for t in num + den}) > 1:
        how = "cells measured back to back in one block; ratio paired over its rounds"
    if paired is None and split_over_nodes([view.processes_of(t, size) for t in num + den]):
        how = "not paired: a round of its cells ran on two nodes"
    if paired is None:

        def side(terms: list) -> tuple[Spread, int]:
            by_cell: dict[tuple, list] = {}
            for t in terms:
                by_cell.setdefault(t.cell, []).append(t)
            got = [view.time_of(group, size) for group in by_cell.values()]
            return uncertainty.log_sum([g for g, _ in got]), min(n for _, n in got)

        (top, n_top), (bottom, n_bottom) = side(num), side(den)
        paired = (top.plus(bottom.times(-1.0)), min(n_top, n_bottom))
    log, processes = paired
    return Measured(
        log,
        processes,
        models,
        min(counts),
        sorted(set(warnings)),
        list(dict.fromkeys(filter(None, samples))),
        how,
    )


def speedups(cells: pd.DataFrame, processes: pd.DataFrame) -> pd.DataFrame:
    """Each implementation against its workload's CPU baseline (aggregate.speedup_rows), with
    the value a claim reading that ratio gets: paired over the rounds both cells share where
    the claims pair it (RunView.paired_ratio), else the ratio of the cells' values. One value
    per ratio, in the table, its figure and the claims."""
    out = aggregate.speedup_rows(cells)
    views = {view.run_label: view for view in RunView.each(cells, processes)}

    def paired(r: Any) -> float:
        base, cell = Term("cpu", r.workload, r.baseline), Term(r.device, r.workload, r.impl)
        try:
            got = views[r.run_label].paired_ratio([base], [cell], int(r.size))
        except KeyError:  # a cell with no process rows of its steady phase
            got = None
        return r.speedup if got is None else math.exp(got[0].estimate)

    out["speedup"] = [paired(r) for r in out.itertuples()]
    return out
