"""The one registry of workloads and implementations, collected from the workload modules.

Every module of this package but the machinery (`declare`, `registry`, `checks`) declares
`WORKLOADS`; adding a workload is adding one module. The config check, the grid, the
tables and the worker all look names up here, so a workload is declared once.
"""

import importlib
import pkgutil
from typing import Any

from blockbench.records.spec import DEVICES, PHASES, STEADY
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


def check_term(device: Any, workload: Any, impl: Any, phase: Any = STEADY) -> Impl:
    """The implementation a cell (but for its size) names, or ValueError saying what is wrong
    with it: the one check of a cell's names, for a worker's cell, a claim's term and a
    published figure's cell alike."""
    if workload not in WORKLOADS:
        raise ValueError(f"no workload {workload!r} (known: {', '.join(sorted(WORKLOADS))})")
    impls = impls_of(workload)
    if impl not in impls:
        raise ValueError(f"{workload} has no impl {impl!r} (known: {', '.join(impls)})")
    if device not in DEVICES:
        raise ValueError(f"no device {device!r} (known: {', '.join(DEVICES)})")
    if device not in impls[impl].devices:
        raise ValueError(
            f"{workload}/{impl} does not run on {device} (only {', '.join(impls[impl].devices)})"
        )
    if phase not in PHASES:
        raise ValueError(f"no phase {phase!r} (known: {', '.join(PHASES)})")
    return impls[impl]


def lookup(device: str, workload: str, impl: str, size: int) -> tuple[Workload, Impl]:
    """Resolve a grid cell, or raise ValueError naming what is wrong with it."""
    entry = check_term(device, workload, impl)
    WORKLOADS[workload].validate_size(size)
    return WORKLOADS[workload], entry
