"""`x.T @ (x - x.mean(axis=0))` on a square float32 matrix (the JAX FAQ's benchmarking
example): one matrix product after a mean and a subtraction, a short sequence of operations
that NumPy runs one at a time and `jit` compiles into one program."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """Normal float32 data: the FAQ's `np.ones` would leave x - mean(x) zero, and the check
    nothing to catch; the product's work is the same whatever the values."""
    return (rng.standard_normal((size, size), dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    x = inputs[0].astype(np.float64)
    return max_rel_err(out, x.T @ (x - x.mean(axis=0)))


def work(size: int) -> float:
    return 2.0 * size**3


def f(x: Any) -> Any:
    """The FAQ's `f`, written for NumPy and JAX arrays alike."""
    return x.T @ (x - x.mean(axis=0))


WORKLOADS = (
    Workload(
        "centered_gram",
        "side of the square matrix",
        make_inputs,
        check,
        tolerance=1e-2,  # TF32 on a GPU keeps ~3 digits, as matmul allows
        work=work,
        baseline="numpy",
        impls=(
            Impl("numpy", "numpy", f, CPU_ONLY, blas=True),
            Impl("jax", "eager", f),
            Impl("jax_jit", "jit", f),
        ),
    ),
)
