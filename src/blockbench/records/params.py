"""One record of how one worker process of a cell is measured: what the run plan decides
(blockbench.run.run_plan), the workflow's measure rule and the GPU kit pass on, the parent's
command line carries (blockbench.measure.parent) and every measurement keeps.

A new setting is one field here: its flag, its parsing and its place in the record follow.
"""

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from blockbench.records.spec import StopRule


@dataclass(frozen=True)
class MeasureParams:
    """A process's settings beyond its cell and repeat. Empty strings and zeros mean unset."""

    budget_s: float = 300.0  # wall clock of the whole process; past it the cell is `timeout`
    seed: int = 0
    matmul_precision: str = "default"
    rule: StopRule = field(default_factory=StopRule)  # the cell's sampling, per process
    phases: tuple[str, ...] | None = None  # None: every phase that applies
    threads: int | None = None  # cores for NumPy and XLA alike (None: every core allowed)
    # the block of cells measured back to back with this one (blockbench.run.run_order)
    block: str = ""
    # the cell's first-stage rounds when rounds are added on demand: its interval is
    # Stein's, from those rounds (0: a fixed design)
    first_rounds: int = 0
    # the run's stopping rule and settings in words: a between-run study applies to runs of
    # the same design only
    design: str = ""
    # inside a SLURM job, the lock is <lock_dir>/<node>.lock (blockbench.measure.parent)
    lock_dir: str = ""
    # env.json of another JAX release's environment (blockbench.run.versions)
    jax_env: str = ""
    # what the workflow's patch of Snakemake's scheduler did (blockbench.run.scheduler_patch)
    scheduler_patch: str = ""
    # why this process is not measured (the GPU kit left its block out for time): no worker
    # starts, and the record is `unavailable` with this reason
    not_run: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Plain values (Snakemake params, JSON)."""
        out = asdict(self)
        out["phases"] = list(self.phases) if self.phases is not None else None
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MeasureParams":
        phases = d.get("phases")
        return cls(
            **{
                **d,
                "rule": StopRule(**d.get("rule", {})),
                "phases": tuple(phases) if phases else None,
            }
        )

    def flags(self) -> list[str]:
        """The parent's command-line options for these settings (unset ones left out)."""
        args = [
            *("--budget-s", str(self.budget_s), "--seed", str(self.seed)),
            *("--matmul-precision", self.matmul_precision),
        ]
        for f in fields(StopRule):
            args += [f"--{f.name.replace('_', '-')}", str(getattr(self.rule, f.name))]
        optional = {
            "phases": ",".join(self.phases or ()),
            "threads": "" if self.threads is None else str(self.threads),
            "block": self.block,
            "first-rounds": str(self.first_rounds or ""),
            "design": self.design,
            "cluster-lock-dir": self.lock_dir,
            "jax-env": self.jax_env,
            "scheduler-patch": self.scheduler_patch,
            "not-run": self.not_run,
        }
        for flag, value in optional.items():
            if value:
                args += [f"--{flag}", value]
        return args
