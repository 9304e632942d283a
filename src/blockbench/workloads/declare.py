"""How a workload is declared: its inputs, its float64 check, what a size means, and the
implementations that compute it.

A workload module declares everything about itself in one place, a module-level
`WORKLOADS` tuple, as JAX's own benchmarks declare a case in a few lines; the registry
collects every module's. The functions reach JAX, and NumPy, through `deferred` modules,
imported where a function first runs, so the grid, the tables, the figures and a NumPy cell's
worker read the declarations without loading JAX, and Snakemake parses the workflow without
NumPy (annotations stay strings: `from __future__ import annotations`).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from blockbench.records.spec import DEVICES, PHASES

if TYPE_CHECKING:
    import numpy as np

CPU_ONLY = ("cpu",)

Style = Literal["numpy", "eager", "jit"]
# The phases the harness measures for each style (blockbench.measure.cell.phase_plan).
STYLE_PHASES: dict[str, tuple[str, ...]] = {
    "numpy": ("first_call", "steady"),
    "eager": tuple(p for p in PHASES if p not in ("trace_lower", "compile")),
    "jit": PHASES,
}


class Deferred(types.ModuleType):
    """A module imported on its first attribute access.

    The import copies the module's names into this object's own dict, so every later
    lookup costs what a plain module's does: a timed call pays nothing for the deferral
    (the harness warms every function up before it times it)."""

    def __getattr__(self, attr: str) -> Any:
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def deferred(name: str) -> Any:
    """`jnp = deferred("jax.numpy")`: the module, imported when a function first uses it."""
    return Deferred(name)


def positive(size: int) -> None:
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")


@dataclass(frozen=True)
class KnownValues:
    """Exact values a published source printed, checked on the measured implementation:
    plain numbers, made arrays (inputs in `dtype`) only where a cell checks them."""

    inputs: tuple[tuple[float, ...], ...]
    expected: tuple[float, ...]
    atol: float
    dtype: str = "float32"

    def input_arrays(self) -> tuple[np.ndarray, ...]:
        numpy = importlib.import_module("numpy")
        return tuple(numpy.asarray(x, dtype=self.dtype) for x in self.inputs)


@dataclass(frozen=True)
class Impl:
    name: str
    style: Style
    fn: Callable[..., Any]
    devices: tuple[str, ...] = DEVICES
    # True: NumPy arrays go in on every call, so each call pays the host-to-device copy.
    host_inputs: bool = False
    # What such a call copies to the device, where it is not just its inputs: its
    # host_to_device phase times exactly that copy (None: the inputs).
    sends: Callable[[tuple[np.ndarray, ...]], tuple[np.ndarray, ...]] | None = None
    # True: a NumPy implementation whose time is NumPy's BLAS (its kernel is recorded and a
    # kernel forced by the environment is warned of)
    blas: bool = False
    workload: str = ""  # filled in by the Workload that declares it


@dataclass(frozen=True)
class Workload:
    name: str
    size_meaning: str
    make_inputs: Callable[[int, np.random.Generator], tuple[np.ndarray, ...]]
    check: Callable[[tuple[np.ndarray, ...], Any], float]  # max relative error vs float64
    tolerance: float
    work: Callable[[int], float]  # amount of work a size stands for, used by growth fits
    baseline: str  # the implementation speedups are measured against (on the CPU)
    impls: tuple[Impl, ...] = ()
    validate_size: Callable[[int], None] = positive
    known_values: KnownValues | None = None
    # The precision a float32 matmul's output shows, measured against float64 and recorded
    # with the check (blockbench.workloads.matmul.precision); None: not a matmul's
    precision: Callable[[tuple[np.ndarray, ...], Any], dict[str, Any]] | None = None
    # Why a workload whose float32 products (matrix products, convolutions) may run on a GPU
    # has no `precision`: such a product may be computed in TF32 there, and a claim judged on
    # it must know (tests/test_precision.py finds the products by running each implementation)
    unprobed: str = ""
    # The dtype its implementations return (a float16 product's is float16): what the test of
    # every implementation against its float64 reference holds each output to
    dtype: str = "float32"

    def __post_init__(self) -> None:
        names = [i.name for i in self.impls]
        if len(set(names)) != len(names):
            raise ValueError(f"workload {self.name!r} declares an implementation twice: {names}")
        if self.baseline not in names:
            raise ValueError(f"workload {self.name!r}: baseline {self.baseline!r} not in {names}")
        if not self.tolerance > 0:  # a record's check says its tolerance, which must be > 0
            raise ValueError(f"workload {self.name!r}: tolerance {self.tolerance} is not > 0")
        impls = tuple(replace(i, workload=self.name) for i in self.impls)
        object.__setattr__(self, "impls", impls)
