"""Normalising the columns of a 10-column float32 array ("How to think in JAX"): column
reductions (the mean, and the standard deviation's own mean and mean square) and the
elementwise operations between them (subtractions, a square, a square root, a division),
which `jit` fuses into one program and NumPy runs one at a time, each over the whole array
(J1: eager against jit; J4: NumPy against jit)."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")

COLUMNS = 10  # the page's X is 10000 x 10


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """The page's `np.random.rand(10000, 10)`, made float32 as `jnp.array` makes it."""
    return (rng.random((size, COLUMNS), dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    x = inputs[0].astype(np.float64)
    x = x - x.mean(0)
    return max_rel_err(out, x / x.std(0))


def work(size: int) -> float:
    return float(size * COLUMNS)


def norm(x: Any) -> Any:
    """The page's `norm`, for NumPy and JAX arrays alike (methods, no module)."""
    x = x - x.mean(0)
    return x / x.std(0)


def validate(size: int) -> None:
    if size < 2:
        raise ValueError(f"normalize size must be >= 2 rows, got {size}")


WORKLOADS = (
    Workload(
        "normalize",
        "rows (10 columns)",
        make_inputs,
        check,
        tolerance=1e-5,
        work=work,
        baseline="numpy",
        validate_size=validate,
        impls=(
            Impl("numpy", "numpy", norm, CPU_ONLY),
            Impl("jax", "eager", norm),
            Impl("jax_jit", "jit", norm),
        ),
    ),
)
