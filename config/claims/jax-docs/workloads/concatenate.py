"""`concatenate((x, y))` of two short vectors given as NumPy arrays (jax#4865): one
operation, so its time is the call's dispatch. The size is x's length; y has one more.
The issue read its clock around each unblocked call, alternating NumPy and JAX in one loop;
a cell blocks every JAX call and times each library in loops of its own (J7's note)."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The issue's `np.ones(5), np.ones(6)`, in float32 for both libraries (its float64 would
    be JAX's float32 after a conversion on every call) and normal, so the check can tell a
    wrong order from a right one."""
    x = rng.standard_normal(size, dtype=np.float32)
    return x, rng.standard_normal(size + 1, dtype=np.float32)


def check(inputs: tuple[np.ndarray, np.ndarray], out: object) -> float:
    x, y = (a.astype(np.float64) for a in inputs)
    return max_rel_err(out, np.concatenate((x, y)))


def work(size: int) -> float:
    return float(2 * size + 1)


def numpy_concatenate(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.concatenate((x, y))


def jax_concatenate(x: Any, y: Any) -> Any:
    return jnp.concatenate((x, y))


WORKLOADS = (
    Workload(
        "concatenate",
        "length of the first vector",
        make_inputs,
        check,
        tolerance=1e-6,  # exact: the record's schema asks a positive bound
        work=work,
        baseline="numpy",
        impls=(
            Impl("numpy", "numpy", numpy_concatenate, CPU_ONLY),
            # the issue's: NumPy arrays in, copied to the device on every call
            Impl("jax_numpy_input", "eager", jax_concatenate, host_inputs=True),
            Impl("jax", "eager", jax_concatenate),
        ),
    ),
)
