"""`dot(x, x.T)` on a square float32 matrix (Sources A, B and C)."""

import jax.numpy as jnp
import numpy as np

from blockbench.workloads.common import max_rel_err

# Checked rows: a float64 product of the full matrix at size 10000 would cost more than
# the measurement itself, and a wrong kernel shows in any row.
CHECK_ROWS = 64


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal((size, size), dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    (x,) = inputs
    rows = np.unique(np.linspace(0, x.shape[0] - 1, CHECK_ROWS).astype(int))
    x64 = x.astype(np.float64)
    ref = x64[rows] @ x64.T
    return max_rel_err(np.asarray(out)[rows], ref)


def work(size: int) -> float:
    """Floating-point operations of one product."""
    return 2.0 * size**3


def numpy_dot(x: np.ndarray) -> np.ndarray:
    return np.dot(x, x.T)


def jax_dot(x: jnp.ndarray) -> jnp.ndarray:
    return jnp.dot(x, x.T)
