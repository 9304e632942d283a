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


def _checked_rows(x: np.ndarray) -> np.ndarray:
    return np.unique(np.linspace(0, x.shape[0] - 1, CHECK_ROWS).astype(int))


def check(inputs: tuple[np.ndarray], out: object) -> float:
    (x,) = inputs
    rows, x64 = _checked_rows(x), x.astype(np.float64)
    return max_rel_err(np.asarray(out)[rows], x64[rows] @ x64.T)


def check_xx(inputs: tuple[np.ndarray], out: object) -> float:
    (x,) = inputs
    rows, x64 = _checked_rows(x), x.astype(np.float64)
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
    ),
)
