"""`dot(x, x.T)` on a square float16 matrix (jax#7431, fixed by PR #7462): XLA's CPU float16
product was an Eigen kernel hundreds of times slower than float32's. Its float32 twin is
the `matmul` workload's `jax` cell.

Which kernel runs now depends on the CPU. PR #7462 made JAX's CPU lowering compute a
float16 dot in float32; jax 0.4.31 removed that (commit b37f514), and XLA:CPU now upcasts a
float16 dot to float32 only on a CPU without float16 computation, keeping it in float16 on
one with it. So each record's check says the CPU's float16 support (`host_cpu_float16`),
read from its /proc/cpuinfo flags."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import Impl, Workload, deferred

np = deferred("numpy")
jnp = deferred("jax.numpy")

# /proc/cpuinfo flags: float16 arithmetic (x86 AVX512-FP16 and AMX-FP16, Arm's half-precision
# floating point and SIMD), and conversion alone (x86 F16C and AVX-NE-CONVERT convert float16
# to and from float32, and compute nothing in it)
ARITHMETIC = ("avx512fp16", "amx_fp16", "fphp", "asimdhp")
CONVERSION = ("f16c", "avx_ne_convert")
CPUINFO = Path("/proc/cpuinfo")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """The issue's `random.normal(key, (size, size), dtype=jnp.float16)`."""
    return (rng.standard_normal((size, size), dtype=np.float32).astype(np.float16),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    x = inputs[0].astype(np.float64)
    return max_rel_err(out, x @ x.T)


@cache
def cpu_float16(cpuinfo: Path = CPUINFO) -> str:
    """The host CPU's float16 support, from the first flags line of /proc/cpuinfo (read
    once a process): `arithmetic (...)`, `conversion only (...)`, `none`, or `unknown`."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return f"unknown (no {cpuinfo})"
    listed = (line for line in lines if line.startswith(("flags", "Features")))
    flags = next((set(line.partition(":")[2].split()) for line in listed), None)
    if flags is None:
        return f"unknown (no flags in {cpuinfo})"
    arithmetic = [f for f in ARITHMETIC if f in flags]
    conversion = [f for f in CONVERSION if f in flags]
    if arithmetic:
        return f"arithmetic ({', '.join(arithmetic + conversion)})"
    if conversion:
        return f"conversion only ({', '.join(conversion)})"
    return "none"


def float16_support(inputs: tuple[np.ndarray], out: object) -> dict[str, str]:
    """Joins the record's check: the host CPU's float16 support, which decides whether
    XLA:CPU computed the product in float16 or upcast it to float32 (on a GPU cell, the
    host's, not the GPU's)."""
    return {"host_cpu_float16": cpu_float16()}


def work(size: int) -> float:
    return 2.0 * size**3


def jax_dot(x: Any) -> Any:
    return jnp.dot(x, x.T)


WORKLOADS = (
    Workload(
        "matmul_f16",
        "side of the square matrix",
        make_inputs,
        check,
        # float16 keeps ~3 digits: its rounding of a sum of n products, not a wrong kernel
        tolerance=1e-2,
        work=work,
        baseline="jax",
        dtype="float16",
        # not a float32 product's precision (the hook's usual use): the CPU's float16 support
        precision=float16_support,
        impls=(
            Impl("jax", "eager", jax_dot),
            Impl("jax_jit", "jit", jax_dot),
        ),
    ),
)
