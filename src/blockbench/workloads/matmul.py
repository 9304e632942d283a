"""Matrix products on square float32 matrices.

Sources B and C time `dot(x, x.T)` on normal data; Source A times `jnp.dot(x, x)` on
`random.uniform` data. The two are kept apart because they are not the same measurement:
eager `jnp.dot(x, x.T)` runs the transpose as its own operation first, and its cost lands in
the dispatch time Source A compares against.
"""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")

# Checked rows: a float64 product of the full matrix at size 10000 would cost more than
# the measurement itself, and a wrong kernel shows in any row.
CHECK_ROWS = 64


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal((size, size), dtype=np.float32),)


def make_uniform_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """Source A's `random.uniform(key, (size, size))`: float32 in [0, 1)."""
    return (rng.random((size, size), dtype=np.float32),)


def checked_rows(x: np.ndarray) -> np.ndarray:
    return np.unique(np.linspace(0, x.shape[0] - 1, CHECK_ROWS).astype(int))


def check(inputs: tuple[np.ndarray], out: object) -> float:
    (x,) = inputs
    rows, x64 = checked_rows(x), x.astype(np.float64)
    return max_rel_err(np.asarray(out)[rows], x64[rows] @ x64.T)


# The RMS error of a product's entries, each in units of its own products' magnitudes
# (|out_ij - ref_ij| / sqrt(sum_k (x_ik x_jk)^2)), over the off-diagonal entries of the checked
# rows' block of x x^T: independent of the size where the normwise error is not (TF32's falls as
# 1/sqrt(n): 1.2e-4 at 64, 1.7e-5 at 10000, where a float32 product summed in one chain reads
# 5.6e-6). Normal float32 inputs (one draw, seed 0) against float64, computed on the CPU:
#   n                         64       1000     5000     10000
#   np.dot (OpenBLAS)         1.4e-7   2.8e-7   3.2e-7   3.1e-7
#   one float32 chain over k  1.4e-7   5.7e-7   1.3e-6   1.8e-6   (a GEMM without split-K)
#   TF32, inputs rounded      2.9e-4   3.0e-4   2.9e-4   2.9e-4   (to nearest, 10-bit mantissa)
#   TF32, inputs truncated    7.7e-4   7.6e-4   7.7e-4   7.7e-4   (low 13 bits dropped)
# (TF32 emulated: inputs rounded to a 10-bit mantissa, summed in float32.) The threshold sits
# 11x over float32's worst and 15x under TF32's best; bfloat16 (7 bits) reads 2.4e-3.
PRECISION_THRESHOLD = 2e-5
FLOAT32, BELOW_FLOAT32 = "float32", "tensorfloat32 or lower"


def product_error(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> float:
    """The RMS error of `out`, a product's entries computed in float32 or below, against the
    float64 product `a @ b`, each entry in units of its own products' magnitude, off the
    diagonal. The diagonal is left out: where `b` is `a.T` (or close to it), it sums positive
    products, whose error in float32 grows with their count (9.3e-5 at 10000 in one chain),
    as TF32's does not."""
    err = np.abs(out.astype(np.float64) - a @ b)
    scale = np.sqrt((a * a) @ (b * b))
    off = ~np.eye(len(a), dtype=bool)
    return float(np.sqrt(np.mean((err[off] / scale[off]) ** 2)))


def unit_error(inputs: tuple[np.ndarray], out: object) -> float:
    """`product_error` of `dot(x, x.T)` in the checked rows' columns: a 64 x 64 x n product in
    float64, as the check's own is 64 x n x n."""
    (x,) = inputs
    rows = checked_rows(x)
    a = x[rows].astype(np.float64)
    return product_error(a, a.T, np.asarray(out)[np.ix_(rows, rows)])


def reading(err: float) -> dict[str, object]:
    """What a product's `product_error` says of its precision, recorded with the check."""
    return {
        "matmul_precision_measured": FLOAT32 if err < PRECISION_THRESHOLD else BELOW_FLOAT32,
        "matmul_unit_err": err,
        "matmul_unit_err_threshold": PRECISION_THRESHOLD,
    }


def precision(inputs: tuple[np.ndarray], out: object) -> dict[str, object]:
    """Which precision the product was computed in, as its error shows it: what the articles'
    T4 and NumPy computed (float32), or fewer mantissa bits (TF32, bfloat16), which XLA may
    choose on a GPU at the `default` precision. Measured, so a claim need not trust the
    inference from the device (provenance.device's `float32_matmul_inferred`)."""
    return reading(unit_error(inputs, out))


def check_xx(inputs: tuple[np.ndarray], out: object) -> float:
    (x,) = inputs
    rows, x64 = checked_rows(x), x.astype(np.float64)
    return max_rel_err(np.asarray(out)[rows], x64[rows] @ x64)


def work(size: int) -> float:
    """Floating-point operations of one product."""
    return 2.0 * size**3


def numpy_dot(x: np.ndarray) -> np.ndarray:
    return np.dot(x, x.T)


def jax_dot(x: Any) -> Any:
    return jnp.dot(x, x.T)


def sent_by_dot_xt(inputs: tuple[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """What `jnp.dot(x_np, x_np.T)` copies to the device: two host arrays, `x` and the
    NumPy view `x.T` (laid out anew on the way), not one (Source B's test D)."""
    (x,) = inputs
    return (x, x.T)


def numpy_dot_xx(x: np.ndarray) -> np.ndarray:
    return np.dot(x, x)


def jax_dot_xx(x: Any) -> Any:
    return jnp.dot(x, x)


# TF32 matmuls on recent GPUs keep ~3 decimal digits: the tolerance allows that and still
# catches a wrong kernel (errors of order 1).
WORKLOADS = (
    Workload(
        "matmul",
        "side of the square matrix",
        make_inputs,
        check,
        tolerance=1e-2,
        work=work,
        baseline="numpy",
        precision=precision,
        impls=(
            Impl("numpy", "numpy", numpy_dot, CPU_ONLY, blas=True),
            Impl("jax_numpy_input", "eager", jax_dot, host_inputs=True, sends=sent_by_dot_xt),
            Impl("jax", "eager", jax_dot),
            Impl("jax_jit", "jit", jax_dot),
        ),
    ),
    Workload(
        "dot_xx",
        "side of the square matrix",
        make_uniform_inputs,
        check_xx,
        tolerance=1e-2,
        work=work,
        baseline="numpy",
        impls=(
            Impl("numpy", "numpy", numpy_dot_xx, CPU_ONLY, blas=True),
            Impl("jax", "eager", jax_dot_xx),
            Impl("jax_jit", "jit", jax_dot_xx),
        ),
        unprobed="uniform inputs make every product positive: summed in one float32 chain they"
        " err as TF32 does (1.1e-4 against 2.7e-4 at 10000, in `unit_error`'s units)",
    ),
)
