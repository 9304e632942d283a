"""Test-only: a GPU that is JAX's CPU device, for the processes a test starts and its own.

Where BLOCKBENCH_FAKE_GPU names a GPU (blockbench.measure.nvidia.FAKE_GPU), a GPU cell
runs on the CPU through every GPU code path; the stubs in tests/fake_gpu/ answer for the
driver (nvidia-smi), NVML (pynvml) and JAX's CUDA plugin (its dist-info), found first on
PATH and PYTHONPATH. Every record says it was faked (`provenance.device.faked`).
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from blockbench.measure.nvidia import FAKE_GPU

STUBS = Path(__file__).resolve().parent / "fake_gpu"
# sitecustomize.py there makes a Python import only what the GPU machine's image has
IMAGE = Path(__file__).resolve().parent / "gpu_image"
NAME = "Fake H100 (tests)"
# set, the stub NVML's power cap engages during the cell's work (tests/fake_gpu/pynvml.py)
THROTTLED = "BLOCKBENCH_FAKE_GPU_THROTTLED"


def first_on(path: str | None, folder: Path = STUBS) -> str:
    return os.pathsep.join(p for p in (str(folder), path) if p)


def image_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) for a subprocess that imports only the
    GPU image's packages, as do the processes it starts (they inherit PYTHONPATH)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = first_on(env.get("PYTHONPATH"), IMAGE)
    return env


def fake_gpu_env(base: dict[str, str] | None = None, throttled: bool = False) -> dict[str, str]:
    """`base` (default: this process's environment) for a subprocess that runs as on a GPU
    (`throttled`: one whose power cap engages as it works)."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = first_on(env.get("PATH"))
    env["PYTHONPATH"] = first_on(env.get("PYTHONPATH"))
    env[FAKE_GPU] = NAME
    if throttled:
        env[THROTTLED] = "1"
    return env


def use_fake_gpu(monkeypatch: pytest.MonkeyPatch) -> str:
    """The same in this process, until the test ends: the stub NVML replaces a binding
    already imported. Returns the fake GPU's name."""
    env = fake_gpu_env({key: os.environ.get(key, "") for key in ("PATH", "PYTHONPATH")})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(STUBS))  # the plugin's dist-info, for importlib.metadata
    spec = importlib.util.spec_from_file_location("pynvml", STUBS / "pynvml.py")
    stub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stub)
    monkeypatch.setitem(sys.modules, "pynvml", stub)
    return NAME
