"""The GPU kit's first minute: is the GPU ready, and what does a worker's start cost here.

`gpu_ready`, one throwaway GPU process that loads CUDA's libraries (so that no measured
first call pays for a cold disk), one short cell through every GPU phase and one short CPU
cell, summarised on one screen. A machine that fails any of it stops there, with one line
naming the cause, before the grid. The two cells' records time a GPU and a CPU worker's start,
with which the kit re-plans the grid (blockbench.pipeline.kit_estimate).
"""

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blockbench.measure import gpu_ready, parent
from blockbench.pipeline.kit_estimate import SMOKE, SMOKE_CPU, smoke_params, start_s
from blockbench.pipeline.run_plan import RunPlan
from blockbench.records import layout, store

SMOKE_FILES = {SMOKE: "smoke.json", SMOKE_CPU: "smoke-cpu.json"}
# Loads the CUDA plugin, cuBLAS and the compiler from disk once, in a process of its own.
THROWAWAY = (
    "import jax, jax.numpy as jnp; d = jax.devices()[0]; "
    "x = jax.device_put(jnp.ones((256, 256)), d); print(d, float(jnp.dot(x, x)[0, 0]))"
)


@dataclass
class Outcome:
    """The first minute: the one line naming a failure (None: ready), and the worker starts
    it timed (device kind -> seconds)."""

    failed: str | None = None
    starts: dict[str, float] = field(default_factory=dict)


def gated(config: Mapping[str, Any], plan: RunPlan) -> bool:
    """Whether the run has GPU cells and checks the GPU before them (config `check_gpu`)."""
    return bool(config["check_gpu"]) and any(c.device == "gpu" for c in plan.cells)


def throwaway() -> str | None:
    """One GPU process that loads CUDA's libraries and runs a product; the cause if it fails."""
    env = {**os.environ, "JAX_PLATFORMS": gpu_ready.jax_platforms("gpu").split(",")[0]}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(parent.SRC), env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(
            [sys.executable, "-c", THROWAWAY],
            capture_output=True,
            text=True,
            timeout=gpu_ready.TIMEOUT_S,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"a first GPU process failed: {exc}"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        return f"a first GPU process failed: {said[-1]}"
    return None


def summary(record: Mapping[str, Any], cpu: Mapping[str, Any]) -> list[str]:
    """The smoke cells in a few lines: what a person checks before trusting the grid."""
    prov = record.get("provenance", {})
    device = prov.get("device") or {}
    after = prov.get("device_after") or {}
    packages = prov.get("software", {}).get("packages", {})
    check = record.get("check") or {}
    phases = record.get("phases", {})

    def nvml(d: Mapping[str, Any]) -> str:
        n = d.get("nvml") if isinstance(d.get("nvml"), dict) else {}
        clocks = (n.get("clocks_mhz") or {}).get("sm")
        return f"SM {clocks} MHz, {n.get('temperature_c')} C, {n.get('power_w')} W"

    memory = (after.get("memory_stats") or {}).get("peak_bytes_in_use")
    gpu = device.get("nvml") if isinstance(device.get("nvml"), dict) else {}
    limit = gpu.get("power_limit_w") if isinstance(gpu.get("power_limit_w"), dict) else {}
    libs = after.get("nvidia_libraries")
    loaded = (
        ", ".join(f"{lib['file']} {lib['version'] or ''}".rstrip() for lib in libs)
        if isinstance(libs, list)
        else str(libs)
    )
    jax = {k: v for k, v in packages.items() if k.startswith("jax")}
    return [
        f"smoke cell {SMOKE.key}: {record.get('status')} {record.get('reason', '')}".rstrip(),
        f"  device {device.get('model')}; matmul precision measured "
        f"{check.get('matmul_precision_measured', 'unknown')} (asked "
        f"{prov.get('jax', {}).get('matmul_precision')})",
        f"  {', '.join(f'{k} {v}' for k, v in sorted(jax.items()))}; CUDA "
        f"{device.get('platform_version')}; driver {(device.get('nvml') or {}).get('driver')}",
        f"  NVML before: {nvml(device)}; after: {nvml(after)}; peak memory {memory} bytes",
        f"  GPU {gpu.get('uuid')}; power limit {limit.get('enforced')} W "
        f"(default {limit.get('default')} W)",
        f"  NVIDIA libraries after the phases: {loaded or 'none mapped'}",
        "  phases: "
        + ", ".join(f"{name} {p.get('median_s', 0):.3g} s" for name, p in phases.items()),
        f"smoke cell {SMOKE_CPU.key}: {cpu.get('status')} {cpu.get('reason', '')}".rstrip(),
    ]


def smoke(config: Mapping[str, Any], raw: Path, run_label: str) -> dict[Any, dict[str, Any]]:
    """The two smoke cells, each one worker process through the workflow's own command;
    a cell that wrote no record is missing from the result."""
    out = {}
    for cell, name in SMOKE_FILES.items():
        path = raw / name
        measured = parent.measure(cell, 0, path, run_label, smoke_params(config, cell))
        if measured == 0 and path.exists():
            out[cell] = store.read_json(path)
    return out


def first_minute(config: Mapping[str, Any], raw: Path, say: Callable[[str], None]) -> Outcome:
    """gpu_ready, the throwaway process, the smoke cells, the worker starts."""
    facts, reason = gpu_ready.check()
    if reason is not None:
        return Outcome(f"GPU not ready: {reason}")
    raw.mkdir(parents=True, exist_ok=True)
    store.write_json_atomic(raw / Path(layout.GPU_READY).name, {**vars(facts), "ready": True})
    say(f"GPU ready: {', '.join(facts.gpus)}; driver {facts.driver}; {facts.plugin}")
    if not store.can_validate():
        say("no jsonschema here: records are written unvalidated; --unpack validates them at home")
    t0 = time.monotonic()
    if (failed := throwaway()) is not None:
        return Outcome(f"GPU not ready: {failed}")
    say(f"CUDA's libraries loaded by a throwaway process in {time.monotonic() - t0:.1f} s")
    records = smoke(config, raw, config["run_label"])
    for cell in SMOKE_FILES:
        if cell not in records:
            return Outcome(f"GPU not ready: the smoke cell {cell.key} wrote no record")
    for line in summary(records[SMOKE], records[SMOKE_CPU]):
        say(line)
    for cell, record in records.items():
        if record["status"] != "ok":
            return Outcome(
                f"GPU not ready: the smoke cell {cell.key} is {record['status']}: "
                f"{record['reason']}"
            )
    starts = {cell.device: start_s(r) for cell, r in records.items()}
    return Outcome(starts={k: v for k, v in starts.items() if v is not None})
