"""What a number was measured on: host, software, thread and precision settings, GPU, SLURM.

Collected apart from timing (pyperf's metadata module) so that every JSON carries it, even
a cell that never reached a device. Every probe is best-effort: a missing tool is recorded as
such, never a crash, because a result without its environment would be worse than one
without, say, the GPU clock. What NVIDIA's driver tells of a GPU is read in
blockbench.measure.nvidia.
"""

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from blockbench.measure import cores, host_power
from blockbench.measure.nvidia import (
    FakedGpu,
    cuda_ordinal,
    cuda_pci_bus_id,
    fake_gpu,
    loaded_nvidia_libraries,
    nvml_gpu,
)
from blockbench.measure.safe_read import safe
from blockbench.measure.slurm_job import granted_cpus, slurm

# Environment variables that change how fast JAX or NumPy run, or where they run (among
# them NVIDIA_TF32_OVERRIDE, which turns TF32 off in cuBLAS whatever JAX asks).
ENV_PATTERN = re.compile(
    r"^(XLA_.*|JAX_.*|TF_.*|OMP_.*|MKL_.*|OPENBLAS_.*|BLIS_.*|VECLIB_.*|NUMEXPR_.*"
    r"|CUDA_.*|NVIDIA_.*|CUBLAS_.*|CUDNN_.*|ROCR_VISIBLE_DEVICES"
    r"|TPU_.*|GOMP_.*|KMP_.*)$"
)
PACKAGES = ("jax", "jaxlib", "numpy", "scipy", "blockbench", "jsonschema")
PROJECT_ROOT = Path(__file__).resolve().parents[3]


# Tests only: the CPU model this host claims to be, so that the suite runs as an Intel, an
# AMD and an unknown machine alike; every record says it was faked (`host.cpu_model_faked`).
FAKE_CPU_MODEL = "BLOCKBENCH_FAKE_CPU_MODEL"


def cpu_model() -> str:
    """CPU brand string: /proc/cpuinfo where it exists (instant), py-cpuinfo elsewhere (~1 s)."""
    return os.environ.get(FAKE_CPU_MODEL) or read_cpu_model()


def read_cpu_model() -> str:
    cpuinfo_path = Path("/proc/cpuinfo")
    if cpuinfo_path.exists():
        for line in cpuinfo_path.read_text().splitlines():
            if line.startswith(("model name", "Model", "cpu model")):
                return line.split(":", 1)[1].strip()
    import cpuinfo

    return str(cpuinfo.get_cpu_info().get("brand_raw", "unknown"))


def host_id() -> str | None:
    """A stable name of this host, which a between-run study is of (blockbench.judge.studies):
    the node's name under SLURM, else a hash of systemd's machine-id (never the id itself, as
    machine-id(5) asks); None where neither exists. A hostname is not one: containers and
    cloud VMs reuse theirs."""
    node = os.environ.get("SLURMD_NODENAME")
    if node:
        return f"slurm node {node}"
    try:
        ident = Path("/etc/machine-id").read_text().strip()
    except OSError:
        return None
    if not ident:
        return None
    return f"machine {hashlib.sha256(b'blockbench:' + ident.encode()).hexdigest()[:12]}"


def cpu_signature() -> str | None:
    """CPU family, model and stepping, where /proc/cpuinfo gives them: one model name covers
    several CPUs ('AMD EPYC' on a cloud VM names Zen 4 and Zen 5 alike)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    if "cpu family" not in fields:
        return None
    family, model, stepping = (fields.get(k) for k in ("cpu family", "model", "stepping"))
    return f"family {family} model {model} stepping {stepping}"


def host() -> dict[str, Any]:
    freq = psutil.cpu_freq()
    return {
        "hostname": socket.gethostname(),
        "host_id": safe(host_id),
        "cpu_signature": safe(cpu_signature),
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": safe(cpu_model),
        **({"cpu_model_faked": True} if os.environ.get(FAKE_CPU_MODEL) else {}),
        "cpu_count_logical": psutil.cpu_count(logical=True),
        "cpu_count_physical": psutil.cpu_count(logical=False),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_freq_mhz": {"current": freq.current, "max": freq.max} if freq else None,
        # on a laptop one core at `powersave` slows the cell that lands on it
        "cpu_governor": host_power.summary(per_core := host_power.governors(cores.allowed())),
        "cpu_governors": per_core,
        "memory_total_bytes": psutil.virtual_memory().total,
        "memory_available_bytes": psutil.virtual_memory().available,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def software() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    versions.update(cuda_plugins())
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "packages": versions,
    }


def cuda_plugins() -> dict[str, str]:
    """JAX's CUDA plugin and its PJRT runtime, whatever their CUDA major, found by their
    dist-info directories (as pip installs them; an egg-info install is not looked for):
    parsing every installed distribution's metadata to find them took 0.2 s of every
    measurement process."""
    found: dict[str, str] = {}
    for entry in sys.path:
        for info in Path(entry or ".").glob("jax_cuda*.dist-info"):
            name = info.name.split("-", 1)[0].replace("_", "-").lower()
            try:
                found.setdefault(name, importlib.metadata.version(name))
            except importlib.metadata.PackageNotFoundError:
                continue
    return found


def environment() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if ENV_PATTERN.match(k)}


def git_commit(root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The project's commit and whether the tree had local changes when it ran. Where the
    package was read from a git host by the workflow (its SOURCE file, workflow/Snakefile),
    the ref and address it came from: its files are that ref's, and a repository around them
    is someone else's. Where the tree is a copy without git (a lent GPU machine gets the
    working tree, not .git), the commit named by $BLOCKBENCH_GIT_COMMIT, its local changes
    unknown (`dirty`: None)."""
    source = root / "SOURCE"
    if source.is_file():
        fetched = json.loads(source.read_text())
        return {"commit": fetched["ref"], "dirty": False, "from": fetched["uri"]}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() == root.resolve():
            return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}
    except (OSError, subprocess.SubprocessError):
        pass
    given = os.environ.get("BLOCKBENCH_GIT_COMMIT")
    return {
        "commit": given or None,
        "dirty": None,
        "from": "BLOCKBENCH_GIT_COMMIT" if given else None,
    }


def blas() -> dict[str, Any]:
    """The BLAS NumPy was built with and the thread pools actually loaded in this process."""
    import numpy as np
    from threadpoolctl import threadpool_info

    build = safe(lambda: np.show_config(mode="dicts")["Build Dependencies"].get("blas"))
    return {"numpy_build": build, "threadpools": safe(threadpool_info)}


def blas_kernel(facts: dict[str, Any]) -> tuple[str, str] | None:
    """(library, kernel) NumPy's BLAS ran, as threadpoolctl names them ('openblas',
    'SkylakeX'), from a record's provenance; None where nothing was read."""
    pools = (facts.get("blas") or {}).get("threadpools") or []
    ran = [p for p in pools if p.get("user_api") == "blas" and p.get("architecture")]
    return (ran[0]["internal_api"], ran[0]["architecture"]) if ran else None


def blas_warnings(facts: dict[str, Any], blas_cell: bool) -> list[str]:
    """A cell timing NumPy's BLAS (`Impl.blas`) whose OpenBLAS kernel the environment chose
    (OPENBLAS_CORETYPE, which some hosts set for old OpenBLAS builds) did not time NumPy as it
    runs by default on this CPU: Haswell's kernel forced on a Zen 5 VM took NumPy's matmul at
    5000 from 0.30 to 0.53 s, and C1's JAX / NumPy from 2.9 to 1.6 (docs/measuring-traps.md).
    The kernel OpenBLAS actually ran is recorded beside it (threadpoolctl's `architecture`)."""
    forced = (facts.get("env") or {}).get("OPENBLAS_CORETYPE")
    ran = blas_kernel(facts)
    if not blas_cell or not forced or ran is None or ran[0] != "openblas":
        return []
    return [
        f"NumPy's BLAS: OpenBLAS ran its {ran[1]} kernel because OPENBLAS_CORETYPE={forced} is "
        "set, not the kernel it picks for this CPU: unset OPENBLAS_CORETYPE (and "
        "OPENBLAS_L2_SIZE) to time NumPy as installed"
    ]


def xla_threads() -> int | None:
    """Threads of XLA's CPU compute pool in this process (named tf_XLAEigen on Linux); None
    where they cannot be counted or no pool was started (nothing ran on the CPU backend)."""
    names = []
    for tid in cores.thread_ids():
        try:
            names.append(Path(f"/proc/self/task/{tid}/comm").read_text().strip())
        except OSError:  # a thread that ended while we looked
            continue
    return sum(name == "tf_XLAEigen" for name in names) or None


def threads(cores: tuple[int, ...], requested: int | None) -> dict[str, Any]:
    """What each library actually used, next to the cores the cell was given and, in a
    SLURM job, the CPUs SLURM granted its step.

    Read after the cell ran, so the pools exist: BLAS from threadpoolctl, XLA by counting
    its pool's threads. `parity` is false when either differs from the cell's cores, or
    when the cell's cores are not the step's CPUs (more than granted where the cluster
    binds no CPUs, e.g. TaskPlugin=task/none; fewer where the affinity was narrowed).
    """
    from threadpoolctl import threadpool_info

    pools = threadpool_info()
    blas = [p["num_threads"] for p in pools if p.get("user_api") == "blas"]
    openmp = [p["num_threads"] for p in pools if p.get("user_api") == "openmp"]
    xla = xla_threads()
    n = len(cores)
    granted = granted_cpus()
    seen = {"NumPy BLAS": max(blas) if blas else None, "XLA": xla}
    wrong = {name: count for name, count in seen.items() if count is not None and count != n}
    if requested is not None and requested != n:
        wrong[f"{requested} threads were requested, cores granted"] = n
    if granted is not None and (n > granted or (requested is None and n != granted)):
        wrong["SLURM granted the job step CPUs:"] = granted
    return {
        "requested": requested,
        "granted": granted,
        "cores": list(cores),
        "n_cores": n,
        "blas_threads": seen["NumPy BLAS"],
        "openmp_threads": max(openmp) if openmp else None,
        "xla_threads": xla,
        "parity": not wrong,
        "mismatch": ", ".join(f"{name} {count}" for name, count in wrong.items()),
    }


def base() -> dict[str, Any]:
    """Everything that does not need a JAX backend (safe in the parent process)."""
    return {
        "host": host(),
        "software": software(),
        "env": environment(),
        "slurm": slurm(),
        "git": git_commit(),
    }


def matmul_precision() -> str:
    from blockbench.measure import jax_compat

    return jax_compat.option("jax_default_matmul_precision") or "default"


def jax_settings() -> dict[str, Any]:
    import jax

    from blockbench.measure import jax_compat

    return {
        # what this process imported: the JAX-version axis checks it against the plan
        "imported": jax_compat.versions(),
        "default_backend": safe(jax.default_backend),
        "matmul_precision": matmul_precision(),
        "x64": bool(jax_compat.option("jax_enable_x64")),
        "compilation_cache": {
            "enabled": jax_compat.option("jax_enable_compilation_cache"),
            "dir": jax_compat.option("jax_compilation_cache_dir"),
        },
        "devices_seen": safe(lambda: [describe_device(d) for d in jax.devices()]),
    }


def float32_matmul(platform: str, compute_capability: str | None, precision: str) -> str:
    """What a float32 matmul should compute in, inferred from the device and the settings:
    the articles' T4 and NumPy compute float32, but XLA lets an Ampere or newer GPU (compute
    capability 8.0+) use TF32 at the `default` precision (10-bit mantissa), unless
    NVIDIA_TF32_OVERRIDE=0 forbids it, and a TPU uses one bfloat16 pass. Recorded as
    `float32_matmul_inferred`: what a claim reads is the matmul check's measured precision
    (`check.matmul_precision_measured`, blockbench.workloads.matmul.precision)."""
    if precision in ("highest", "float32") or platform == "cpu":
        return "float32"
    if precision == "bfloat16" or (platform == "tpu" and precision == "default"):
        return "bfloat16"
    if platform == "gpu" and os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        return "float32 (NVIDIA_TF32_OVERRIDE=0)"
    major = int(str(compute_capability or "0").split(".")[0])
    if platform == "gpu" and major < 8:
        return "float32 (no TF32 before compute capability 8.0)"
    return "tensorfloat32"


def describe_device(dev: Any) -> str:
    from blockbench.measure import jax_compat

    return f"{jax_compat.platform(dev)}:{dev.id} ({dev.device_kind})"


def device(dev: Any, requested: str = "") -> dict[str, Any]:
    """The device a cell ran on (`requested`: the cell's device, where the test-only fake
    GPU runs it on the CPU device); `model` names it whatever its platform."""
    from blockbench.measure import jax_compat

    faked = fake_gpu(requested)
    if faked:
        dev = FakedGpu(dev, faked)
    kind = jax_compat.platform(dev)
    info: dict[str, Any] = {"platform": kind, "id": dev.id, "device_kind": dev.device_kind}
    if faked:
        info["faked"] = True
    if kind == "cpu":
        info["model"] = safe(cpu_model)
    else:
        info["model"] = dev.device_kind
        stats = safe(dev.memory_stats)
        if isinstance(stats, dict):
            keys = ("bytes_limit", "bytes_in_use", "peak_bytes_in_use", "bytes_reservable_limit")
            info["memory_stats"] = {k: stats[k] for k in keys if k in stats}
    info["float32_matmul_inferred"] = float32_matmul(
        kind,
        getattr(dev, "compute_capability", None),
        matmul_precision(),
    )
    if kind != "cpu":
        # the CUDA (or TPU runtime) version JAX's plugin runs with, as JAX reports it
        info["platform_version"] = safe(lambda: str(dev.client.platform_version))
    if kind == "gpu":
        info["compute_capability"] = getattr(dev, "compute_capability", None)
        info["nvml"] = safe(lambda: nvml_gpu(cuda_pci_bus_id(cuda_ordinal(dev))))
        # the cuBLAS, cuDNN, ... this process runs (device_after's: those loaded on first use)
        info["nvidia_libraries"] = safe(loaded_nvidia_libraries)
    return info


def numpy_device() -> dict[str, Any]:
    """The device of a NumPy cell, described as JAX describes its CPU, without JAX."""
    return {
        "platform": "cpu",
        "id": 0,
        "device_kind": "cpu",
        "model": safe(cpu_model),
        "float32_matmul_inferred": "float32",
    }


def full(dev: Any, requested: str = "") -> dict[str, Any]:
    """Base facts plus JAX settings, the measured device and BLAS (worker process only);
    a NumPy cell (`dev` None) has no JAX settings and never loads JAX."""
    if dev is None:
        return {**base(), "device": numpy_device(), "blas": blas()}
    return {**base(), "jax": jax_settings(), "device": device(dev, requested), "blas": blas()}
