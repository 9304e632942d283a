"""The device x workload x implementation x size grid a configuration asks for.

The JSON Schema (workflow/schemas/config.schema.yaml) checks shapes and types; this module
checks what a schema cannot know, against the registry, and names the key and the value.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blockbench.registry import WORKLOADS, impls_of

ACCELERATORS = ("gpu", "tpu")


class ConfigError(ValueError):
    """A configuration value that cannot be run; the message names the key and the value."""


@dataclass(frozen=True, order=True)
class Cell:
    device: str
    workload: str
    impl: str
    size: int

    def path(self, run_label: str) -> str:
        return f"results/raw/{run_label}/{self.device}/{self.workload}/{self.impl}/{self.size}.json"


def _check_size(where: str, workload: str, size: int) -> None:
    try:
        WORKLOADS[workload].validate_size(size)
    except ValueError as exc:
        raise ConfigError(f"config key {where}: {size}: {exc}") from exc


def check(config: dict[str, Any]) -> None:
    """Raise ConfigError for the first value the registry or the file system rejects."""
    seen: set[str] = set()
    for i, spec in enumerate(config["workloads"]):
        name = spec["name"]
        key = f"workloads[{i}] ({name})"
        if name in seen:
            raise ConfigError(f"config key {key}.name: {name!r} appears twice")
        seen.add(name)
        known = impls_of(name)
        for impl in spec["impls"]:
            if impl not in known:
                raise ConfigError(
                    f"config key {key}.impls: unknown implementation {impl!r} "
                    f"(known: {', '.join(known)})"
                )
        for sizes_key in ("sizes", "accelerator_sizes"):
            for size in spec.get(sizes_key, []):
                _check_size(f"{key}.{sizes_key}", name, size)
        for impl, sizes in spec.get("impl_sizes", {}).items():
            if impl not in spec["impls"]:
                raise ConfigError(f"config key {key}.impl_sizes: {impl!r} is not in {key}.impls")
            for size in sizes:
                _check_size(f"{key}.impl_sizes.{impl}", name, size)
    for i, run in enumerate(config.get("merge", [])):
        if not Path(run).is_dir():
            raise ConfigError(f"config key merge[{i}]: {run!r} is not a directory")


def cells(config: dict[str, Any]) -> list[Cell]:
    """Every cell of the run, sorted.

    `accelerator_sizes` (the articles' large sizes) join when a GPU or TPU is in the run, on
    the accelerators and for the CPU baseline the accelerator claims are measured against.
    """
    devices = config["devices"]
    with_accelerator = any(d in ACCELERATORS for d in devices)
    out: set[Cell] = set()
    for spec in config["workloads"]:
        name = spec["name"]
        registry = impls_of(name)
        baseline = WORKLOADS[name].baseline
        for device in devices:
            for impl in spec["impls"]:
                if device not in registry[impl].devices:
                    continue
                sizes = set(spec.get("impl_sizes", {}).get(impl, spec["sizes"]))
                if with_accelerator and (device in ACCELERATORS or impl == baseline):
                    sizes |= set(spec.get("accelerator_sizes", []))
                out |= {Cell(device, name, impl, s) for s in sizes}
    return sorted(out)
