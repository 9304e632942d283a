"""SELU of `jnp.arange(1000000)` (the JAX documentation's "JIT compilation" page): the
page's own input, int32 counting up, where Source C's SELU takes normal float32 numbers."""

from __future__ import annotations

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred
from blockbench.workloads.selu import ALPHA, LMBDA, jax_selu

np = deferred("numpy")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (np.arange(size, dtype=np.int32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    x = inputs[0].astype(np.float64)
    with np.errstate(over="ignore"):  # exp of the large counts: inf, never selected
        return max_rel_err(out, LMBDA * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA))


def work(size: int) -> float:
    return float(size)


WORKLOADS = (
    Workload(
        "selu_arange",
        "vector length",
        make_inputs,
        check,
        tolerance=1e-6,
        work=work,
        baseline="jax",
        impls=(
            Impl("jax", "eager", jax_selu),
            Impl("jax_jit", "jit", jax_selu),
        ),
    ),
)
