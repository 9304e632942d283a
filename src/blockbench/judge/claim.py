"""What a claim is, once its catalog has been read (blockbench.judge.catalog): frozen, typed
objects with every default applied, so that no reader restates one.

A claim has parts; a part is one of the KINDS:
- `ratio`: the sum of its `num` terms' times over the sum of its `den` terms' at one size;
- `trend`: the exponent of that ratio against size (> 0: it grows with size);
- `growth`: the exponent of one term's time against its workload's amount of work;
- `check`: every named cell matched the float64 reference (and published values, if any).
A term is a cell without its size, and the phase read of it. A rule is the condition a
part's value must meet (`> 1.1`, `between 1.4 and 3`), decided three ways on an interval.
"""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from blockbench.errors import InputError
from blockbench.records.layout import Cell
from blockbench.records.spec import STEADY

RATIO, TREND, GROWTH, CHECK = KINDS = ("ratio", "trend", "growth", "check")
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"
CONDITION = re.compile(r"^\s*(>=|>|<=|<)\s*([0-9.eE+-]+)\s*$|^\s*between\s+(\S+)\s+and\s+(\S+)\s*$")


class ClaimConfigError(InputError):
    """A claims file entry that cannot be evaluated."""


@dataclass(frozen=True)
class Region:
    """The values a condition accepts: an interval, open or closed at each end."""

    low: float
    high: float
    low_closed: bool
    high_closed: bool

    def below(self, x: float) -> bool:
        return x < self.low or (x == self.low and not self.low_closed)

    def above(self, x: float) -> bool:
        return x > self.high or (x == self.high and not self.high_closed)

    @property
    def two_sided(self) -> bool:
        """`between a and b`: a value inside can be refused on either side."""
        return math.isfinite(self.low) and math.isfinite(self.high)


def region(condition: str) -> Region:
    """The region a condition accepts; a condition no one could read is refused."""
    m = CONDITION.match(condition)
    if not m:
        raise ClaimConfigError(f"unreadable condition {condition!r}")
    if not m.group(1):
        return Region(float(m.group(3)), float(m.group(4)), True, True)
    op, t = m.group(1), float(m.group(2))
    if op in (">", ">="):
        return Region(t, math.inf, op == ">=", False)
    return Region(-math.inf, t, False, op == "<=")


def decide(condition: str, low: float, high: float) -> str:
    """Three-way: `holds` when the whole interval [low, high] satisfies the condition,
    `fails` when none of it does, `inconclusive` when it straddles a boundary."""
    r = region(condition)
    if r.below(high) or r.above(low):
        return FAILS
    if r.below(low) or r.above(high):
        return INCONCLUSIVE
    return HOLDS


@dataclass(frozen=True)
class Term:
    """A cell a part reads, but for its size, and the phase read of it."""

    device: str
    workload: str
    impl: str
    phase: str = STEADY

    @property
    def cell(self) -> tuple[str, str, str]:
        return self.device, self.workload, self.impl

    def at(self, size: int) -> Cell:
        return Cell(self.device, self.workload, self.impl, size)


@dataclass(frozen=True)
class Part:
    """One part of a claim, as its catalog states it (blockbench.judge.catalog reads it)."""

    name: str
    kind: str
    code: str  # the article's code line it reproduces
    num: tuple[Term, ...] = ()
    den: tuple[Term, ...] = ()
    of: Term | None = None  # a growth's term
    checked: tuple[Term, ...] = ()  # a check's cells, one per implementation
    size: int | None = None  # the article's
    measure_at: int | None = None  # where the default run measures it, where not `size`
    sizes: tuple[int, ...] = ()  # a trend's or growth's, as the default run fits them
    article_sizes: tuple[int, ...] = ()  # the article's own, where they differ
    holds_if: str = ""  # its rule ('': a check, judged on its cells' own checks)
    why: str = ""  # what in the article the rule stands for
    precision: float | None = None  # its own target, a factor either way
    article: float | None = None  # the article's figure, from the catalog's figures.yaml
    article_expression: str | None = None  # as the catalog names it (A.blocked / A.dispatch)
    article_says: str | None = None  # the article's words for it

    @property
    def terms(self) -> tuple[Term, ...]:
        """Every term the part names: its num and den, a growth's `of`, a check's cells."""
        return (*self.num, *self.den, *((self.of,) if self.of else ()), *self.checked)

    @property
    def devices(self) -> set[str]:
        return {t.device for t in self.terms}

    @property
    def fitted(self) -> bool:
        """A trend or a growth: a fit over sizes, not a value at one."""
        return self.kind in (TREND, GROWTH)

    @property
    def one_ratio(self) -> bool:
        """A ratio: one value at one size, which rounds added on demand can judge in two
        looks (blockbench.judge.part_evaluators)."""
        return self.kind == RATIO

    @property
    def timed(self) -> bool:
        """Read from times, with an interval (every kind but a check)."""
        return self.kind != CHECK

    def sizes_for(self, claim_sizes: str = "default") -> list[int]:
        """The sizes it is measured at: the default run's (`measure_at`, else the article's
        `size`; a fit's `sizes`), or with `claim_sizes: article` the article's own."""
        article = claim_sizes == "article"
        if self.fitted:
            return list(self.article_sizes or self.sizes if article else self.sizes)
        # the first given of the two (the parser asks every part at one size for one)
        either = (self.size, self.measure_at) if article else (self.measure_at, self.size)
        return [next(n for n in either if n is not None)]

    def reads(self, cell: Cell, size: int | None) -> bool:
        """Whether its value, measured at `size`, reads the time of `cell` (a fit reads
        every size; a check reads no time)."""
        named = any(t.at(cell.size) == cell for t in self.terms)
        return self.timed and named and (self.fitted or cell.size == size)

    def margin(self) -> float | None:
        """How many times the article's figure clears the nearest boundary of its rule
        (None: no figure, not a ratio, or a figure its own rule refuses)."""
        if self.kind != RATIO or not self.holds_if or self.article is None:
            return None
        if self.article <= 0:
            return None
        r = region(self.holds_if)
        if r.below(self.article) or r.above(self.article):
            return None
        return min(self.article / r.low if r.low > 0 else math.inf, r.high / self.article)


@dataclass(frozen=True)
class Claim:
    """A claim of a catalog, with its parts and the settings its cells are measured with."""

    id: str
    slug: str
    source: str
    statement: str
    parts: tuple[Part, ...]
    article: str  # the article's words for every figure its parts quote, each once
    catalog: str = ""
    file: str = ""
    note: str = ""
    # which of its cells (devices, workload, impls, sizes) are measured how (phases,
    # repeats, sampling), with why: read by the grid as a config block's are
    settings: tuple[Mapping[str, Any], ...] = ()

    @property
    def devices(self) -> set[str]:
        return set().union(*(p.devices for p in self.parts))
