"""Source D's column recurrence on a (size, size/2) weight matrix, three ways.

Column 0 of the state is 1; each new column j+1 is, for interior rows i,
a[i-1, j] w[i-1, j] + a[i, j] w[i, j] + a[i+1, j] w[i+1, j]; edge rows stay 0.
"""

from __future__ import annotations

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")
lax = deferred("jax.lax")


def shape(size: int) -> tuple[int, int]:
    return size, size // 2


def validate_size(size: int) -> None:
    if size < 4 or size % 2:
        raise ValueError(f"stencil size must be even and >= 4, got {size}")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal(shape(size), dtype=np.float32),)


def reference(w: np.ndarray) -> np.ndarray:
    """Float64 recurrence, vectorised over rows: the ground truth all three must match."""
    w64 = w.astype(np.float64)
    height, width = w64.shape
    a = np.zeros((height, width + 1))
    a[:, 0] = 1.0
    for j in range(width):
        prod = a[:, j] * w64[:, j]
        a[1:-1, j + 1] = prod[:-2] + prod[1:-1] + prod[2:]
    return a


def check(inputs: tuple[np.ndarray], out: object) -> float:
    return max_rel_err(out, reference(inputs[0]))


def work(size: int) -> float:
    """Scalar updates of the literal loop (the first column, then the recurrence): what the
    unrolled jit program grows with."""
    height, width = shape(size)
    return float(height + (height - 2) * width)


def _initial_state(w: Any) -> Any:
    height, width = w.shape
    return jnp.zeros((height, width + 1), w.dtype).at[:, 0].set(1.0)


def loop(w: Any) -> Any:
    """The question's literal code: a scalar loop that sets column 0, then the double loop
    of scalar updates."""
    height, width = w.shape
    a = jnp.zeros((height, width + 1), w.dtype)
    for i in range(height):
        a = a.at[i, 0].set(1.0)
    for j in range(width):
        for i in range(1, height - 1):
            value = a[i - 1, j] * w[i - 1, j] + a[i, j] * w[i, j] + a[i + 1, j] * w[i + 1, j]
            a = a.at[i, j + 1].set(value)
    return a


def convolve(w: Any) -> Any:
    """One Python loop over columns; each column at once as a length-3 convolution."""
    a = _initial_state(w)
    ones = jnp.ones(3, w.dtype)
    for j in range(w.shape[1]):
        a = a.at[1:-1, j + 1].set(jnp.convolve(a[:, j] * w[:, j], ones, mode="valid"))
    return a


def scan(w: Any) -> Any:
    """The column recurrence as `lax.scan`: no Python loop at all."""

    def step(column: Any, weights: Any) -> tuple[Any, Any]:
        prod = column * weights
        new = jnp.zeros_like(column).at[1:-1].set(prod[:-2] + prod[1:-1] + prod[2:])
        return new, new

    first = jnp.ones(w.shape[0], w.dtype)
    _, columns = lax.scan(step, first, w.T)
    return jnp.concatenate([first[:, None], columns.T], axis=1)


WORKLOADS = (
    Workload(
        "stencil",
        "rows (columns = size / 2)",
        make_inputs,
        check,
        tolerance=1e-4,
        work=work,
        baseline="loop",
        validate_size=validate_size,
        unprobed="the check's tolerance refuses a TF32 convolution, so none is timed: TF32"
        " emulated (each product rounded to 10 mantissa bits) reads 4.7e-4 to 4.0e-3 at 8 to"
        " 256 rows, float32 under 1.4e-6",
        impls=(
            Impl("loop", "eager", loop),
            Impl("convolve", "eager", convolve),
            Impl("scan", "eager", scan),
            Impl("loop_jit", "jit", loop),
            Impl("convolve_jit", "jit", convolve),
            Impl("scan_jit", "jit", scan),
        ),
    ),
)
