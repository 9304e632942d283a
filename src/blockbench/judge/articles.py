"""A catalog's published numbers (its figures.yaml): reading them, and the arithmetic
claims do with them.

Each number a source prints lives once, in that file, tied to the cell that
re-measures it; the claims' rules and the article figures both read it from here, so a
corrected figure changes every place it is shown.
"""

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from blockbench.errors import InputError
from blockbench.judge.claim import Term
from blockbench.records.layout import FIELDS
from blockbench.records.spec import STEADY
from blockbench.workloads.registry import check_term

UNITS = ("s", "x", "exponent", "values")
SOURCE_KEYS = ("title", "hardware", "setup", "figures")
CELL_KEYS = {*FIELDS, "phase"}
# `KEY`, `KEY / KEY`, `(KEY + KEY) / KEY`: sums over a sum, nothing more.
SAYS_JOIN = "; "  # between the article's words for each figure a part or claim quotes
TERM = re.compile(r"^[A-Za-z]\w*\.\w+$")


class ArticlesError(InputError):
    """An articles file entry that cannot be used."""


@dataclass(frozen=True)
class Placed:
    """A cell that re-measures a published number: the term read, at the article's size."""

    term: Term
    size: int


@dataclass(frozen=True)
class Figure:
    """One published number and the cell(s) that re-measure it."""

    key: str  # "A.blocked"
    value: float | list[float] | None
    unit: str
    says: str
    cell: Placed | None = None
    num: Placed | None = None
    den: Placed | None = None
    of: Placed | None = None

    @property
    def source(self) -> str:
        return self.key.split(".")[0]


@dataclass(frozen=True)
class Source:
    letter: str
    title: str
    hardware: str
    setup: str
    figures: dict[str, Figure]


@dataclass(frozen=True)
class Articles:
    sources: dict[str, Source]

    def figure(self, key: str) -> Figure:
        letter, _, name = key.partition(".")
        try:
            return self.sources[letter].figures[name]
        except KeyError:
            raise ArticlesError(
                f"no published figure {key!r} in the catalog's figures.yaml"
            ) from None

    def ratio(self, expression: str) -> float | None:
        """The value of `A.blocked / A.dispatch` or `(C.x + C.y) / C.z`; None when a term
        is words only."""
        num, den = _sides(expression)
        values = [[self.figure(k).value for k in side] for side in (num, den)]
        if any(v is None for side in values for v in side):
            return None
        if any(not isinstance(v, int | float) for side in values for v in side):
            raise ArticlesError(f"{expression!r}: only numbers can be divided")
        top, bottom = (math.fsum(side) for side in values)
        return top / bottom if den else top

    def says(self, expression: str) -> str:
        """The article's words for each figure an expression uses."""
        num, den = _sides(expression)
        return SAYS_JOIN.join(dict.fromkeys(self.figure(k).says for k in [*num, *den]))


def _sides(expression: str) -> tuple[list[str], list[str]]:
    top, _, bottom = expression.partition("/")
    sides = []
    for side in (top, bottom):
        side = side.strip().removeprefix("(").removesuffix(")")
        keys = [k.strip() for k in side.split("+")] if side else []
        for k in keys:
            if not TERM.match(k):
                raise ArticlesError(
                    f"{expression!r}: {k!r} is not an article figure (write it as A.name)"
                )
        sides.append(keys)
    if not sides[0]:
        raise ArticlesError(f"{expression!r}: nothing to divide")
    return sides[0], sides[1]


def _placed(where: str, cell: Any) -> Placed:
    if not isinstance(cell, dict) or not {"device", "workload", "impl", "size"} <= set(cell):
        raise ArticlesError(f"{where}: a cell needs device, workload, impl and size, got {cell!r}")
    unknown = set(cell) - CELL_KEYS
    if unknown:
        raise ArticlesError(f"{where}: unknown cell keys {sorted(unknown)}")
    phase = cell.get("phase", STEADY)
    try:
        check_term(cell["device"], cell["workload"], cell["impl"], phase)
    except ValueError as exc:
        raise ArticlesError(f"{where}: {exc}") from None
    return Placed(Term(cell["device"], cell["workload"], cell["impl"], phase), cell["size"])


def _figure(where: str, key: str, entry: Any) -> Figure:
    if not isinstance(entry, dict) or "value" not in entry or "says" not in entry:
        raise ArticlesError(f"{where}: a figure needs 'value' (or null) and 'says'")
    unit = entry.get("unit")
    if unit not in UNITS:
        raise ArticlesError(f"{where}: unit {unit!r} is not one of {list(UNITS)}")
    value = entry["value"]
    if not (value is None or isinstance(value, int | float | list)):
        raise ArticlesError(f"{where}: value {value!r} is not a number")
    cells = {
        k: _placed(f"{where}.{k}", entry[k]) for k in ("cell", "num", "den", "of") if k in entry
    }
    if ("num" in cells) != ("den" in cells):
        raise ArticlesError(f"{where}: a ratio needs both 'num' and 'den'")
    return Figure(key, value, unit, str(entry["says"]), **cells)


def load(path: str | Path) -> Articles:
    """Read the articles file, refusing an entry no figure or claim could use."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict):
        raise ArticlesError(f"{path}: expected a mapping of sources (A, B, ...)")
    sources = {}
    for letter, entry in data.items():
        where = f"{path}: source {letter}"
        missing = [k for k in SOURCE_KEYS if k not in (entry or {})]
        if missing:
            raise ArticlesError(f"{where} has no {missing[0]!r}")
        figures = {
            name: _figure(f"{where}, figure {name}", f"{letter}.{name}", fig)
            for name, fig in entry["figures"].items()
        }
        sources[letter] = Source(letter, entry["title"], entry["hardware"], entry["setup"], figures)
    return Articles(sources)
