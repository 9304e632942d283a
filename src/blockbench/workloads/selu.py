"""SELU on a float32 vector (Source C), with the article's constants."""

import jax.numpy as jnp
import numpy as np

from blockbench.workloads.common import max_rel_err

ALPHA = 1.67
LMBDA = 1.05


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal(size, dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    x = inputs[0].astype(np.float64)
    return max_rel_err(out, LMBDA * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA))


def work(size: int) -> float:
    return float(size)


def numpy_selu(x: np.ndarray) -> np.ndarray:
    return LMBDA * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA)


def jax_selu(x: jnp.ndarray) -> jnp.ndarray:
    return LMBDA * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA)
