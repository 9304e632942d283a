"""Row updates `x.at[i, :].set(y[i])` of an n x n float32 array in a `jax.lax.fori_loop`
("🔪 JAX - The Sharp Bits 🔪", "In-place updates"): where the update's input `x` is not
reused, XLA updates the loop's array in place, one row a turn; where every turn keeps its
input (a loop that keeps its previous iterate, as a convergence check does), each turn must
copy the whole array first. Both return the final array and the one before the last update;
the in-place loop copies its array once, for that last update, not every turn. The size is
n: rows, columns, and turns of the loop. Under `jit` at the top level an update's input is
the caller's array, which XLA may overwrite only with `donate_argnums`; inside the loop it
needs none, and the harness donates nothing."""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")
lax = deferred("jax.lax")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The array updated and the rows written into it, both normal float32."""
    return (
        rng.standard_normal((size, size), dtype=np.float32),
        rng.standard_normal((size, size), dtype=np.float32),
    )


def check(inputs: tuple[np.ndarray, np.ndarray], out: object) -> float:
    """Every row replaced by y's; before the last update, the last row still x's."""
    x, y = (a.astype(np.float64) for a in inputs)
    before = y.copy()
    before[-1] = x[-1]
    return max_rel_err(out, np.stack((y, before)))


def work(size: int) -> float:
    return float(size * size)  # elements written


def validate(size: int) -> None:
    if size < 2:
        raise ValueError(f"set_rows size must be >= 2 rows, got {size}")


def in_place(x: Any, y: Any) -> Any:
    """x not reused: every turn but the last updates the loop's array in place."""
    n = x.shape[0]
    x = lax.fori_loop(0, n - 1, lambda i, x: x.at[i, :].set(y[i]), x)
    return jnp.stack((x.at[n - 1, :].set(y[n - 1]), x))  # x reused once: one copy


def kept(x: Any, y: Any) -> Any:
    """x reused every turn, kept as the previous iterate: every turn copies the array."""

    def body(i: Any, carry: tuple[Any, Any]) -> tuple[Any, Any]:
        x, _ = carry
        return x.at[i, :].set(y[i]), x

    x, prev = lax.fori_loop(0, x.shape[0], body, (x, x))
    return jnp.stack((x, prev))


WORKLOADS = (
    Workload(
        "set_rows",
        "rows of the square array (and turns)",
        make_inputs,
        check,
        tolerance=1e-6,  # exact: copies only; the record's schema asks a positive bound
        work=work,
        baseline="in_place",
        validate_size=validate,
        impls=(
            Impl("in_place", "jit", in_place),
            Impl("kept", "jit", kept),
        ),
    ),
)
