"""The run plan: every worker process a configuration asks for, in the order the run measures
them, and the settings each one is measured with.

Made once from the validated config and the claims, and read by the workflow (its measure
jobs, their priorities and chains, the rounds checkpoint's units) and by the GPU kit, which
measures without Snakemake: both measure the same processes, in the same order, with the
same settings, so a kit's run at home is the run the workflow would have made.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from blockbench.judge.claim import Claim
from blockbench.pipeline import grid, run_order
from blockbench.pipeline.grid import Phases
from blockbench.records.layout import Cell
from blockbench.records.params import MeasureParams
from blockbench.records.spec import StopRule
from blockbench.workloads import registry


@dataclass(frozen=True, order=True)
class Job:
    """One worker process of one cell."""

    cell: Cell
    repeat: int

    def path(self, run_label: str) -> str:
        return self.cell.path(run_label, self.repeat)


class RunPlan:
    """Cells and phases (grid.plan), the units rounds are added to after the first stage
    (run_order.units, blockbench.judge.stopping), each cell's first stage and cap, its
    sampling split over its first rounds, the design a between-run study is of, and the
    randomized interleaved order (run_order.order) with its chains."""

    def __init__(self, config: Mapping[str, Any], claims: list[Claim]) -> None:
        self.config, self.claims = config, claims
        self.phases: dict[Cell, Phases] = grid.plan(dict(config), claims)
        asked = grid.settings(dict(config), claims)
        self.units = run_order.units(
            self.phases, claims, {c: s.repeats for c, s in asked.items()}, config["max_rounds"]
        )
        unit_of = {Cell.from_key(k): name for name, u in self.units.items() for k in u["cells"]}
        self.first = {cell: self.units[name]["first"] for cell, name in unit_of.items()}
        self.most = {cell: self.units[name]["most"] for cell, name in unit_of.items()}
        # a block's sampling settings are per cell; its time is split over its first rounds
        self.settings = {c: grid.Settings(self.first[c], s.sampling) for c, s in asked.items()}
        self.design = grid.design(dict(config), self.settings)
        # every process up to each cell's cap has its place: added rounds keep the order
        self.order = run_order.order(
            self.phases, claims, self.most, config["seed"], config["deciding_first"]
        )
        self.chains = run_order.chains(self.order)
        self._unit_of = unit_of

    @property
    def cells(self) -> list[Cell]:
        return list(self.phases)

    def unit(self, cell: Cell) -> str:
        """The name of the block (or lone cell) rounds are added to with `cell`."""
        return self._unit_of[cell]

    def rounds(self, decided: Mapping[str, int] | None = None) -> dict[Cell, int]:
        """Each cell's rounds: its first stage, or what the rounds decision says."""
        return {c: (decided or {}).get(c.key, self.first[c]) for c in self.phases}

    def jobs(self, decided: Mapping[str, int] | None = None) -> list[Job]:
        """Every process of the first stage, or of the rounds `decided` (the checkpoint's
        decision, cell key -> rounds), highest priority first: the order a run with one
        measurement at a time follows."""
        rounds = self.rounds(decided)
        ranked = sorted(self.order.items(), key=lambda item: -item[1][0])
        return [Job(cell, r) for (cell, r), _ in ranked if r < rounds[cell]]

    def priority(self, job: Job) -> int:
        """The job's place in the order (higher runs first; 0: outside the plan)."""
        return self.order.get((job.cell, job.repeat), (0, ""))[0]

    def block(self, job: Job) -> str:
        """The block of cells measured back to back with this one ('': none)."""
        return self.order.get((job.cell, job.repeat), (0, ""))[1]

    def params(self, job: Job, **context: Any) -> MeasureParams:
        """How `job` is measured; `context`: what the caller adds (lock_dir, jax_env,
        scheduler_patch in the workflow; a shorter budget_s at the end of a kit's part)."""
        config = self.config
        given = {
            "budget_s": config["budget_s"],
            "seed": config["seed"],
            "matmul_precision": config["matmul_precision"],
            "rule": StopRule(**self.settings[job.cell].per_process()),
            "phases": self.phases[job.cell],
            "threads": config["threads"],
            "block": self.block(job),
            "first_rounds": self.first[job.cell],
            "max_rounds": config["max_rounds"] if self.first[job.cell] else 0,
            "design": self.design,
            # the worker reads a catalog's workload from the catalog's own folder
            "catalog": str(registry.source_of(job.cell.workload).folder or ""),
        }
        return MeasureParams(**(given | context))
