"""`jax.jit` called inside a Python loop (the JAX documentation's "JIT compilation" page,
"JIT and caching"): of a `functools.partial` or a `lambda` made anew each iteration, which
JAX's cache cannot find, against the same function each time, which it can. The size is
the loop's number of iterations (the page's `n = 20`)."""

from __future__ import annotations

from functools import partial
from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred

np = deferred("numpy")
jax = deferred("jax")

X = 10  # the page's `g_inner_jitted_*(10, 20)`


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The page's `x = 10` and its `n`, the loop's turns (the size). They stay on the host
    (`host_inputs`) and each call makes them Python ints, as the page passes them: no
    device scalars, so `while i < n` and `x + i` meet the page's ints."""
    return np.asarray(X, dtype=np.int32), np.asarray(size, dtype=np.int32)


def check(inputs: tuple[np.ndarray, np.ndarray], out: object) -> float:
    """The loop adds one a turn: x + n."""
    x, n = inputs
    return max_rel_err(out, np.asarray(int(x) + int(n), dtype=np.float64))


def work(size: int) -> float:
    return float(size)


def unjitted_loop_body(prev_i: Any) -> Any:
    return prev_i + 1


# Each function takes the cell's host scalars and runs the page's loop on `int(x)` and
# `int(n)`: two conversions of NumPy scalars, ~0.1 us, against a turn's compile or lookup.


def inner_jitted_partial(x: Any, n: Any) -> Any:
    x, n = int(x), int(n)
    i = 0
    while i < n:
        i = jax.jit(partial(unjitted_loop_body))(i)  # a new partial: a new cache key
    return x + i


def inner_jitted_lambda(x: Any, n: Any) -> Any:
    x, n = int(x), int(n)
    i = 0
    while i < n:
        i = jax.jit(lambda x: unjitted_loop_body(x))(i)  # a new lambda: a new cache key
    return x + i


def inner_jitted_normal(x: Any, n: Any) -> Any:
    x, n = int(x), int(n)
    i = 0
    while i < n:
        i = jax.jit(unjitted_loop_body)(i)  # the same function: found in the cache
    return x + i


WORKLOADS = (
    Workload(
        "jit_in_loop",
        "turns of the loop",
        make_inputs,
        check,
        tolerance=1e-6,  # exact: the record's schema asks a positive bound
        work=work,
        baseline="cached",
        dtype="int32",  # the page's ints: x + i is an int32 array, 30 at n = 20
        impls=(
            # host_inputs: the scalars go in as the page's Python ints, never to the device
            Impl("partial", "eager", inner_jitted_partial, host_inputs=True),
            Impl("lambda", "eager", inner_jitted_lambda, host_inputs=True),
            Impl("cached", "eager", inner_jitted_normal, host_inputs=True),
        ),
    ),
)
