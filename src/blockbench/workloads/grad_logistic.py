"""`grad` of `sum(1 / (1 + exp(-x)))` (Source C, claim C7)."""

import jax
import jax.numpy as jnp
import numpy as np

from blockbench.workloads.common import max_rel_err

# The article's printed values at x = [0, 1, 2]; float32 carries about 7 digits.
KNOWN_INPUT = np.array([0.0, 1.0, 2.0], dtype=np.float32)
KNOWN_OUTPUT = np.array([0.25, 0.19661197, 0.10499357])
KNOWN_ATOL = 1e-6


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal(size, dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    s = 1.0 / (1.0 + np.exp(-inputs[0].astype(np.float64)))
    return max_rel_err(out, s * (1.0 - s))


def work(size: int) -> float:
    return float(size)


def _total_logistic(x: jnp.ndarray) -> jnp.ndarray:
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


grad_total_logistic = jax.grad(_total_logistic)
