"""The one registry of workloads and implementations.

A benchmark case is a declarative entry, as in JAX's own benchmarks: adding an
implementation is adding one `Impl` line; the harness derives every phase from its `style`.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from blockbench.spec import DEVICES, PHASES
from blockbench.workloads import grad_logistic, matmul, selu, stencil

CPU_ONLY = ("cpu",)

Style = Literal["numpy", "eager", "jit"]
# The phases the harness measures for each style (blockbench.cell.phase_plan builds them).
STYLE_PHASES: dict[str, tuple[str, ...]] = {
    "numpy": ("first_call", "steady"),
    "eager": tuple(p for p in PHASES if p not in ("trace_lower", "compile")),
    "jit": PHASES,
}


def _positive(size: int) -> None:
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")


@dataclass(frozen=True)
class KnownValues:
    """Exact values a published source printed, checked on the measured implementation."""

    inputs: tuple[np.ndarray, ...]
    expected: np.ndarray
    atol: float


@dataclass(frozen=True)
class Workload:
    name: str
    size_meaning: str
    make_inputs: Callable[[int, np.random.Generator], tuple[np.ndarray, ...]]
    check: Callable[[tuple[np.ndarray, ...], Any], float]  # max relative error vs float64
    tolerance: float
    work: Callable[[int], float]  # amount of work a size stands for, used by growth fits
    baseline: str  # the implementation speedups are measured against (on the CPU)
    validate_size: Callable[[int], None] = _positive
    known_values: KnownValues | None = None


@dataclass(frozen=True)
class Impl:
    name: str
    workload: str
    style: Style
    fn: Callable[..., Any]
    devices: tuple[str, ...] = DEVICES
    # True: NumPy arrays go in on every call, so each call pays the host-to-device copy.
    host_inputs: bool = False
    # What such a call copies to the device, where it is not just its inputs: its
    # host_to_device phase times exactly that copy (None: the inputs).
    sends: Callable[[tuple[np.ndarray, ...]], tuple[np.ndarray, ...]] | None = None


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        # TF32 matmuls on recent GPUs keep ~3 decimal digits: the tolerance allows that and
        # still catches a wrong kernel (errors of order 1).
        Workload(
            "matmul",
            "side of the square matrix",
            matmul.make_inputs,
            matmul.check,
            1e-2,
            matmul.work,
            baseline="numpy",
        ),
        Workload(
            "dot_xx",
            "side of the square matrix",
            matmul.make_uniform_inputs,
            matmul.check_xx,
            1e-2,
            matmul.work,
            baseline="numpy",
        ),
        Workload("selu", "vector length", selu.make_inputs, selu.check, 1e-5, selu.work, "numpy"),
        Workload(
            "stencil",
            "rows (columns = size / 2)",
            stencil.make_inputs,
            stencil.check,
            1e-4,
            stencil.work,
            baseline="loop",
            validate_size=stencil.validate_size,
        ),
        Workload(
            "grad_logistic",
            "vector length",
            grad_logistic.make_inputs,
            grad_logistic.check,
            1e-5,
            grad_logistic.work,
            baseline="grad",
            known_values=KnownValues(
                (grad_logistic.KNOWN_INPUT,), grad_logistic.KNOWN_OUTPUT, grad_logistic.KNOWN_ATOL
            ),
        ),
    )
}

IMPLS: tuple[Impl, ...] = (
    Impl("numpy", "matmul", "numpy", matmul.numpy_dot, CPU_ONLY),
    Impl(
        "jax_numpy_input",
        "matmul",
        "eager",
        matmul.jax_dot,
        host_inputs=True,
        sends=matmul.sent_by_dot_xt,
    ),
    Impl("jax", "matmul", "eager", matmul.jax_dot),
    Impl("jax_jit", "matmul", "jit", matmul.jax_dot),
    Impl("numpy", "dot_xx", "numpy", matmul.numpy_dot_xx, CPU_ONLY),
    Impl("jax", "dot_xx", "eager", matmul.jax_dot_xx),
    Impl("jax_jit", "dot_xx", "jit", matmul.jax_dot_xx),
    Impl("numpy", "selu", "numpy", selu.numpy_selu, CPU_ONLY),
    Impl("jax", "selu", "eager", selu.jax_selu),
    Impl("jax_jit", "selu", "jit", selu.jax_selu),
    Impl("loop", "stencil", "eager", stencil.loop),
    Impl("convolve", "stencil", "eager", stencil.convolve),
    Impl("scan", "stencil", "eager", stencil.scan),
    Impl("loop_jit", "stencil", "jit", stencil.loop),
    Impl("convolve_jit", "stencil", "jit", stencil.convolve),
    Impl("scan_jit", "stencil", "jit", stencil.scan),
    Impl("grad", "grad_logistic", "eager", grad_logistic.grad_total_logistic),
    Impl("grad_jit", "grad_logistic", "jit", grad_logistic.grad_total_logistic),
)


def impls_of(workload: str) -> dict[str, Impl]:
    return {i.name: i for i in IMPLS if i.workload == workload}


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
