"""Where JAX's API differs between the releases blockbench measures (0.4.13 to 0.10.2).

The measurement code calls these instead of the newest spelling, so that one harness runs
unchanged on every release of `jax_versions`; each shim says which releases need it.
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


def option(name: str) -> Any:
    """A `jax.config` option's value, None where the release has no such option (the
    persistent-cache options came and were renamed over 0.4.x)."""
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
