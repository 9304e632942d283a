"""The device x workload x implementation x size grid a configuration asks for.

The JSON Schema (workflow/schemas/config.schema.yaml) checks shapes and types; this module
checks what a schema cannot know, against the registry, and names the key and the value.

`workloads` is a list of blocks; one workload may have several (the cheap sweep with every
phase, and the article's large size with only the phases its claims use). A cell that two
blocks ask for is measured once, with the phases of both.
"""

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from blockbench.errors import InputError
from blockbench.judge.claim_rules import Precision
from blockbench.records.layout import RAW, raw_files, run_dir
from blockbench.records.spec import PHASES, per_process
from blockbench.run import versions
from blockbench.workloads.registry import STYLE_PHASES, WORKLOADS, impls_of

ACCELERATORS = ("gpu", "tpu")
Phases = tuple[str, ...] | None  # None: every phase that applies


class ConfigError(InputError):
    """A configuration value that cannot be run; the message names the key and the value."""


@dataclass(frozen=True, order=True)
class Cell:
    device: str
    workload: str
    impl: str
    size: int

    @property
    def key(self) -> str:
        """device/workload/impl/size: the cell in a round decision (blockbench.judge.stopping)."""
        return f"{self.device}/{self.workload}/{self.impl}/{self.size}"

    def path(self, run_label: str, repeat: int = 0) -> str:
        """Where worker process `repeat` of this cell writes its JSON."""
        return RAW.format(run_label=run_label, repeat=repeat, **asdict(self))


def _check_size(where: str, workload: str, size: int) -> None:
    try:
        WORKLOADS[workload].validate_size(size)
    except ValueError as exc:
        raise ConfigError(f"config key {where}: {size}: {exc}") from exc


def _check_block(key: str, spec: dict[str, Any]) -> None:
    name = spec["name"]
    if name not in WORKLOADS:
        raise ConfigError(
            f"config key {key}.name: unknown workload {name!r} (known: {', '.join(WORKLOADS)};"
            " a new one is a module of blockbench.workloads)"
        )
    known = impls_of(name)
    for impl in spec["impls"]:
        if impl not in known:
            raise ConfigError(
                f"config key {key}.impls: unknown implementation {impl!r} "
                f"(known: {', '.join(known)})"
            )
        phases = spec.get("phases")
        if phases and not set(phases) & set(STYLE_PHASES[known[impl].style]):
            raise ConfigError(
                f"config key {key}.phases: {phases} has no phase that {name}/{impl} measures "
                f"(it has {', '.join(STYLE_PHASES[known[impl].style])})"
            )
    for sizes_key in ("sizes", "accelerator_sizes"):
        for size in spec.get(sizes_key, []):
            _check_size(f"{key}.{sizes_key}", name, size)
    for impl, sizes in spec.get("impl_sizes", {}).items():
        if impl not in spec["impls"]:
            raise ConfigError(f"config key {key}.impl_sizes: {impl!r} is not in {key}.impls")
        for size in sizes:
            _check_size(f"{key}.impl_sizes.{impl}", name, size)


def check(config: dict[str, Any]) -> None:
    """Raise ConfigError for the first value the registry or the file system rejects."""
    for i, spec in enumerate(config["workloads"]):
        _check_block(f"workloads[{i}] ({spec['name']})", spec)
    versions.check(config, config.get("jax_envs", ".venvs"))
    for i, entry in enumerate(config.get("merge", [])):
        run = run_dir(entry)[0]
        if not run.is_dir():
            raise ConfigError(f"config key merge[{i}]: {str(run)!r} is not a directory")
        if not raw_files(run):
            raise ConfigError(
                f"config key merge[{i}]: {str(run)!r} holds no measurements laid out as "
                "<device>/<workload>/<impl>/<size>/<repeat>.json (a run of an older "
                "blockbench must be measured again)"
            )


def _ordered(phases: set[str]) -> tuple[str, ...]:
    """In the order the harness measures them."""
    return tuple(p for p in PHASES if p in phases)


def _union(a: Phases, b: Phases) -> Phases:
    return None if a is None or b is None else _ordered(set(a) | set(b))


def _block_cells(config: dict[str, Any]) -> Iterator[tuple[dict[str, Any], Cell, Phases]]:
    """Every (block, cell, the block's phases) the configuration asks for."""
    devices = config["devices"]
    with_accelerator = any(d in ACCELERATORS for d in devices)
    for spec in config["workloads"]:
        name = spec["name"]
        registry = impls_of(name)
        baseline = WORKLOADS[name].baseline
        phases = _ordered(set(spec["phases"])) if spec.get("phases") else None
        for device in (d for d in devices if d in spec.get("devices", devices)):
            for impl in spec["impls"]:
                if device not in registry[impl].devices:
                    continue
                sizes = set(spec.get("impl_sizes", {}).get(impl, spec["sizes"]))
                if with_accelerator and (device in ACCELERATORS or impl == baseline):
                    sizes |= set(spec.get("accelerator_sizes", []))
                for size in sizes:
                    yield spec, Cell(device, name, impl, size), phases


def plan(config: dict[str, Any]) -> dict[Cell, Phases]:
    """Every cell of the run with the phases it measures.

    `accelerator_sizes` (the articles' large sizes) join when a GPU or TPU is in the run, on
    the accelerators and for the CPU baseline the accelerator claims are measured against.
    A block's own `devices` narrows the run's for its cells, so that a GPU run adds only the
    GPU cells some claim uses (a stencil on a GPU is no article's).
    """
    out: dict[Cell, Phases] = {}
    for _, cell, phases in _block_cells(config):
        out[cell] = _union(out[cell], phases) if cell in out else phases
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class Settings:
    """How one cell is measured: by how many processes, with the cell's sampling (split
    over those processes by `per_process`)."""

    repeats: int
    sampling: dict[str, Any]

    def per_process(self) -> dict[str, Any]:
        return per_process(self.sampling, self.repeats)


def settings(config: dict[str, Any]) -> dict[Cell, Settings]:
    """Every cell's settings: the run's `repeats` and `sampling`, with what a block of the
    cell sets for its own cells (`sampling` keys: a later block's win; `repeats`: the most
    any block asks, since more processes never cost a cell its other blocks' precision)."""
    repeats: dict[Cell, int] = {}
    sampling: dict[Cell, dict[str, Any]] = {}
    for spec, cell, _ in _block_cells(config):
        sampling.setdefault(cell, dict(config["sampling"])).update(spec.get("sampling", {}))
        repeats[cell] = max(repeats.get(cell, 0), spec.get("repeats", config["repeats"]))
    return {cell: Settings(repeats[cell], sampling[cell]) for cell in sorted(sampling)}


def cells(config: dict[str, Any]) -> list[Cell]:
    """Every cell of the run, sorted."""
    return list(plan(config))


def precision(config: dict[str, Any]) -> Precision:
    """What the run measures each claim part to (`precision`, `precision_from_claims`)."""
    return Precision(config["precision"], config["precision_from_claims"])


def design(config: dict[str, Any], first: Mapping[Cell, Settings]) -> str:
    """The run's stopping rule and its settings in words, with a digest of every cell's
    first stage and sampling (`first`: each cell's first rounds, as `repeats`): two runs of
    one config have the same, and runs whose cells sample for other times do not, as their
    processes spread otherwise (blockbench.judge.studies)."""
    counts = sorted({s.repeats for s in first.values()}) or [0]
    cells_first = json.dumps(
        sorted((cell.key, s.repeats, s.sampling) for cell, s in first.items()), sort_keys=True
    )
    digest = hashlib.sha256(cells_first.encode()).hexdigest()[:8]
    budget = config["budget_minutes"]
    return (
        f"two-stage: {precision(config).words()}, first stage {counts[0]}-{counts[-1]} "
        f"rounds ({digest}), max_rounds {config['max_rounds']}, "
        + (f"budget {budget:g} min" if budget else "no budget")
    )
