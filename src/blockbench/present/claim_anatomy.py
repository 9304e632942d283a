"""What each side of a claim's ratio is made of, phase by phase, from the run's own records:
the numbers the anatomy figures draw (blockbench.present.anatomy_figures) and `blockbench
explain` prints, computed here once so that the two never disagree.

A ratio part divides the sum of its numerator's terms by the sum of its denominator's, and a
term is one phase of one cell (blockbench.judge.claim.Term): a side's time is made of the
phases its terms read, each the cell's value in the measurements table (the geometric mean of
its processes' medians, with its 95% interval). The cells' other phases, as measured, are
context. The phase that makes most of the difference is the one whose seconds differ most
between the two sides, a phase a side does not read counting 0 s there. A phase that applies
to a cell but was not measured is named, with what limited it: a claim's `settings: phases`,
or `cell_phases: claimed` where `cell_phases: every` measures every phase.
"""

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from blockbench.judge.articles import Articles, ArticlesError
from blockbench.judge.claim import RATIO, Claim, Part, Term
from blockbench.judge.claim_rules import selects
from blockbench.judge.part_result import PartResult
from blockbench.judge.verdicts import headline, verdict
from blockbench.records.layout import Cell
from blockbench.records.spec import PHASE_WORDS, PHASES
from blockbench.workloads.declare import STYLE_PHASES
from blockbench.workloads.registry import impls_of

NUMERATOR, DENOMINATOR = "numerator", "denominator"
EVERY = "cell_phases: every"  # the config key and value that measure every phase of a cell


def seconds(x: float) -> str:
    """'4.91 ms': a time in the unit a reader says it in, to 3 significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return "0 s" if x == 0 else f"{x * 1e9:.3g} ns"


@dataclass(frozen=True)
class Timed:
    """One phase of one cell as the run measured it: its value and 95% interval, in seconds."""

    cell: Cell
    phase: str
    median_s: float
    low_s: float
    high_s: float


@dataclass(frozen=True)
class Side:
    """One side of a ratio: its terms at the part's size, each as measured (None: not
    measured), and the article's time for the side where the article printed times."""

    name: str
    terms: tuple[Term, ...]
    read: tuple[Timed | None, ...]
    article_s: float | None = None

    @property
    def measured(self) -> bool:
        return bool(self.read) and all(t is not None for t in self.read)

    @property
    def total_s(self) -> float | None:
        return math.fsum(t.median_s for t in self.read if t) if self.measured else None

    def by_phase(self) -> dict[str, float]:
        """Seconds per phase the side reads (summed over its cells), in the harness's order."""
        out = {p: 0.0 for p in PHASES if any(t.phase == p for t in self.read if t)}
        for t in self.read:
            if t is not None:
                out[t.phase] += t.median_s
        return out

    def words(self) -> str:
        """'numerator 4.91 ms: steady 4.91 ms (100%)': the side's time and each term's share
        of it, its cell named where the side reads several."""
        total = self.total_s
        if total is None:
            missing = [
                f"{t.impl} {t.phase}" for t, r in zip(self.terms, self.read, strict=True) if not r
            ]
            return f"{self.name}: not measured ({', '.join(missing)})"
        several = len({t.cell for t in self.read if t}) > 1
        shares = [
            f"{t.phase}{f' of {t.cell.impl}' if several else ''} {seconds(t.median_s)}"
            + (f" ({t.median_s / total:.0%})" if total > 0 else "")
            for t in self.read
            if t is not None
        ]
        return f"{self.name} {seconds(total)}: {', '.join(shares)}"


@dataclass(frozen=True)
class Anatomy:
    """One ratio part of a claim in one run: its two sides phase by phase, every phase
    measured of the cells it reads, and the phases that apply to them but were not measured,
    with the claims whose `settings: phases` left them out."""

    claim_id: str
    part: Part
    run_label: str
    size: int | None
    result: PartResult  # the part as the claims stage judged it (its parts-table row)
    headline: bool  # the part the claim's verdict rests on (judge.verdicts.headline)
    num: Side
    den: Side
    cells: Mapping[Cell, Mapping[str, Timed]]  # each cell read: every phase it measured
    unmeasured: Mapping[Cell, tuple[str, ...]]
    limited_by: Mapping[Cell, tuple[str, ...]]  # claim ids whose settings named its phases

    @property
    def measured(self) -> bool:
        return self.num.measured and self.den.measured

    def side_of(self, cell: Cell, phase: str) -> str | None:
        """The side that reads `phase` of `cell` (None: context, read by neither)."""
        for side in (self.num, self.den):
            if any(t is not None and (t.cell, t.phase) == (cell, phase) for t in side.read):
                return side.name
        return None

    def biggest(self) -> tuple[str, float, float] | None:
        """(phase, numerator's seconds, denominator's): the phase whose time differs most
        between the two sides, in seconds, a phase a side does not read counting 0 there."""
        if not self.measured:
            return None
        num, den = self.num.by_phase(), self.den.by_phase()
        phases = [p for p in PHASES if p in num or p in den]
        phase = max(phases, key=lambda p: abs(num.get(p, 0.0) - den.get(p, 0.0)))
        return phase, num.get(phase, 0.0), den.get(phase, 0.0)

    def difference(self) -> str:
        """The line beneath the figure: the phase that makes most of the difference."""
        found = self.biggest()
        if found is None:
            return ""
        phase, num, den = found
        said = {s: seconds(v) if v else "none" for s, v in ((NUMERATOR, num), (DENOMINATOR, den))}
        return (
            f"Most of the difference (the phase whose seconds differ most between the sides): "
            f"{phase} ({PHASE_WORDS[phase]}), {said[NUMERATOR]} in the numerator against "
            f"{said[DENOMINATOR]} in the denominator"
        )

    def not_measured(self) -> str:
        """Which phases of the cells read the run did not measure, and what measures them."""
        lacking = {c: p for c, p in self.unmeasured.items() if p}
        if not lacking:
            return ""
        groups: dict[tuple[tuple[str, ...], ...], dict[tuple[str, ...], list[str]]] = {}
        for cell, phases in lacking.items():
            kept = tuple(p for p in PHASES if p in self.cells[cell])
            key = (kept, self.limited_by.get(cell, ()))
            groups.setdefault(key, {}).setdefault(phases, []).append(cell.key)
        said = []
        for (kept, by), cells in groups.items():
            why = (
                f"claim {' and '.join(by)}'s `settings: phases` measures {', '.join(kept)} "
                f"alone; without such a setting `{EVERY}`, the default, measures every phase"
                if by
                else f"`{EVERY}` measures them; `cell_phases: claimed` measured the phases "
                "the claims read alone"
            )
            what = "; ".join(f"{', '.join(p)} of {' and '.join(c)}" for p, c in cells.items())
            said.append(f"{what} ({why})")
        return "Not measured in this run: " + ". ".join(said)

    def lines(self) -> list[str]:
        """What the figure says beneath the panel and `explain` prints: each side's phases
        with their shares, the phase that makes most of the difference, what was not measured."""
        if not any(t is not None for t in (*self.num.read, *self.den.read)):
            return []  # not run: the parts table says why
        said = [self.num.words(), self.den.words(), self.difference(), self.not_measured()]
        return [s for s in said if s]


def missing(value: Any) -> bool:
    """An empty cell of a table, however pandas read it (None, NaN, NA)."""
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def _number(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key)
    return None if missing(value) else float(value)


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if missing(value) else str(value)


def part_result(row: Mapping[str, Any]) -> PartResult:
    """A part as a parts table's row holds it (claim_parts.csv or .parquet, older ones too):
    what the report's words for a part (judge.verdicts.part_line) and its verdict read."""
    size, article_size = _number(row, "size"), _number(row, "article_size")
    return PartResult(
        _text(row, "part"),
        _text(row, "outcome"),
        measured=_number(row, "measured"),
        ci_low=_number(row, "ci_low"),
        ci_high=_number(row, "ci_high"),
        article=_number(row, "article"),
        condition=_text(row, "condition"),
        why=_text(row, "why"),
        size=None if size is None else int(size),
        article_size=None if article_size is None else int(article_size),
        detail=_text(row, "detail"),
        code=_text(row, "code"),
        scale=_text(row, "scale") or "log",
        decided_low=_number(row, "decided_low"),
        decided_high=_number(row, "decided_high"),
    )


def headline_part(rows: pd.DataFrame) -> str:
    """The part a claim's verdict rests on in one run, from its rows of the parts table, as
    the claims stage chose it (judge.verdicts.headline)."""
    results = [part_result(r) for r in rows.to_dict("records")]
    return headline(verdict(results)[0], results).name


def ratio_parts(claim: Claim) -> list[Part]:
    return [p for p in claim.parts if p.kind == RATIO]


def timed(cells: pd.DataFrame, run_label: str) -> dict[Cell, dict[str, Timed]]:
    """Every cell and phase one run measured, from the measurements table."""
    mine = cells[(cells["run_label"] == run_label) & cells["phase"].notna()]
    out: dict[Cell, dict[str, Timed]] = {}
    for r in mine.to_dict("records"):
        cell = Cell(r["device"], r["workload"], r["impl"], int(r["size"]))
        out.setdefault(cell, {})[r["phase"]] = Timed(
            cell, r["phase"], float(r["median_s"]), float(r["ci95_low_s"]), float(r["ci95_high_s"])
        )
    return out


def applies(cell: Cell) -> tuple[str, ...]:
    """The phases the harness measures for the cell's implementation (every one where its
    workload is not known here)."""
    impl = impls_of(cell.workload).get(cell.impl)
    return STYLE_PHASES[impl.style] if impl else PHASES


def limiting(claims: Iterable[Claim], cell: Cell) -> tuple[str, ...]:
    """The claims whose `settings: phases` name the cell's phases: a claim's settings apply
    to the cells its parts read (as blockbench.pipeline.grid reads them)."""
    out = []
    for claim in claims:
        reads = any(
            t.at(cell.size) == cell and cell.size in _sizes(part)
            for part in claim.parts
            for t in part.terms
        )
        if reads and any(e.get("phases") and selects(e, cell) for e in claim.settings):
            out.append(claim.id)
    return tuple(out)


def _sizes(part: Part) -> set[int]:
    """Every size a run measures the part at, the default's or the article's."""
    try:
        return {*part.sizes_for("default"), *part.sizes_for("article")}
    except StopIteration:  # a part that names no size
        return set()


def article_sides(articles: Articles, part: Part) -> tuple[float | None, float | None]:
    """The article's time for each side of a part, where the figures its expression names
    are times (`A.blocked / A.dispatch`); None for a side printed as a ratio or in words."""
    if not part.article_expression:
        return None, None
    top, _, bottom = part.article_expression.partition("/")
    sides = []
    for side in (top, bottom):
        keys = [k.strip() for k in side.strip().strip("()").split("+") if k.strip()]
        try:
            found = [articles.figure(k) for k in keys]
        except ArticlesError:
            found = []
        numbers = all(f.unit == "s" and isinstance(f.value, int | float) for f in found)
        sides.append(math.fsum(f.value for f in found) if found and numbers else None)
    return sides[0], sides[1]


def anatomy(
    claim: Claim,
    part: Part,
    row: Mapping[str, Any],
    measured: Mapping[Cell, Mapping[str, Timed]],
    claims: Sequence[Claim],
    articles: Articles,
    head: str,
) -> Anatomy:
    """One ratio part of a claim in one run, from its parts-table row and the run's cells."""
    result = part_result(row)
    size = result.size
    if size is None:  # not run: the cells it would have read, at the size it names
        size = part.sizes_for()[0]
    num_s, den_s = article_sides(articles, part)
    sides = []
    for name, terms, article_s in ((NUMERATOR, part.num, num_s), (DENOMINATOR, part.den, den_s)):
        read = tuple(measured.get(t.at(size), {}).get(t.phase) for t in terms)
        sides.append(Side(name, terms, read, article_s))
    read_cells = list(dict.fromkeys(t.at(size) for t in (*part.num, *part.den)))
    cells = {c: measured[c] for c in read_cells if c in measured}
    unmeasured = {c: tuple(p for p in applies(c) if p not in cells[c]) for c in cells}
    return Anatomy(
        claim.id,
        part,
        _text(row, "run_label"),
        result.size,
        result,
        part.name == head,
        sides[0],
        sides[1],
        cells,
        unmeasured,
        {c: limiting(claims, c) for c in cells},
    )


def anatomies(
    claim: Claim,
    claims: Sequence[Claim],
    cells: pd.DataFrame,
    parts: pd.DataFrame,
    articles: Articles,
) -> list[Anatomy]:
    """Each ratio part of `claim` in each run its parts table holds, run by run in order."""
    mine = parts[parts["claim_id"] == claim.id]
    out = []
    for run_label, rows in mine.groupby("run_label", sort=True):
        measured = timed(cells, str(run_label))
        head = headline_part(rows)
        by_name = {r["part"]: r for r in rows.to_dict("records")}
        out += [
            anatomy(claim, part, by_name[part.name], measured, claims, articles, head)
            for part in ratio_parts(claim)
            if part.name in by_name
        ]
    return out
