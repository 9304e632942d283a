"""`grad` of `sum(1 / (1 + exp(-x)))` (Source C, claim C7)."""

from __future__ import annotations

from functools import cache
from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, KnownValues, Workload, deferred

np = deferred("numpy")
jax = deferred("jax")
jnp = deferred("jax.numpy")

# The article's printed values at x = [0, 1, 2] (float32 inputs: about 7 digits).
KNOWN_INPUT = (0.0, 1.0, 2.0)
KNOWN_OUTPUT = (0.25, 0.19661197, 0.10499357)
KNOWN_ATOL = 1e-6


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal(size, dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    s = 1.0 / (1.0 + np.exp(-inputs[0].astype(np.float64)))
    return max_rel_err(out, s * (1.0 - s))


def work(size: int) -> float:
    return float(size)


def _total_logistic(x: Any) -> Any:
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


@cache
def _gradient() -> Any:
    return jax.grad(_total_logistic)


def grad_total_logistic(x: Any) -> Any:
    """`jax.grad(total_logistic)(x)`, the gradient made once, on the first call (so that
    declaring it does not import JAX)."""
    return _gradient()(x)


WORKLOADS = (
    Workload(
        "grad_logistic",
        "vector length",
        make_inputs,
        check,
        tolerance=1e-5,
        work=work,
        baseline="grad",
        known_values=KnownValues((KNOWN_INPUT,), KNOWN_OUTPUT, KNOWN_ATOL),
        impls=(
            Impl("grad", "eager", grad_total_logistic),
            Impl("grad_jit", "jit", grad_total_logistic),
        ),
    ),
)
