"""One record of how one worker process of a cell is measured: what the run plan decides
(blockbench.pipeline.run_plan), the workflow's measure rule and the GPU kit pass on, the parent's
command line carries (blockbench.measure.parent) and every measurement keeps; and what the
parent tells the worker, those settings with the cell and where it runs (`CellSpec`).

A new setting is one field here: its flag, its parsing and its place in the record follow.
"""

import argparse
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from blockbench.records.layout import FIELDS
from blockbench.records.spec import PHASES, StopRule

# What `jax_default_matmul_precision` accepts (the worker sets it before any JAX call): the
# config schema's `matmul_precision` takes these (tests/test_config_loading.py).
PRECISIONS = ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32")


def phase_list(text: str) -> tuple[str, ...]:
    """`steady,dispatch` as phases, refusing one that does not exist."""
    phases = tuple(text.split(","))
    unknown = [p for p in phases if p not in PHASES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown phase(s) {', '.join(unknown)} (known: {', '.join(PHASES)})"
        )
    return phases


def option(
    default: Any,
    help: str | None = None,
    parse: Callable[[str], Any] | None = None,
    flag: str = "",
    **argparse_keys: Any,
) -> Any:
    """A setting with its command-line flag: its help, how its text is parsed (the type of
    its default where not given), a flag other than its name's where it differs."""
    keys = {"help": help, "parse": parse, "flag": flag, **argparse_keys}
    return field(default=default, metadata=keys)


RULE_HELP = {
    "target_rel_ci": "stop a phase once its median's 95%% CI is within this fraction",
    "max_time_s": "per-phase cap: stop sampling there, converged or not",
    "sample_time_s": "calibrate calls per sample so one sample lasts this long",
    "long_sample_s": "one clean sample this long stands for its process",
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class MeasureParams:
    """A process's settings beyond its cell and repeat. Empty strings and zeros mean unset.
    Each field is its own flag (`add_arguments`), parsed back by `from_args`: a new setting
    is one field, nothing else. The workflow and the GPU kit pass the record itself
    (blockbench.measure.parent.measure); the command line is built from its fields."""

    # wall clock of the whole process; past it the cell is `timeout`
    budget_s: float = option(300.0, "wall-clock budget of the whole cell; past it: `timeout`")
    seed: int = option(0)
    matmul_precision: str = option("default", choices=PRECISIONS)
    rule: StopRule = field(default_factory=StopRule)  # the cell's sampling, per process
    phases: tuple[str, ...] | None = option(  # None: every phase that applies
        None,
        f"comma-separated phases to measure (default: all that apply; of {','.join(PHASES)})",
        parse=phase_list,
    )
    threads: int | None = option(  # None: every core allowed
        None, "cores for the cell, NumPy and XLA alike (default: every core it may use)", int
    )
    block: str = option(
        "",
        "the block of cells measured back to back with this one, round by round (recorded: "
        "claims pair their ratios by process within a block; blockbench.pipeline.run_order)",
    )
    first_rounds: int = option(
        0,
        "the rounds of the cell's first stage when rounds are added on demand (recorded: its "
        "interval is Stein's, from those rounds' spread; 0: a fixed design)",
    )
    max_rounds: int = option(
        0,
        "the most rounds a cell may take (recorded: a part its first stage left undecided "
        "takes all of them and is judged on every round; 0: a fixed design)",
    )
    design: str = option(
        "",
        "the run's stopping rule and its settings, in words (recorded: a between-run study "
        "applies its design only to runs of the same)",
    )
    catalog: str = option(
        "",
        "the catalog folder whose workloads/ declares the cell's workload: the worker reads "
        "its modules from there (default: blockbench's own)",
    )
    lock_dir: str = option(
        "",
        "inside a SLURM job, the lock is <DIR>/<node>.lock: a directory every job on the node "
        "sees (a per-job /tmp would give each job a lock of its own)",
        flag="--cluster-lock-dir",
    )
    jax_env: str = option(
        "",
        "the env.json of another JAX release's environment (blockbench.pipeline.versions): the "
        "worker runs in it (default: this Python and the JAX installed here)",
    )
    scheduler_patch: str = option(
        "",
        "what the workflow's patch of Snakemake's scheduler did (blockbench.pipeline."
        "scheduler_patch), recorded with the measurement: unpatched, its timers take CPU",
    )
    not_run: str = option(
        "",
        "record the process as unavailable for REASON without starting a worker (the GPU "
        "kit's blocks left out for time)",
        metavar="REASON",
    )

    @staticmethod
    def add_arguments(p: argparse.ArgumentParser) -> None:
        """Every setting as a flag, the stop rule's fields each one of their own."""
        for f in fields(MeasureParams):
            if f.name == "rule":
                for r in fields(StopRule):
                    kind = type(r.default)
                    p.add_argument(
                        _flag(r.name), type=kind, default=r.default, help=RULE_HELP.get(r.name)
                    )
                continue
            keys = dict(f.metadata)
            parse = keys.pop("parse") or type(f.default)
            flag = keys.pop("flag") or _flag(f.name)
            p.add_argument(flag, dest=f.name, type=parse, default=f.default, **keys)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "MeasureParams":
        """The parsed command line as the one record of the process's settings."""
        rule = StopRule(**{r.name: getattr(args, r.name) for r in fields(StopRule)})
        given = {f.name: getattr(args, f.name) for f in fields(cls) if f.name != "rule"}
        return cls(**given, rule=rule)

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


@dataclass(frozen=True)
class CellSpec:
    """What the parent tells the worker: the cell, the process's settings, and where and
    until when it runs (the parent decides these as it starts the worker)."""

    device: str
    workload: str
    impl: str
    size: int
    params: MeasureParams = field(default_factory=MeasureParams)
    # The CPUs the worker pins itself to; NumPy's BLAS and XLA's pool get one thread each.
    cores: tuple[int, ...] = ()
    # Wall-clock time (time.time()) by which sampling stops, so that the cell ends inside its
    # budget with what it has, instead of being killed (None: no deadline).
    deadline: float | None = None
    # JAX cells: the measuring thread on a core outside the cell's, where there is one
    # (cores.separate_measuring_thread)
    isolate: bool = True
    # cores the job may use beyond the cell's (where the measuring thread can go)
    spare_cores: tuple[int, ...] = ()
    # loops a sample of each calibrated phase, the cell's count chosen by its first process
    # (blockbench.measure.parent.cell_loops); a phase not named here calibrates its own
    loops: dict[str, int] = field(default_factory=dict)

    @property
    def cell(self) -> dict[str, Any]:
        """The cell as its record names it."""
        return {name: getattr(self, name) for name in FIELDS}

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "params": self.params.as_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CellSpec":
        return cls(
            **{
                **d,
                "params": MeasureParams.from_dict(d.get("params", {})),
                "cores": tuple(d.get("cores", ())),
                "spare_cores": tuple(d.get("spare_cores", ())),
            }
        )
