"""`dot(x, x.T)` on a square float16 matrix (jax#7431, fixed by PR #7462): XLA's CPU float16
product was an Eigen kernel hundreds of times slower than float32's. Its float32 twin is
the `matmul` workload's `jax` cell."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """The issue's `random.normal(key, (size, size), dtype=jnp.float16)`."""
    return (rng.standard_normal((size, size), dtype=np.float32).astype(np.float16),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    x = inputs[0].astype(np.float64)
    return max_rel_err(out, x @ x.T)


def work(size: int) -> float:
    return 2.0 * size**3


def jax_dot(x: Any) -> Any:
    return jnp.dot(x, x.T)


WORKLOADS = (
    Workload(
        "matmul_f16",
        "side of the square matrix",
        make_inputs,
        check,
        # float16 keeps ~3 digits: its rounding of a sum of n products, not a wrong kernel
        tolerance=1e-2,
        work=work,
        baseline="jax",
        dtype="float16",
        impls=(
            Impl("jax", "eager", jax_dot),
            Impl("jax_jit", "jit", jax_dot),
        ),
    ),
)
