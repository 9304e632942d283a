"""`x.T @ (x - x.mean(axis=0))` on a square float32 matrix (the JAX docs' benchmarking
example, "Benchmarking JAX code"): one matrix product after a mean and a subtraction. At
10 x 10 its time is its few operations' dispatch (J4 runs it eagerly, J5 jitted on a GPU);
at 1000 x 1000 it is the product's 2 GFLOP, so a CPU's jitted call against NumPy compares
XLA:CPU's matrix product with NumPy's BLAS, not a compiled sequence with operations run one
at a time (J4 takes `normalize` for that)."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred
from blockbench.workloads.matmul import checked_rows, product_error, reading

np = deferred("numpy")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """Normal float32 data: the FAQ's `np.ones` would leave x - mean(x) zero, and the check
    nothing to catch; the product's work is the same whatever the values."""
    return (rng.standard_normal((size, size), dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    x = inputs[0].astype(np.float64)
    return max_rel_err(out, x.T @ (x - x.mean(axis=0)))


def precision(inputs: tuple[np.ndarray], out: object) -> dict[str, object]:
    """Which precision the product ran in (blockbench.workloads.matmul.precision), from a
    64 x 64 block of `x.T @ xc`: columns of `x` and of the centred `xc`, in float64."""
    x = inputs[0].astype(np.float64)
    cols = checked_rows(x.T)
    centred = x - x.mean(axis=0)
    block = np.asarray(out)[np.ix_(cols, cols)]
    return reading(product_error(x[:, cols].T, centred[:, cols], block))


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
        precision=precision,
        impls=(
            Impl("numpy", "numpy", f, CPU_ONLY, blas=True),
            Impl("jax", "eager", f),
            Impl("jax_jit", "jit", f),
        ),
    ),
)
