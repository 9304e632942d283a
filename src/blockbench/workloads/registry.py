"""The one registry of workloads and implementations, collected from the workload modules.

Every module of this package but the machinery (`declare`, `registry`, `checks`) declares
`WORKLOADS`; adding a workload is adding one module. The config check, the grid, the
tables and the worker all look names up here, so a workload is declared once.
"""

import importlib
import pkgutil

from blockbench.records.spec import DEVICES
from blockbench.workloads.declare import STYLE_PHASES, Impl, Workload

__all__ = ["IMPLS", "STYLE_PHASES", "WORKLOADS", "Impl", "Workload", "impls_of", "lookup"]

MACHINERY = {"declare", "registry", "checks"}


def _collect() -> dict[str, Workload]:
    found: dict[str, tuple[Workload, str]] = {}
    package = importlib.import_module(__package__)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in MACHINERY:
            continue
        module = f"{__package__}.{info.name}"
        declared = getattr(importlib.import_module(module), "WORKLOADS", None)
        if declared is None:
            raise ImportError(f"{module} declares no WORKLOADS (see blockbench.workloads.declare)")
        for workload in declared:
            if workload.name in found:
                raise ImportError(
                    f"workload {workload.name!r} is declared twice: in {found[workload.name][1]}"
                    f" and in {module}"
                )
            found[workload.name] = (workload, module)
    return {name: workload for name, (workload, _) in found.items()}


WORKLOADS: dict[str, Workload] = _collect()
IMPLS: tuple[Impl, ...] = tuple(i for w in WORKLOADS.values() for i in w.impls)


def impls_of(workload: str) -> dict[str, Impl]:
    return {i.name: i for i in WORKLOADS[workload].impls} if workload in WORKLOADS else {}


def lookup(device: str, workload: str, impl: str, size: int) -> tuple[Workload, Impl]:
    """Resolve a grid cell, or raise ValueError naming what is wrong with it."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r} (known: {', '.join(WORKLOADS)})")
    impls = impls_of(workload)
    if impl not in impls:
        raise ValueError(
            f"unknown implementation {impl!r} of {workload!r} (known: {', '.join(impls)})"
        )
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r} (known: {', '.join(DEVICES)})")
    entry = impls[impl]
    if device not in entry.devices:
        raise ValueError(
            f"{workload}/{impl} does not run on {device!r} (only {', '.join(entry.devices)})"
        )
    WORKLOADS[workload].validate_size(size)
    return WORKLOADS[workload], entry
