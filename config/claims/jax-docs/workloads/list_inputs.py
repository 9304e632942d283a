"""`permissive_sum(x) = jnp.sum(jnp.array(x))` ("🔪 JAX - The Sharp Bits 🔪", "Non-array
inputs: NumPy vs. JAX") jitted, given a list of numbers and given one array. A list's every
entry is an input of its own to the jitted function, traced, lowered, compiled and copied
one by one; an array is one input whatever its length. The size is the list's length."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")


def make_list(size: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """The page's `x = list(range(10))`, as `size` float32 scalars (one input each): uniform
    in [0, 1), so the sum is well away from zero and its float32 rounding far inside the
    tolerance."""
    return tuple(np.asarray(v, dtype=np.float32) for v in rng.random(size, dtype=np.float32))


def make_array(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """The same numbers as one float32 vector: `jnp.array(x)` done before the call."""
    return (rng.random(size, dtype=np.float32),)


def check_list(inputs: tuple[np.ndarray, ...], out: object) -> float:
    return max_rel_err(out, np.asarray(np.sum(np.asarray(inputs, dtype=np.float64))))


def check_array(inputs: tuple[np.ndarray], out: object) -> float:
    return max_rel_err(out, np.asarray(np.sum(inputs[0].astype(np.float64))))


def work(size: int) -> float:
    return float(size)


def permissive_sum(x: Any) -> Any:
    """The page's code: `jnp.array` of a list stacks its entries, of an array copies it."""
    return jnp.sum(jnp.array(x))


def list_sum(*x: Any) -> Any:
    """`permissive_sum(x)` with x the list: each entry a separate argument of the jit."""
    return permissive_sum(list(x))


WORKLOADS = (
    Workload(
        "list_sum",
        "entries of the list",
        make_list,
        check_list,
        tolerance=1e-5,
        work=work,
        baseline="jax_jit",
        impls=(Impl("jax_jit", "jit", list_sum),),
    ),
    Workload(
        "array_sum",
        "vector length",
        make_array,
        check_array,
        tolerance=1e-5,
        work=work,
        baseline="jax_jit",
        impls=(Impl("jax_jit", "jit", permissive_sum),),
    ),
)
