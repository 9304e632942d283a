"""A GPU kit run's rounds decision across its parts: each part decides its own blocks (the
earlier parts' read as they stand), and the decisions are kept as one, cut to what was
measured, which judging at home reads as final (blockbench.pipeline.gpu_kit)."""

from collections.abc import Callable
from typing import Any

from blockbench.judge import stopping
from blockbench.pipeline.run_plan import Job, RunPlan
from blockbench.records.layout import Cell


def empty(run_label: str) -> dict[str, Any]:
    """The decision before any part made one: no rounds added to any cell."""
    return {"run_label": run_label, "rounds": {}, "asked": {}, "units": [], "parts": []}


def own(decision: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """A part's decision restricted to its own blocks: the earlier parts' blocks it read as
    fixed units keep the rounds their own part decided."""
    cells = {k for u in decision["units"] if u["name"] in names for k in u["cells"]}
    keep = {key: {k: v for k, v in decision[key].items() if k in cells} for key in ("rounds",)}
    if "asked" in decision:
        keep["asked"] = {k: v for k, v in decision["asked"].items() if k in cells}
    return decision | keep | {"units": [u for u in decision["units"] if u["name"] in names]}


def as_measured(decision: dict[str, Any], done: Callable[[Job], bool]) -> dict[str, Any]:
    """The decision as measured: each cell's rounds cut to the processes `done`, with what
    was asked kept beside them."""
    asked = decision.get("asked", decision["rounds"])
    measured = {}
    for key, rounds in asked.items():
        cell = Cell.from_key(key)
        measured[key] = next((r for r in range(rounds) if not done(Job(cell, r))), rounds)
    return decision | {"asked": asked, "rounds": measured}


def reading(plan: RunPlan, names: set[str]) -> set[tuple[str, str]]:
    """The claim parts (claim id, part name) that read a cell of the blocks `names` at one
    of their sizes: those whose stop a decision over these blocks says."""
    cells = [Cell.from_key(k) for n in names for k in plan.units[n]["cells"]]
    return {
        (claim.id, part.name)
        for claim in plan.claims
        for part in claim.parts
        # at either size the part may be judged at (stopping reads it where it measured)
        if any(
            part.reads(c, c.size) and c.size in {*part.sizes_for(), *part.sizes_for("article")}
            for c in cells
        )
    }


def merged(
    earlier: dict[str, Any] | None, later: dict[str, Any], reads: set[tuple[str, str]]
) -> dict[str, Any]:
    """Two parts' decisions as one: each decided its own blocks; a claim part keeps the
    stop of the latest part whose blocks it reads (`reads`: the later part's), where that
    part measured it."""
    if not earlier:
        return later
    stops = {(p["claim_id"], p["part"]): p for p in earlier["parts"]}
    for p in later["parts"]:
        key = (p["claim_id"], p["part"])
        if key not in stops or (key in reads and p["stopped"] != stopping.NOT_MEASURED):
            stops[key] = p
    return (
        later
        | {key: earlier[key] | later[key] for key in ("rounds", "asked")}
        | {
            "units": [*earlier["units"], *later["units"]],
            "parts": list(stops.values()),
        }
    )
