"""SELU on a float32 vector (Source C), with the article's constants."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")

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


def jax_selu(x: Any) -> Any:
    return LMBDA * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA)


WORKLOADS = (
    Workload(
        "selu",
        "vector length",
        make_inputs,
        check,
        tolerance=1e-5,
        work=work,
        baseline="numpy",
        impls=(
            Impl("numpy", "numpy", numpy_selu, CPU_ONLY),
            Impl("jax", "eager", jax_selu),
            Impl("jax_jit", "jit", jax_selu),
        ),
    ),
)
