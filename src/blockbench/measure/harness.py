"""Timing each phase of a call on its own, blocking-correct.

Each builder returns a `run(loops) -> seconds` for `sampling.collect`: the run decides exactly
what sits inside the timed region. Blocking is decided in two audited places: `block` for
untimed waits and costly phases, and `output_of`, resolved once per cell, for the timed
loops of microsecond calls. The steady phase proves after every sample that the timer did
not stop before the result was ready, so a harness that stopped blocking fails loudly
instead of reporting dispatch times.
"""

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from blockbench.measure import jax_compat
from blockbench.measure.sampling import PhaseRun, Window
from blockbench.workloads.declare import deferred
from blockbench.workloads.registry import Impl

jax = deferred("jax")  # loaded by a JAX cell's first phase; a NumPy cell never loads it


class BlockingError(RuntimeError):
    """The timer stopped while a result was still being computed."""


def block(tree: Any) -> Any:
    """Wait until every array in a pytree is computed (tuples and nested outputs included)."""
    return jax.block_until_ready(tree)


@dataclass(frozen=True)
class Output:
    """How the timed loops wait for, and read back, one cell's result."""

    wait: Callable[[Any], Any]
    to_host: Callable[[Any], Any]


def output_of(call: Callable[..., Any], args: tuple[Any, ...], example: Any = None) -> Output:
    """Resolved once per cell from the output's abstract shape (nothing is computed), or
    from `example`, an output of the call already computed (the check's): tracing an eager
    64x32 loop's 2,000 scalar updates only to learn that it returns one array took 3-8 s.

    One array waits through the array type's own C++ method, which costs nothing over a
    bare `f(x).block_until_ready()`; `jax.block_until_ready` walks the tree for ~1 us more
    per call, so only a tuple or pytree output goes through it. A function whose Python
    control flow reads its inputs' values (the JIT page's `while i < n`) cannot be traced
    abstractly: one real call, untimed, stands in for the shape.
    """
    if example is None:
        try:
            example = jax.eval_shape(call, *args)
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError):
            example = call(*args)
    shape = example
    if isinstance(shape, jax.ShapeDtypeStruct | jax.Array):
        with jax.transfer_guard("allow"):  # untimed: only to learn the concrete array type
            array_type = type(jax.numpy.zeros(()))
        return Output(array_type.block_until_ready, np.asarray)
    return Output(block, lambda tree: jax_compat.tree_map(np.asarray, tree))


def all_ready(tree: Any) -> bool:
    return all(
        leaf.is_ready() for leaf in jax_compat.tree_leaves(tree) if isinstance(leaf, jax.Array)
    )


def warm_up(dev: Any) -> float:
    """Start the backend and the compiler before anything is timed; the seconds it took.

    The first operation of a process initialises the backend, and the first compile starts
    the compiler; neither belongs to any phase of the function being measured. Its time is
    the device's first use by a trivial operation, which an accelerator's cold first call
    keeps beside its own parts (`cold_first_call`).
    """
    t0 = time.perf_counter()
    block(jax.device_put(np.zeros(8, np.float32), dev))
    with jax.default_device(dev):
        block(jax.jit(lambda v: v * 2.0 + 1.0)(jax.numpy.ones(8)))
    return time.perf_counter() - t0


def no_implicit_transfers(impl: Impl) -> Any:
    """A jitted call on device-resident inputs must not copy anything from the host; prove it.

    Only host-to-device is refused: reading a result back (`np.asarray` in the asarray
    phase, `jax.device_get`) is what those phases measure. Eager implementations are exempt:
    they legitimately send Python scalar constants.
    """
    if impl.style == "jit" and not impl.host_inputs:
        return jax.transfer_guard_host_to_device("disallow")
    return nullcontext()


def jitted(impl: Impl) -> Callable[..., Any]:
    return jax.jit(impl.fn) if impl.style == "jit" else impl.fn


# ---- NumPy -----------------------------------------------------------------------------


def numpy_steady(fn: Callable[..., Any], args: tuple[Any, ...]) -> PhaseRun:
    def run(loops: int, window: Window) -> None:
        window.start()
        for _ in range(loops):
            fn(*args)
        window.stop()

    return run


# ---- JAX -------------------------------------------------------------------------------


def host_to_device(host_args: tuple[np.ndarray, ...], dev: Any) -> PhaseRun:
    def run(loops: int, window: Window) -> None:
        window.start()
        copies = [jax.device_put(host_args, dev) for _ in range(loops)]
        block(copies)
        window.stop()

    return run


def trace_lower(fn: Callable[..., Any], args: tuple[Any, ...]) -> PhaseRun:
    def run(loops: int, window: Window) -> None:
        for _ in range(loops):
            jax.clear_caches()  # so the trace, compile or first call is paid again
            window.start()
            jax_compat.lower(fn, args)
            window.stop()

    return run


def compile_only(fn: Callable[..., Any], args: tuple[Any, ...]) -> PhaseRun:
    def run(loops: int, window: Window) -> None:
        for _ in range(loops):
            jax.clear_caches()  # so the trace, compile or first call is paid again
            lowered = jax_compat.lower(fn, args)
            window.start()
            lowered.compile()
            window.stop()

    return run


def first_call(impl: Impl, args: tuple[Any, ...]) -> PhaseRun:
    """Trace + compile + run as a user meets it: caches emptied, a new jit, one blocked call."""

    def run(loops: int, window: Window) -> None:
        for _ in range(loops):
            jax.clear_caches()  # so the trace, compile or first call is paid again
            call = jitted(impl)
            window.start()
            block(call(*args))
            window.stop()

    return run


def cold_first_call(
    fn: Callable[..., Any], args: tuple[Any, ...], parts: dict[str, float]
) -> PhaseRun:
    """An accelerator's cold first call of a jitted `fn`, taken apart: its trace, lower and
    compile (XLA's GPU autotuning runs here), then the compiled program's first run (the
    GPU libraries' kernels load here), each blocked and timed on its own into `parts`
    ("compile", "first_run"). The phase is `once`: one call, whose parts are kept.

    The sample is their sum, the work `jit(fn)(*args)` does on its first call, and not the
    device's first use (`warm_up`, kept beside them by the cell): that is the process's,
    paid once whatever it computes, before the program is first called. The articles' first
    calls took inputs already on the device (Source C times the copy apart), so their device
    had been used before; a claim on the first call (C3) rests on the product's own cost.
    The phase has always come after the warm-up, so its sample reads as it did."""

    def run(loops: int, window: Window) -> None:
        for _ in range(loops):
            jax.clear_caches()  # so the trace, compile or first call is paid again
            before = window.elapsed
            window.start()
            compiled = jax_compat.lower(fn, args).compile()
            window.stop()
            compiled_at = window.elapsed
            window.start()
            block(compiled(*args))
            window.stop()
            parts["compile"] = compiled_at - before
            parts["first_run"] = window.elapsed - compiled_at

    return run


# JAX's own timers around a program's trace, lowering and XLA compile (jax._src.dispatch);
# at the top level they do not nest, so their sum is what a call spent compiling.
COMPILE_EVENTS = frozenset(
    {
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    }
)


class CompileTimes:
    """The seconds JAX's own timers give compiling while `heard` is a list: one listener
    registered once a process, never removed (JAX releases before 0.4.31 cannot remove one)."""

    heard: list[float] | None = None
    registered = False

    @classmethod
    def listen(cls) -> None:
        if not cls.registered:
            jax.monitoring.register_event_duration_secs_listener(cls.note)
            cls.registered = True

    @classmethod
    def note(cls, event: str, seconds: float, **_: Any) -> None:
        if cls.heard is not None and event in COMPILE_EVENTS:
            cls.heard.append(seconds)


def cold_eager_first_call(
    fn: Callable[..., Any], args: tuple[Any, ...], parts: dict[str, float]
) -> PhaseRun:
    """An accelerator's cold first call of an eager `fn`, timed whole, and taken apart as far
    as it can be: an eager call compiles each operation as it reaches it, so there is no one
    program to compile before the run. JAX's own timers around each operation's trace,
    lowering and compile, summed, are its "compile"; the rest of the call (the dispatches,
    the runs, the wait) its "first_run". The sample leaves the device's first use out, as
    `cold_first_call`'s does, for the same reason."""

    def run(loops: int, window: Window) -> None:
        CompileTimes.listen()
        for _ in range(loops):
            jax.clear_caches()  # so the trace, compile or first call is paid again
            CompileTimes.heard = heard = []
            before = window.elapsed
            try:
                window.start()
                block(fn(*args))
                window.stop()
            finally:
                CompileTimes.heard = None
            parts["compile"] = sum(heard)
            parts["first_run"] = max(window.elapsed - before - parts["compile"], 0.0)

    return run


def dispatch(call: Callable[..., Any], args: tuple[Any, ...], wait: Callable) -> PhaseRun:
    """Only the call's return is timed; the wait before the next call is not, and the result
    is dropped there too (see `steady`)."""

    def run(loops: int, window: Window) -> None:
        for _ in range(loops):
            window.start()
            out = call(*args)
            window.stop()
            wait(out)
            del out

    return run


def steady(call: Callable[..., Any], args: tuple[Any, ...], wait: Callable) -> PhaseRun:
    """Blocked every call: the time a user waits for a ready result, call after call.

    Each result is dropped before the next call, as `%timeit f(x).block_until_ready()` (the
    articles' code) drops it. A loop that keeps the last result while the next call runs
    holds two outputs at once, and glibc's malloc may then hand each new one back to the
    kernel and fault it in again: the jit SELU at 10^6 took 634 page faults and 0.84 ms a
    call that way in one process of three, against none and 0.21 ms dropping it
    (benchmarks/pool_modes.py --keep shows it).
    """

    def run(loops: int, window: Window) -> None:
        out = None
        window.start()
        for _ in range(loops):
            out = None
            out = wait(call(*args))
        window.stop()
        if not all_ready(out):
            raise BlockingError("steady timer stopped before the result was ready")

    return run


def asarray(call: Callable[..., Any], args: tuple[Any, ...], to_host: Callable) -> PhaseRun:
    """`np.asarray(f(x))` per call, as Source A timed its readback: the call, its compute and
    the copy to a host NumPy array, in one timed region (no block: the copy waits itself)."""

    def run(loops: int, window: Window) -> None:
        window.start()
        for _ in range(loops):
            to_host(call(*args))
        window.stop()

    return run


def device_to_host(call: Callable[..., Any], args: tuple[Any, ...]) -> PhaseRun:
    """Reading back results that are already computed; each one fresh, since a jax.Array
    caches its host copy after the first read."""

    def run(loops: int, window: Window) -> None:
        outs = block([call(*args) for _ in range(loops)])
        window.start()
        for out in outs:
            jax.device_get(out)
        window.stop()

    return run
