"""Where JAX's API differs between the releases blockbench measures (0.4.13 to 0.12).

The measurement code calls these instead of the newest spelling, so that one harness runs
unchanged on every release of `jax_versions` and on a GPU machine's own JAX (0.11.2 on the
lent GPU image); each shim says which releases need it. What was checked in JAX's changelog
and source from 0.10.2 on is in docs/gpu.md ("Which JAX").
"""

from collections.abc import Callable
from typing import Any

from blockbench.workloads.declare import deferred

jax = deferred("jax")  # loaded where a shim is first used: a JAX cell's worker


def versions() -> dict[str, str]:
    """The releases this process imported (not the ones asked for)."""
    import jaxlib
    import numpy

    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": numpy.__version__}


def lower(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Trace and lower a jitted `fn`: `jit(fn).trace(*args).lower()` where the release has
    the `Traced` stage (0.4.30 on), else `jit(fn).lower(*args)`, which does both at once."""
    jitted = jax.jit(fn)
    if hasattr(jitted, "trace"):
        return jitted.trace(*args).lower()
    return jitted.lower(*args)


# jaxlib names CUDA and ROCm devices "gpu" through a shim its source marks for removal; a
# release without it would say "cuda" (or "rocm"): both are the `gpu` device kind here.
GPU_PLATFORMS = ("gpu", "cuda", "rocm")


def platform(dev: Any) -> str:
    """A device's platform as blockbench names devices: cpu, gpu or tpu."""
    return "gpu" if dev.platform in GPU_PLATFORMS else str(dev.platform)


def option(name: str) -> Any:
    """A `jax.config` option's value, None where the release has no such option (the
    persistent-cache options came and were renamed over 0.4.x). Read from the registry of
    values (`jax.config.values`) where the release has one, so that no change in how options
    are reached as attributes reads as an unset option; else as an attribute."""
    values = getattr(jax.config, "values", None)
    if isinstance(values, dict) and name in values:
        return values[name]
    return getattr(jax.config, name, None)


def disable_compilation_cache() -> None:
    """Keep the persistent compilation cache off: a hit would make compile times bimodal.
    Releases without `jax_enable_compilation_cache` cache only when a cache directory is
    set, which blockbench never does (the option is then recorded as None)."""
    if option("jax_enable_compilation_cache") is not None:
        jax.config.update("jax_enable_compilation_cache", False)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """`jax.tree.map` arrived in 0.4.25; `jax.tree_util` has it in every release."""
    return jax.tree_util.tree_map(fn, tree)


def tree_leaves(tree: Any) -> list[Any]:
    """`jax.tree.leaves`, spelled for every release (as tree_map)."""
    return jax.tree_util.tree_leaves(tree)
