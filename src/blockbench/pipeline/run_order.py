"""The order in which a run measures its cells: randomized, interleaved blocks.

A claim that divides one cell's time by another's (C1: JAX over NumPy) is only as good as
the two were measured alike. The machine drifts over minutes, so two cells measured ten
minutes apart differ by more than their processes say. So the cells that any claim divides
by each other form a *block*; in each of `repeats` rounds, process r of every cell of a
block runs back to back with the others, in a random order, and the blocks and the lone
cells of a round are shuffled too (randomized multiple interleaved trials). A block's
rounds are spread over the whole run, and a ratio is taken within each round first, then
over rounds (judge.run_view.RunView.paired_ratio), so what one minute of the machine does to both
cells cancels.

The order is a pure function of the plan, the claims and the seed: the same grid is measured
in the same order on every machine, and Snakemake follows it through job priorities (with
one measurement at a time, the highest-priority ready job runs next).
"""

import itertools
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from blockbench.judge.claim import Claim
from blockbench.records.layout import Cell


def linked(claims: Iterable[Claim]) -> list[set[tuple[str, str, str]]]:
    """For every part that compares cells (num and den, or a trend's), the set of
    (device, workload, impl) it compares."""
    out = []
    for claim in claims:
        for part in claim.parts:
            kinds = {t.cell for t in (*part.num, *part.den)}
            if len(kinds) > 1:
                out.append(kinds)
    return out


def deciding(cells: Iterable[Cell], claims: Iterable[Claim]) -> set[Cell]:
    """The cells a part judged at one size reads at that size (B1's two products at 10000);
    a trend's or growth's cells, read over a sweep, are not among them."""
    read = {
        t.at(part.size)
        for claim in claims
        for part in claim.parts
        if part.size is not None
        for t in (*part.num, *part.den)
    }
    return {c for c in cells if c in read}


def blocks(cells: Iterable[Cell], claims: Iterable[Claim]) -> dict[Cell, str]:
    """Each cell that a claim compares with another cell of the same size, mapped to its
    block's name; cells linked through a shared cell (D1: loop / convolve, convolve / scan)
    join one block."""
    by_size: dict[int, set[Cell]] = {}
    for cell in cells:
        by_size.setdefault(cell.size, set()).add(cell)
    parent: dict[Cell, Cell] = {}

    def root(c: Cell) -> Cell:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    links = linked(claims)
    for present in by_size.values():
        index = {(c.device, c.workload, c.impl): c for c in present}
        for kinds in links:
            members = sorted(index[k] for k in kinds if k in index)
            if len(members) < 2:
                continue
            parent.setdefault(members[0], members[0])
            for other in members[1:]:
                parent[root(other)] = root(members[0])
    groups: dict[Cell, list[Cell]] = {}
    for cell in parent:
        groups.setdefault(root(cell), []).append(cell)
    out = {}
    for members in groups.values():
        members.sort()
        name = f"{members[0].workload}@{members[0].size}:" + "+".join(
            f"{c.device}/{c.impl}" for c in members
        )
        out.update(dict.fromkeys(members, name))
    return out


def units(
    cells: Iterable[Cell], claims: Iterable[Claim], repeats: Mapping[Cell, int], most: int
) -> dict[str, dict[str, Any]]:
    """What rounds are added to after the first stage (blockbench.judge.stopping): each block,
    and each lone cell, with its cells (Cell.key), its first stage (the most `repeats` of its
    cells: a block's cells are measured in the same rounds) and its cap (`most`, at least the
    first stage)."""
    cells = sorted(cells)
    block_of = blocks(cells, claims)
    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        unit = out.setdefault(block_of.get(cell) or f"cell:{cell.key}", {"cells": [], "first": 0})
        unit["cells"].append(cell.key)
        unit["first"] = max(unit["first"], repeats[cell])
    for unit in out.values():  # one round has no spread to size more rounds from
        unit["most"] = max(most, unit["first"]) if unit["first"] >= 2 else unit["first"]
    return out


def order(
    cells: Iterable[Cell],
    claims: Iterable[Claim],
    repeats: Mapping[Cell, int],
    seed: int,
    deciding_first: bool = False,
) -> dict[tuple[Cell, int], tuple[int, str]]:
    """(cell, process) -> (priority, block name or ""): process r of every cell runs in
    round r (a cell with fewer `repeats` than the most sits out the last rounds); a round
    is the shuffled blocks and lone cells, each block's cells back to back in a shuffled
    order of its own. Higher priority runs first.

    `deciding_first` (config `deciding_first`, the GPU grids'): every round of the blocks
    holding a cell that a part judged at one size reads (`deciding`) before any round of the
    others (trends' sweeps), so that a window cut short has measured what decides claims."""
    claims = list(claims)
    cells = sorted(cells)
    block_of = blocks(cells, claims)
    units: dict[str, list[Cell]] = {}
    for cell in cells:
        units.setdefault(block_of.get(cell) or f"cell:{cell}", []).append(cell)
    decide = deciding(cells, claims) if deciding_first else set()
    tiers = [
        sorted(n for n in units if any(c in decide for c in units[n])),
        sorted(n for n in units if not any(c in decide for c in units[n])),
    ]
    sequence: list[tuple[Cell, int]] = []
    for tier in (t for t in tiers if t):
        for r in range(max((repeats[c] for n in tier for c in units[n]), default=0)):
            rng = random.Random(f"{seed}:{r}")
            names = list(tier)
            rng.shuffle(names)
            for name in names:
                members = [cell for cell in units[name] if r < repeats[cell]]
                # a block's own draw: a cell added elsewhere in the grid leaves its order, and
                # so its chain of jobs (chains), as it was, and its measured cells up to date
                random.Random(f"{seed}:{r}:{name}").shuffle(members)
                sequence += [(cell, r) for cell in members]
    total = len(sequence)
    return {job: (total - i, block_of.get(job[0], "")) for i, job in enumerate(sequence)}


def chains(
    order: Mapping[tuple[Cell, int], tuple[int, str]],
) -> dict[tuple[Cell, int], tuple[Cell, int]]:
    """(cell, process) -> the job of its block's round, on its device, measured just before it.

    The workflow makes each job wait for that one: the round's cells of one device form one
    chain of the DAG, which a cluster runs as one job on one node (a Snakemake group's
    connected jobs), so a block's paired ratio never compares two nodes. Devices are chained
    apart, as a cluster gives them different jobs, and a GPU cell that cannot run must not
    hold up the CPU cells of its round.
    """
    rounds: dict[tuple[str, str, int], list[tuple[int, tuple[Cell, int]]]] = {}
    for job, (priority, block) in order.items():
        if block:
            rounds.setdefault((block, job[0].device, job[1]), []).append((priority, job))
    out = {}
    for jobs in rounds.values():
        jobs.sort(reverse=True)  # the highest priority is measured first
        out.update({after: before for (_, before), (_, after) in itertools.pairwise(jobs)})
    return out


def before(
    chains: Mapping[tuple[Cell, int], tuple[Cell, int]],
    job: tuple[Cell, int],
    takes: Callable[[Cell, int], bool],
) -> tuple[Cell, int] | None:
    """The job `job` waits for: the one before it in its chain that the run measures. A
    block's added rounds go only to the cells whose parts need them (blockbench.judge.
    stopping), so a cell that sits a round out is passed over, not measured for the chain's
    sake (None: the first of its chain)."""
    while (job := chains.get(job)) is not None and not takes(*job):
        pass
    return job
