"""The claims parser: reading the claims catalogs (config/claims/<catalog>/, and a user's own
beside them) into the frozen claims of blockbench.judge.claim, every default applied here,
and the precision each part needs.

A catalog is a folder: `claims.yaml`, and `figures.yaml` with its sources' published figures
(blockbench.judge.articles), which its parts name. Rules live in configuration, not code, so
that a reader can check each one by eye; this module refuses an entry that could never be
judged before anything is measured. What a part needs is read from the claim too (how far
its article's figure clears its rule), so the measurements never set their own target.
"""

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from blockbench.errors import InputError
from blockbench.judge import articles
from blockbench.judge.articles import SAYS_JOIN, Articles
from blockbench.judge.claim import KINDS, RATIO, Claim, ClaimConfigError, Part, Term, region
from blockbench.records.layout import Cell
from blockbench.records.spec import PHASES, STEADY
from blockbench.workloads import registry
from blockbench.workloads.registry import WORKLOADS, check_term

CLAIM_KEYS = ("id", "slug", "source", "statement", "parts")
OPTIONAL_CLAIM_KEYS = ("settings", "note")
PART_KEYS = (
    "name", "kind", "code", "num", "den", "of", "cells", "size", "measure_at", "sizes",
    "article_sizes", "holds_if", "why", "precision", "article",
)  # fmt: skip
# The `claims` config value: catalogs (folders) and claims files, read one after another.
ClaimsFiles = str | Path | Sequence[str | Path]
CLAIMS_FILE, FIGURES_FILE = "claims.yaml", "figures.yaml"
# Paths an older config names, and what replaced them.
REPLACED = {"config/claims.yaml": "config/claims/articles"}
# A claim's `settings`: which of its cells (devices, workload, impls, sizes), and how they
# are measured where the run's defaults do not do (phases, repeats, sampling), with why.
SELECTORS = ("devices", "workload", "impls", "sizes")
SETTINGS = ("phases", "repeats", "sampling")


def selects(entry: Mapping[str, Any], cell: Cell) -> bool:
    """Whether a claim's settings entry is about `cell` (an absent selector: every one):
    the grid's settings and the anatomy's unmeasured phases read it alike."""
    return (
        cell.device in entry.get("devices", [cell.device])
        and entry.get("workload", cell.workload) == cell.workload
        and cell.impl in entry.get("impls", [cell.impl])
        and cell.size in entry.get("sizes", [cell.size])
    )


# The coarsest precision a claim's margin may ask for (a factor either way): what the jit-of-
# loops ratios, judged "> 1", state for themselves in their claims file.
COARSEST = 2.0


@dataclass(frozen=True)
class Precision:
    """What each part is measured to, a factor either way (an exponent: its log, as a
    difference). A part's own `precision` wins; else, with `from_claims`, a ratio whose
    article clears its rule by a factor m is measured to sqrt(m) (between `factor` and
    COARSEST): any value within that of the article's figure is then decided, the boundary
    lying two half-widths away. Sized from the claim alone, before anything is measured, so
    the verdict still plays no part in the rounds; else the run's `factor`."""

    factor: float
    from_claims: bool = True

    def of(self, part: Part) -> float:
        if part.precision is not None:
            return part.precision
        m = part.margin() if self.from_claims else None
        return self.factor if m is None else min(COARSEST, max(self.factor, math.sqrt(m)))

    def words(self) -> str:
        """As the run's design names it (blockbench.pipeline.grid.design)."""
        return f"precision x{self.factor:g}" + (", sized to each claim" if self.from_claims else "")


def _sides(side: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A part's `num` or `den` as a list of terms (a side may name one term or several)."""
    return side if isinstance(side, list) else [side]


def _named(part: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (device, workload, impl, phase) an entry names: its num and den terms, a
    growth's `of`, a check's `cells` (one per impl)."""
    named = [t for side in ("num", "den") for t in _sides(part.get(side, []))]
    if "of" in part:
        named.append(part["of"])
    if "cells" in part:
        group = part["cells"]
        named += [{**group, "impl": impl} for impl in group.get("impls", [])]
    return named


def _term(entry: dict[str, Any]) -> Term:
    return Term(entry["device"], entry["workload"], entry["impl"], entry.get("phase", STEADY))


def _check_names(where: str, part: dict[str, Any]) -> None:
    """A device, workload, implementation or phase that does not exist would leave the part
    with no cell to read, and the run would plan as if it were not there: refused here."""
    for term in _named(part):
        names = (term.get(k) for k in ("device", "workload", "impl"))
        try:
            check_term(*names, term.get("phase", STEADY))
        except ValueError as exc:
            raise ClaimConfigError(f"{where}: {exc}") from None


def _check_sizes(where: str, part: dict[str, Any]) -> None:
    """A ratio or check part says the article's `size` and, where the default run measures
    it elsewhere, `measure_at`; a trend or growth part the `sizes` it fits (and, where the
    article's differ, `article_sizes`). Each must be a size of every workload it names."""
    if part.get("kind", RATIO) in ("trend", "growth"):
        keys, lists = ("sizes", "article_sizes"), True
        if "sizes" not in part:
            raise ClaimConfigError(f"{where}: no 'sizes' (the sizes its fit runs over)")
    else:
        keys, lists = ("size", "measure_at"), False
        if "size" not in part and "measure_at" not in part:
            raise ClaimConfigError(f"{where}: no 'size' (the article's) or 'measure_at'")
    for key in keys:
        value = part.get(key)
        if value is None:
            continue
        sizes = value if lists else [value]
        if not (isinstance(sizes, list) and sizes and all(isinstance(n, int) for n in sizes)):
            want = "a list of integers" if lists else "an integer"
            raise ClaimConfigError(f"{where}: {key} {value!r} is not {want}")
        for workload in {t["workload"] for t in _named(part)}:
            for n in sizes:
                try:
                    WORKLOADS[workload].validate_size(n)
                except ValueError as exc:
                    raise ClaimConfigError(f"{where}: {key} {n}: {exc}") from None


def _check_part(where: str, part: dict[str, Any]) -> None:
    unknown = sorted(set(part) - set(PART_KEYS))
    if unknown:
        raise ClaimConfigError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(PART_KEYS)})"
        )
    kind = part.get("kind", RATIO)
    if kind not in KINDS:
        raise ClaimConfigError(f"{where}: unknown kind {kind!r}")
    if "code" not in part:
        raise ClaimConfigError(f"{where}: no 'code' (the article's code line it reproduces)")
    precision = part.get("precision")
    if precision is not None and not (isinstance(precision, int | float) and precision > 1):
        raise ClaimConfigError(f"{where}: precision {precision!r} is not a factor above 1")
    _check_names(where, part)
    _check_sizes(where, part)
    if kind != "check" and "holds_if" not in part:
        raise ClaimConfigError(f"{where}: no 'holds_if' (the rule its value must meet)")
    if "holds_if" in part:
        try:
            region(part["holds_if"])
        except ClaimConfigError as exc:
            raise ClaimConfigError(f"{where}: {exc}") from None
        if not part.get("why"):
            raise ClaimConfigError(f"{where}: no 'why' (what in the article the rule stands for)")


def _check_settings(where: str, claim: dict[str, Any]) -> None:
    """Each of a claim's `settings` selects some of its cells and says how to measure them,
    with one line of why (the evidence lives in docs/method.md)."""
    for i, entry in enumerate(claim.get("settings", [])):
        at = f"{where}, settings[{i}]"
        if not isinstance(entry, dict):
            raise ClaimConfigError(f"{at}: expected a mapping")
        unknown = set(entry) - {*SELECTORS, *SETTINGS, "why"}
        if unknown:
            raise ClaimConfigError(f"{at}: unknown key {sorted(unknown)[0]!r}")
        if not entry.get("why"):
            raise ClaimConfigError(f"{at}: no 'why' (one line: why these cells need it)")
        if not set(entry) & set(SETTINGS):
            raise ClaimConfigError(f"{at}: sets none of {', '.join(SETTINGS)}")
        for phase in entry.get("phases", []):
            if phase not in PHASES:
                raise ClaimConfigError(f"{at}: no phase {phase!r} (known: {', '.join(PHASES)})")
        repeats = entry.get("repeats", 1)
        if not (isinstance(repeats, int) and repeats >= 1):
            raise ClaimConfigError(f"{at}: repeats {repeats!r} is not a count of processes")


def _part(where: str, part: dict[str, Any], figures: Articles) -> Part:
    """The entry as a Part, its `article` (names in its catalog's figures.yaml) read as its
    value, with the expression and the article's words beside it for the report."""
    expression, value, says = part.get("article"), None, None
    if expression is not None and not isinstance(expression, str):
        raise ClaimConfigError(
            f"{where}: article {expression!r} is a number; write it in the catalog's figures.yaml"
            " and name it here (e.g. A.blocked / A.dispatch)"
        )
    kind = part.get("kind", RATIO)
    if expression is not None:
        try:
            says = figures.says(expression)
            value = None if kind == "check" else figures.ratio(expression)
        except InputError as exc:
            raise ClaimConfigError(f"{where}: {exc}") from None
    group = part.get("cells", {})
    return Part(
        name=part["name"],
        kind=kind,
        code=part["code"],
        num=tuple(map(_term, _sides(part.get("num", [])))),
        den=tuple(map(_term, _sides(part.get("den", [])))),
        of=_term(part["of"]) if "of" in part else None,
        checked=tuple(_term({**group, "impl": i}) for i in group.get("impls", [])),
        size=part.get("size"),
        measure_at=part.get("measure_at"),
        sizes=tuple(part.get("sizes", ())),
        article_sizes=tuple(part.get("article_sizes", ())),
        holds_if=part.get("holds_if", ""),
        why=part.get("why", ""),
        precision=None if part.get("precision") is None else float(part["precision"]),
        article=value,
        article_expression=expression,
        article_says=says,
    )


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def catalog_name(path: Path) -> str:
    """A catalog's name: its folder's, or a lone claims file's own stem; it names the
    catalog's figure, so it is a plain file name."""
    name = path.parent.name if path.name == CLAIMS_FILE else path.stem
    if not NAME.match(name):
        raise ClaimConfigError(f"{path}: catalog name {name!r} is not letters, digits, - and _")
    return name


def claim_paths(value: ClaimsFiles) -> list[str]:
    """The paths `claims` names, in order: one path stands for a list of one."""
    return [str(value)] if isinstance(value, str | Path) else [str(v) for v in value]


def claims_files(value: ClaimsFiles) -> list[Path]:
    """The claims files `claims` names, in order: a catalog folder stands for its
    claims.yaml, and the workload modules of its `workloads/` are added to the registry
    first (blockbench.workloads.registry.use_catalog). A path an older config names is
    refused with what replaced it."""
    files = []
    for i, given in enumerate(map(Path, claim_paths(value))):
        for old, new in REPLACED.items():
            if given.as_posix().endswith(old):
                raise ClaimConfigError(
                    f"config key claims[{i}]: {str(given)!r} was replaced by the catalog "
                    f"{new} (its claims.yaml and figures.yaml; config/README.md, Catalogs)"
                )
        path = given / CLAIMS_FILE if given.is_dir() else given
        if path.name == CLAIMS_FILE and path.is_file():  # its workloads join the registry
            try:
                registry.use_catalog(path.parent)
            except registry.CatalogError as exc:
                raise ClaimConfigError(f"config key claims[{i}]: {exc}") from None
        if not path.is_file():
            raise ClaimConfigError(
                f"config key claims[{i}]: {str(given)!r} is neither a catalog folder "
                f"(with a {CLAIMS_FILE}) nor a claims file"
            )
        files.append(path)
    return files


def _own_figures(path: Path) -> Path | None:
    """A claims file's catalog figures: figures.yaml beside a claims.yaml, if there is one
    (a lone claims file of another name has none)."""
    own = path.parent / FIGURES_FILE
    return own if path.name == CLAIMS_FILE and own.is_file() else None


def figures_files(value: ClaimsFiles) -> list[Path]:
    """The published figures of the catalogs `claims` names: what the stages read besides
    the claims files."""
    return [f for f in map(_own_figures, claims_files(value)) if f is not None]


def _catalogs_figures(files: list[Path]) -> dict[Path, Articles]:
    """Each catalog's figures (of its resolved claims `files`), read once; a source's key
    (A, B, ...) names one source in the run, so that a figure drawn by source is never
    another catalog's."""
    out: dict[Path, Articles] = {}
    where: dict[str, Path] = {}
    for file in (f for f in map(_own_figures, files) if f is not None):
        out[file] = articles.load(file)
        for key in out[file].sources:
            if where.setdefault(key, file) != file:
                raise ClaimConfigError(f"source {key!r} is in both {where[key]} and {file}")
    return out


def figures(value: ClaimsFiles) -> Articles:
    """The published figures of every catalog `claims` names, as one set."""
    catalogs = _catalogs_figures(claims_files(value))
    return Articles({k: s for f in catalogs.values() for k, s in f.sources.items()})


def read_claims(value: ClaimsFiles, only: Sequence[str] = ()) -> list[Claim]:
    """Read the claims files in order and join their claims, refusing an entry that could
    never be judged and an id or slug that two entries share: a user's file adds claims to
    blockbench's, never silently overrides one. Each part's article figures are read from
    its own catalog's figures.yaml, so each lives in one place. `only` (config `only`): the
    ids of the claims the run measures and judges, every one where it names none."""
    files = claims_files(value)
    catalogs = _catalogs_figures(files)  # sources two catalogs share are refused first
    claims: list[Claim] = []
    seen: dict[tuple[str, Any], tuple[int, Path]] = {}  # (key, value) -> (file's place, file)
    for i, path in enumerate(files):
        for claim in _read(path, catalogs.get(_own_figures(path), Articles({}))):
            for key in ("id", "slug"):
                said = getattr(claim, key)
                if (key, said) in seen:
                    j, first = seen[key, said]
                    where = f"twice in {path}" if j == i else f"in both {first} and {path}"
                    raise ClaimConfigError(f"claim {key} {said!r} is {where}")
                seen[key, said] = (i, path)
            claims.append(replace(claim, catalog=catalog_name(path), file=str(path)))
    return chosen(claims, only)


def chosen(claims: list[Claim], only: Sequence[str]) -> list[Claim]:
    """The claims `only` names, in the catalogs' order (all where it names none); an id no
    catalog has is refused, naming it and the ids there are."""
    known = [c.id for c in claims]
    for i, wanted in enumerate(only):
        if wanted not in known:
            raise ClaimConfigError(
                f"config key only[{i}]: no claim {wanted!r} in the catalogs "
                f"(known: {', '.join(known)})"
            )
    return [c for c in claims if c.id in only] if only else claims


def _read(path: Path, figures: Articles) -> list[Claim]:
    """One claims file's claims, each checked, the article figures its parts name read."""
    try:
        entries = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f", line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ClaimConfigError(f"{path}{at}: not valid YAML ({problem})") from None
    return parsed(entries, figures, str(path))


def parsed(entries: Any, figures: Articles | None = None, where: str = "claims") -> list[Claim]:
    """A claims file's entries (YAML's list of mappings) as claims, each checked, the
    article figures its parts name read from `figures`."""
    if not isinstance(entries, list):
        raise ClaimConfigError(f"{where}: expected a list of claims")
    return [
        _claim(f"{where}: claim #{i + 1}", c, figures or Articles({}))
        for i, c in enumerate(entries)
    ]


def _claim(where: str, claim: Any, figures: Articles) -> Claim:
    if not isinstance(claim, dict):
        raise ClaimConfigError(f"{where}: expected a mapping")
    for key in CLAIM_KEYS:
        if key not in claim:
            raise ClaimConfigError(f"{where} has no {key!r}")
    unknown = sorted(set(claim) - {*CLAIM_KEYS, *OPTIONAL_CLAIM_KEYS, "catalog", "file"})
    if unknown:
        raise ClaimConfigError(f"{where} ({claim['id']}): unknown key {unknown[0]!r}")
    at = where.rsplit(": claim #", 1)[0] + f": claim {claim['id']}"
    parts = tuple(
        _checked_part(f"{at}, part {part.get('name')!r}", part, figures) for part in claim["parts"]
    )
    _check_settings(at, claim)
    # each figure once, though several parts quote it (C3's NumPy time)
    quoted = [p.article_says for p in parts if p.article_says is not None]
    said = dict.fromkeys(s for q in quoted for s in q.split(SAYS_JOIN))
    return Claim(
        id=claim["id"],
        slug=claim["slug"],
        source=claim["source"],
        statement=claim["statement"],
        parts=parts,
        article=SAYS_JOIN.join(said) or "qualitative (no figure)",
        catalog=claim.get("catalog", ""),
        file=claim.get("file", ""),
        note=claim.get("note", ""),
        settings=tuple(MappingProxyType(dict(e)) for e in claim.get("settings", [])),
    )


def _checked_part(where: str, part: dict[str, Any], figures: Articles) -> Part:
    _check_part(where, part)
    return _part(where, part, figures)
