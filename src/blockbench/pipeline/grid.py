"""The device x workload x implementation x size grid a run measures: the cells its claims
read, and what its config's `workloads` blocks add.

Each claim part names its cells and the sizes it is measured at (blockbench.judge.
claim_rules); the run measures every cell its selected parts read, so a claim checked needs
no block of its own. `workloads` only adds cells (sweeps for figures, a user's extras). How a
cell is measured (phases, first-stage processes, sampling) is the run's default unless a
claim's `settings` or a block says otherwise; two that say different things of one cell are
refused, naming both, before any job.

The JSON Schema (workflow/schemas/config.schema.yaml) checks shapes and types; this module
checks what a schema cannot know, against the registry, and names the key and the value.
"""

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blockbench.errors import InputError
from blockbench.judge.claim import Claim
from blockbench.judge.claim_rules import Precision, claims_files, selects
from blockbench.pipeline import versions
from blockbench.records.layout import Cell, raw_files, run_dir
from blockbench.records.spec import PHASES, per_process
from blockbench.workloads.registry import STYLE_PHASES, WORKLOADS, impls_of

ACCELERATORS = ("gpu", "tpu")
Phases = tuple[str, ...] | None  # None: every phase that applies


class ConfigError(InputError):
    """A configuration value that cannot be run; the message names the key and the value."""


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
            " a new one is a module of a catalog's workloads/ folder, named in `claims`)"
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


# Keys an older config sets, and what replaced them.
REPLACED_KEYS = {
    "articles": "the published figures now live in each catalog's figures.yaml "
    "(config/claims/articles/figures.yaml); remove the key",
}


def check_replaced(config: Mapping[str, Any]) -> None:
    """Refuse a key an older config sets in one line saying what replaced it, before the
    schema's words (which would only call it unexpected)."""
    for key, now in REPLACED_KEYS.items():
        if key in config:
            raise ConfigError(f"config key {key}: {config[key]!r}: {now}")


def check(config: dict[str, Any]) -> None:
    """Raise ConfigError for the first value the registry or the file system rejects."""
    for device in config.get("claim_devices") or []:
        if device not in config["devices"]:
            raise ConfigError(
                f"config key claim_devices: {device!r} is not in devices {config['devices']}"
            )
    claims_files(config.get("claims") or [])  # first: the blocks may name its workloads
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


def _block_cells(config: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any], Cell]]:
    """Every (block's place, block, cell) the configuration's `workloads` add."""
    devices = config["devices"]
    with_accelerator = any(d in ACCELERATORS for d in devices)
    for i, spec in enumerate(config["workloads"]):
        name = spec["name"]
        registry = impls_of(name)
        baseline = WORKLOADS[name].baseline
        for device in (d for d in devices if d in spec.get("devices", devices)):
            for impl in spec["impls"]:
                if device not in registry[impl].devices:
                    continue
                sizes = set(spec.get("impl_sizes", {}).get(impl, spec["sizes"]))
                if with_accelerator and (device in ACCELERATORS or impl == baseline):
                    sizes |= set(spec.get("accelerator_sizes", []))
                for size in sizes:
                    yield i, spec, Cell(device, name, impl, size)


Claims = Sequence[Claim]


def claimed(config: dict[str, Any], claims: Claims) -> Iterator[tuple[Claim, Cell, str]]:
    """Every (claim, cell, phase) the run's claim parts read, at the sizes `claim_sizes`
    says (blockbench.judge.claim.Part.sizes_for). A part is measured only where the run
    has every device it names, and, with `claim_devices`, only where it names one of them
    (a GPU grid measures its GPU parts alone). A claim with a part on a device the run
    lacks is not_run whatever its other parts show, so they are measured only with
    `partial_claims` (C5's and C6's CPU parts in a CPU run: most of its cells)."""
    mode = config.get("claim_sizes", "default")
    if mode == "none":
        return
    devices, only = set(config["devices"]), set(config.get("claim_devices") or [])
    for claim in claims:
        if not (claim.devices <= devices or config.get("partial_claims")):
            continue
        for part in claim.parts:
            used = part.devices
            if not used <= devices or (only and not used & only):
                continue
            for size in part.sizes_for(mode):
                for t in part.terms:
                    yield claim, t.at(size), t.phase


Asked = dict[str, tuple[Any, str]]  # "phases", "repeats", "sampling.<key>" -> (value, who)


def _ask(
    config: dict[str, Any], asked: Asked, cell: Cell, entry: Mapping[str, Any], who: str
) -> None:
    """Record what `who` says of `cell`; a different value said before is refused, naming
    both, since one cell is measured one way."""
    said: dict[str, Any] = {}
    if entry.get("phases"):
        said["phases"] = _ordered(set(entry["phases"]))
    if "repeats" in entry:
        said["repeats"] = entry["repeats"]
    for key, value in entry.get("sampling", {}).items():
        if "sampling" in config and key not in config["sampling"]:
            known = ", ".join(config["sampling"])
            raise ConfigError(f"{who}: no sampling key {key!r} (known: {known})")
        said[f"sampling.{key}"] = value
    for key, value in said.items():
        if key in asked and asked[key][0] != value:
            before, by = asked[key]
            raise ConfigError(
                f"{cell.key}: {by} sets {key} {before!r} and {who} sets {value!r}; one cell is "
                "measured one way, so say it in one place"
            )
        asked.setdefault(key, (value, who))


@dataclass(frozen=True)
class Settings:
    """How one cell is measured: by how many processes, with the cell's sampling (split
    over those processes by `per_process`)."""

    repeats: int
    sampling: dict[str, Any]

    def per_process(self) -> dict[str, Any]:
        return per_process(self.sampling, self.repeats)


def _resolve(config: dict[str, Any], claims: Claims) -> dict[Cell, tuple[Phases, Settings]]:
    """Every cell of the run, with its phases and settings.

    A cell's phases: a setting's, else every phase that applies (`cell_phases: every`, the
    default, since processes that measured every phase first kept the steady time's fast
    mode: docs/method.md), or only those its claims read (`cell_phases: claimed`, for the
    GPU grids); the phases its claims read always join.
    """
    read: dict[Cell, set[str]] = {}
    asked: dict[Cell, Asked] = {}
    for claim, cell, phase in claimed(config, claims):
        read.setdefault(cell, set()).add(phase)
        who = f"claim {claim.id} ({claim.file or 'claims'})"
        for entry in claim.settings:
            if selects(entry, cell):
                _ask(config, asked.setdefault(cell, {}), cell, entry, who)
    for i, spec, cell in _block_cells(config):
        who = f"config key workloads[{i}] ({spec['name']})"
        _ask(config, asked.setdefault(cell, {}), cell, spec, who)
    out = {}
    for cell in sorted(asked.keys() | read.keys()):
        said, reads = asked.get(cell, {}), read.get(cell, set())
        if "phases" in said:
            phases: Phases = _ordered(set(said["phases"][0]) | reads)
        elif reads and config.get("cell_phases") == "claimed":
            phases = _ordered(reads)
        else:
            phases = None
        sampling = dict(config.get("sampling", {}))
        sampling.update({k[9:]: v for k, (v, _) in said.items() if k.startswith("sampling.")})
        repeats = said.get("repeats", (config.get("repeats"), ""))[0]
        out[cell] = (phases, Settings(repeats, sampling))
    return out


def plan(config: dict[str, Any], claims: Claims = ()) -> dict[Cell, Phases]:
    """Every cell of the run with the phases it measures.

    `accelerator_sizes` (a block's large sizes) join when a GPU or TPU is in the run, on
    the accelerators and for the CPU baseline the accelerator cells are measured against.
    A block's own `devices` narrows the run's for its cells.
    """
    return {cell: phases for cell, (phases, _) in _resolve(config, claims).items()}


def settings(config: dict[str, Any], claims: Claims = ()) -> dict[Cell, Settings]:
    """Every cell's settings: the run's `repeats` and `sampling`, with what a claim's
    `settings` or a block says of the cell."""
    return {cell: s for cell, (_, s) in _resolve(config, claims).items()}


def cells(config: dict[str, Any], claims: Claims = ()) -> list[Cell]:
    """Every cell of the run, sorted."""
    return list(plan(config, claims))


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
        f"two looks: {precision(config).words()}, first stage {counts[0]}-{counts[-1]} "
        f"rounds ({digest}), max_rounds {config['max_rounds']}, "
        + (f"budget {budget:g} min" if budget else "no budget")
    )
