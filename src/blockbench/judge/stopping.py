"""Rounds on demand: after a run's first stage, how many rounds each block (and each lone
cell) takes, so that every claim part is decided, or its own interval reaches the precision
it needs, at the least cost; and why each part stopped where it did.

A part of one t term of the run's own takes two looks, each judged at 97.5% (Bonferroni:
blockbench.judge.part_evaluators, docs/statistics.md): decided by its first stage, it takes
no rounds; left undecided, every round up to `max_rounds`. Every other part is sized below.

Sizing is Stein's two-stage rule (Stein 1945): the first stage's spread alone sets the
rounds, and the interval is that spread over the square root of all of them, on the first
stage's degrees of freedom (uncertainty.of_processes), exact whatever count it chose. A part
judged with a between-run study is sized to the study's term where that is wider than its
target. Rounds are capped per block (`max_rounds`), and the run's time (`budget_minutes`)
goes where a round narrows the parts still short of their target the most per second.
"""

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from blockbench.judge.between_runs import between_half
from blockbench.judge.claim import Claim, Part
from blockbench.judge.claim_rules import Precision
from blockbench.judge.part_evaluators import evaluate_part
from blockbench.judge.run_view import RunView
from blockbench.records.layout import Cell

PRECISE = "precise"
BETWEEN = "between-run limited"
CAP = "at the round cap"
BUDGET = "out of budget"
NOT_MEASURED = "not measured"
INDICATIVE = "indicative"
DECIDED = "decided at its first look"
UNDECIDED = "undecided at its first look"


@dataclass(frozen=True)
class Unit:
    """A block (the cells a claim divides by each other, measured round by round) or a lone
    cell: what rounds are added to. A round goes only to the cells whose parts need it: the
    block's other cells sit it out (C5's eager SELU and NumPy take C5's rounds; the jit SELU
    of the same block, read by C6 alone, does not)."""

    name: str
    cells: tuple[str, ...]  # device/workload/impl/size
    first: int  # rounds of the first stage
    most: int  # max_rounds
    round_s: float = 0.0  # what one more round of all its cells costs, from the first stage
    cell_s: tuple[float, ...] = ()  # each cell's share of round_s, as `cells` lists them
    fixed: bool = False  # measured and decided before (a GPU kit's earlier part): read only

    def counted(self) -> tuple[str, ...]:
        """The cells rounds are counted on (a unit named without its cells: the unit)."""
        return self.cells or (self.name,)

    def each(self) -> dict[str, float]:
        """What one more round of each of its cells costs (alike, where not known)."""
        own = self.counted()
        return dict(zip(own, self.cell_s or (self.round_s / len(own),) * len(own), strict=True))


@dataclass(frozen=True)
class Need:
    """One claim part after the first stage: its own half-width, the between-run floor under
    it (0: no study), the precision target, and the units its cells belong to."""

    claim_id: str
    part: str
    units: tuple[str, ...]
    half: float
    floor: float
    precision: float
    # each unit's share of the part's variance after the first stage, as `units` lists them
    # (empty: alike); a unit whose processes agree gains the part little from more rounds
    weights: tuple[float, ...] = ()
    cells: tuple[str, ...] = ()  # the cells of its units it reads (empty: all of them)

    @property
    def target(self) -> float:
        """Its half-width's target (0: a part its first look left undecided, to max_rounds)."""
        return max(self.precision, self.floor)

    def reads(self, unit: Unit) -> tuple[str, ...]:
        """The cells of `unit` this part reads, as rounds are counted on them."""
        mine = tuple(k for k in unit.counted() if not self.cells or k in self.cells)
        return mine or unit.counted()

    def paired(self, rounds: Mapping[str, int], units: Mapping[str, Unit]) -> dict[str, int]:
        """The rounds this part stands on in each of its units: the fewest of its cells', as
        its ratios pair round by round."""
        return {u: min(rounds[k] for k in self.reads(units[u])) for u in self.units}

    def projected(self, rounds: Mapping[str, int], units: Mapping[str, Unit]) -> float:
        """Its own half-width after `rounds` (per unit, as `paired` gives them): Stein's
        interval scales as one over the square root of the rounds (of each unit, weighted by
        its share of the variance, for the terms of a part over several)."""
        weights = self.weights or (1.0,) * len(self.units)
        shares = sum(
            w * units[u].first / rounds[u] for u, w in zip(self.units, weights, strict=True)
        )
        return self.half * math.sqrt(shares / sum(weights))

    def wanted(self, unit: Unit) -> int:
        """The rounds of `unit` that bring this part to its target."""
        if not self.target:  # undecided at its first look: every round
            return unit.most
        if self.half <= self.target:
            return unit.first
        return math.ceil(unit.first * (self.half / self.target) ** 2 - 1e-9)


def _raise(rounds: dict[str, int], keys: Iterable[str], to: int) -> dict[str, int]:
    return {**rounds, **{k: max(rounds[k], to) for k in keys}}


def _short(need: Need, rounds: Mapping[str, int], units: Mapping[str, Unit]) -> float:
    return max(0.0, need.projected(need.paired(rounds, units), units) - need.target)


def _narrowing(need: Need, name: str, now: dict[str, int], units: Mapping[str, Unit]) -> float:
    """What one more round of `name` for this part's cells narrows it, per second."""
    more = need.projected({**now, name: now[name] + 1}, units)
    spent = sum(units[name].each()[k] for k in need.reads(units[name]))
    return (need.projected(now, units) - more) / max(spent, 1e-3)


def allocate(
    units: Mapping[str, Unit], needs: Iterable[Need], budget_s: float | None
) -> dict[str, int]:
    """Rounds per cell (Unit.counted): what every part needs (up to each unit's cap), given to
    the cells it reads; where the budget cannot pay for it all, one round at a time to the
    cells whose round narrows the parts still short of their target the most per second."""
    needs = list(needs)
    first = {k: u.first for u in units.values() for k in u.counted()}
    want = dict(first)
    for need in needs:
        if len(need.units) == 1:
            unit = units[need.units[0]]
            want = _raise(want, need.reads(unit), min(unit.most, need.wanted(unit)))
    for need in needs:  # over several units: a round at a time where it narrows most per second
        while _short(need, want, units) > 1e-9 * need.target:
            now = need.paired(want, units)
            best = max(
                (n for n in need.units if now[n] < units[n].most),
                key=lambda n, need=need, now=now: _narrowing(need, n, now, units),
                default=None,
            )
            if best is None:
                break
            want = _raise(want, need.reads(units[best]), now[best] + 1)
    costs = {k: s for u in units.values() for k, s in u.each().items()}
    if budget_s is None or sum((want[k] - first[k]) * costs[k] for k in want) <= budget_s:
        return want
    rounds, left = dict(first), budget_s

    def excess(r: Mapping[str, int]) -> float:
        return sum(_short(n, r, units) for n in needs)

    while True:
        best, best_score, best_cost = None, 0.0, 0.0
        for need in needs:
            now = need.paired(rounds, units)
            for name in need.units:
                keys = need.reads(units[name])
                if now[name] >= min(want[k] for k in keys):
                    continue
                raised = _raise(rounds, keys, now[name] + 1)
                cost = sum((raised[k] - rounds[k]) * costs[k] for k in keys)
                if cost > left:
                    continue
                score = (excess(rounds) - excess(raised)) / max(cost, 1e-3)
                if score > best_score:
                    best, best_score, best_cost = raised, score, cost
        if best is None:
            return rounds
        rounds, left = best, left - best_cost


def reason(need: Need, rounds: Mapping[str, int], units: Mapping[str, Unit]) -> str:
    """Why a part stopped after `rounds` (per cell, as `allocate` gives them)."""
    paired = need.paired(rounds, units)
    own = need.projected(paired, units)
    capped = [paired[u] >= units[u].most for u in need.units if not units[u].fixed]
    if not need.target:
        return UNDECIDED if all(capped) else BUDGET
    if own <= need.precision * (1 + 1e-9):
        return PRECISE
    if need.floor > need.precision and own <= need.floor * (1 + 1e-9):
        return BETWEEN
    if any(capped):
        return CAP
    return BUDGET


@dataclass(frozen=True)
class Stopped:
    """One part's stop: why, after how many rounds (the most its cells pair over), and its own
    half-width after the first stage against the target (on the part's analysis scale)."""

    claim_id: str
    part: str
    stopped: str
    rounds: int
    first_half: float | None
    target: float | None
    precision: float | None = None  # the part's precision target, as a half-width


def needs_of(
    view: RunView, claims: Iterable[Claim], units: Mapping[str, Unit], precision: Precision
) -> tuple[list[Need], list[Stopped]]:
    """Each measured part's need after the first stage, to the precision its claim needs
    (`Precision.of`: the part's own, the one its article's margin asks, or the run's; all
    set before anything is measured); and the parts with no interval to size (a cell
    missing: `not measured`; a check: nothing) or none worth sizing (measured off the
    article's size: `indicative`; decided at its first look: `decided`; both take their
    first stage alone). A part its first look left undecided needs every round (target 0)."""
    needs, unsized = [], []
    for claim in claims:
        for part in claim.parts:
            if not part.timed:
                continue
            result = evaluate_part(view, part)
            read = {
                key: name
                for name, unit in units.items()
                for key in unit.cells
                if part.reads(Cell.from_key(key), result.size)
            }
            mine = set(read.values())
            if result.spread is None or not mine:
                unsized.append(Stopped(claim.id, part.name, NOT_MEASURED, 0, None, None))
                continue
            first = max(units[name].first for name in mine)
            if result.indicative or result.decided_in_looks:
                # never decisive, or decided: rounds would buy it nothing
                said = INDICATIVE if result.indicative else DECIDED
                unsized.append(Stopped(claim.id, part.name, said, first, None, None))
                continue
            stored = view.study.part(claim.id, part.name) if view.study else None
            # what the study gives a run of its design or more: more rounds lower the rest
            floor = (
                between_half(result.spread, math.inf, stored)
                if stored is not None and stored.runs >= 2
                else 0.0
            )
            needs.append(
                Need(
                    claim.id,
                    part.name,
                    tuple(sorted(mine)),
                    result.spread.half_width(),
                    floor,
                    0.0 if result.look else math.log(precision.of(part)),
                    _weights(view, part, result.spread.se, sorted(mine), units),
                    tuple(sorted(read)),
                )
            )
    return needs, unsized


def _weights(
    view: RunView, part: Part, se: float, mine: list[str], units: Mapping[str, Unit]
) -> tuple[float, ...]:
    """Each unit's share of a part's variance: what the part's squared standard error loses
    when that unit's processes all agree. Read from the first stage alone, as the rounds
    themselves are, so Stein's intervals stay exact (empty: one unit, or nothing to tell)."""
    if len(mine) < 2 or se <= 0:
        return ()
    shares = []
    for name in mine:
        without = evaluate_part(view.steadied(map(Cell.from_key, units[name].cells)), part).spread
        shares.append(max(0.0, se**2 - (without.se if without else 0.0) ** 2))
    return tuple(shares) if sum(shares) > 0 else ()


def decide(
    view: RunView,
    claims: Iterable[Claim],
    units: Mapping[str, Unit],
    precision: Precision,
    budget_s: float | None,
) -> dict[str, Any]:
    """The decision after a run's first stage, as the JSON the workflow reads back: rounds
    per cell (`rounds`), per unit, and why each part stopped, with its target. `budget_s`:
    the seconds left for more rounds (None: no limit)."""
    needs, unsized = needs_of(view, claims, units, precision)
    rounds = allocate(units, needs, budget_s)
    stops = [
        Stopped(
            n.claim_id,
            n.part,
            reason(n, rounds, units),
            max(n.paired(rounds, units).values()),
            n.half,
            n.target or None,
            n.precision or None,
        )
        for n in needs
    ]
    return {
        "run_label": view.run_label,
        "precision": precision.factor,
        "precision_from_claims": precision.from_claims,
        "budget_s": budget_s,
        "rounds": {cell: rounds[cell] for u in units.values() for cell in u.cells},
        "units": [
            {**asdict(u), "rounds": max(rounds[k] for k in u.counted())}
            for _, u in sorted(units.items())
        ],
        "parts": [asdict(s) for s in [*stops, *unsized]],
    }
