"""Adding 1.0 to a 10-element float32 vector n times under `jax.jit` ("Debugging slow JAX
tracing and XLA compilation", "Gotcha: Python Control Flow (Loop Unrolling in JIT)"): a
Python `for` loop, which tracing unrolls into n `add` equations that XLA must compile one
by one, against `jax.lax.scan`, the page's fix, one loop body whatever n. The size is n (the
page's 5000)."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred

np = deferred("numpy")
lax = deferred("jax.lax")

LENGTH = 10  # the page's jnp.zeros(10)


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The page's `x`, normal rather than `jnp.zeros(10)` so the check sees each element;
    and an empty (n, 0) array whose shape carries n: a jitted function's loop count must be
    static, and the harness passes arrays alone."""
    return rng.standard_normal(LENGTH, dtype=np.float32), np.zeros((size, 0), np.float32)


def check(inputs: tuple[np.ndarray, np.ndarray], out: object) -> float:
    x, turns = inputs
    return max_rel_err(out, x.astype(np.float64) + turns.shape[0])


def work(size: int) -> float:
    return float(size)


def unrolled_loop(x: Any, turns: Any) -> Any:
    """The page's `unrolled_loop`, its 5000 the size."""
    for _ in range(turns.shape[0]):
        x = x + 1.0
    return x


def scan_loop(x: Any, turns: Any) -> Any:
    """The page's fix, `jax.lax.scan`: one `add` in a loop body, run n times."""
    x, _ = lax.scan(lambda c, _: (c + 1.0, None), x, None, length=turns.shape[0])
    return x


WORKLOADS = (
    Workload(
        "unrolled_add",
        "turns of the loop",
        make_inputs,
        check,
        # n adds of 1.0 round only where the sum crosses a power of two: a few ulps
        tolerance=1e-5,
        work=work,
        baseline="scan",
        impls=(
            Impl("unrolled", "jit", unrolled_loop),
            Impl("scan", "jit", scan_loop),
        ),
    ),
)
