"""One run, one kind of host, checked before a cell measures.

The first cell of a run records its host's kind (blockbench.records.machines.Kind: CPU model
and logical CPUs) beside the run's measurements, and the first GPU cell its GPU's (model, and
its driver too, as nvidia-smi reports them: a run's first cell may be a CPU cell); every later
cell compares its own and, on another kind (a cluster's job placed on another partition's
node, a checkout moved to another machine, a driver updated between two sessions), stops
before measuring with one line. The tables stage checks the finished files too
(blockbench.judge.aggregate); this finds it on the first wrong node, not after the grid.
"""

import json
import os
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from blockbench.measure import gpu_ready, provenance
from blockbench.measure.safe_read import safe
from blockbench.records.layout import Cell
from blockbench.records.machines import Kind

KIND_FILE = "host_kind.json"
GPU_KIND_FILE = "host_kind_gpu.json"
CPU_KEYS = ("hostname", "cpu_model", "cpus")
GPU_KEYS = ("hostname", "gpu_model", "gpu_driver")


def run_dir_of(out: Path, cell: Cell, repeat: int) -> Path | None:
    """The run's folder, where `out` is where the layout puts this cell's file (None for a
    file written elsewhere: a test's scratch file)."""
    expected = cell.in_run(repeat).split("/")
    return out.parents[len(expected) - 1] if list(out.parts[-len(expected) :]) == expected else None


def here(device: str) -> dict[str, Any]:
    """The kind of this host for a cell of `device`, read without JAX (in the parent): its
    CPU, and for a GPU cell the GPU models and driver nvidia-smi reports (it ignores
    CUDA_VISIBLE_DEVICES: the node's, not the job's), None where it reports none."""
    kind = {
        "hostname": socket.gethostname(),
        "cpu_model": safe(provenance.cpu_model),
        "cpus": psutil.cpu_count(logical=True),
    }
    if device == "gpu":
        smi = gpu_ready.Facts()
        gpu_ready.read_smi(smi, subprocess.run)
        models = ", ".join(sorted(set(smi.gpus)))
        kind |= {"gpu_model": models or None, "gpu_driver": smi.driver if models else None}
    return kind


def recorded(path: Path, kind: dict[str, Any]) -> dict[str, Any]:
    """The kind recorded at `path`, recording `kind` there first if none is (atomically: the
    first of two racing jobs wins)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, draft = tempfile.mkstemp(dir=path.parent, prefix=".host_kind.")
        with os.fdopen(fd, "w") as f:
            json.dump(kind, f)
        try:
            os.link(draft, path)  # fails where another job recorded first
        except FileExistsError:
            pass
        finally:
            os.unlink(draft)
    return json.loads(path.read_text())


def cpu_kind(host: Mapping[str, Any]) -> Kind:
    """The kind of machine of a host as `here` reads it, by its CPU alone."""
    return Kind(host["cpu_model"], host["cpus"])


def gpu_words(kind: dict[str, Any]) -> str:
    if not kind.get("gpu_model"):
        return f"{kind['hostname']}: no GPU that nvidia-smi reports"
    return f"{kind['hostname']}: {kind['gpu_model']}, driver {kind['gpu_driver']}"


def mismatch(run_dir: Path, here: dict[str, Any]) -> str | None:
    """Record `here` (host_kind.here) as the run's kind if none is recorded yet, and its GPU
    as the run's GPU if `here` is a GPU cell's and none is, else the one line saying how
    this host differs; None: the same kind. A host where nvidia-smi reads no GPU records no
    GPU kind (its cell is `unavailable` anyway), but differs from one recorded."""
    path = run_dir / KIND_FILE
    first = recorded(path, {k: here[k] for k in CPU_KEYS})
    if cpu_kind(first) != cpu_kind(here):
        return (
            f"this host ({here['hostname']}: {cpu_kind(here).describe()}) is not the kind run "
            f"{run_dir.name} began on ({first['hostname']}: {cpu_kind(first).describe()}, "
            f"{path}): keep a run on one kind of node (docs/slurm.md), or measure here under "
            "another run_label"
        )
    if "gpu_model" not in here:  # a CPU cell's kind has no GPU
        return None
    path = run_dir / GPU_KIND_FILE
    if not path.exists() and not here["gpu_model"]:
        return None
    first = recorded(path, {k: here[k] for k in GPU_KEYS})
    if all(first.get(k) == here.get(k) for k in GPU_KEYS[1:]):
        return None
    return (
        f"this host's GPU ({gpu_words(here)}) is not the kind run {run_dir.name} began its GPU "
        f"cells on ({gpu_words(first)}, {path}): keep a run on one kind of node and driver "
        "(docs/slurm.md), or measure here under another run_label"
    )
