"""The tiny grid every end-to-end test runs, and a scratch copy of the workflow to run it in."""

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

# The smoke grid a person runs (config/smoke.yaml), which every end-to-end test runs, with
# GPU cells too: here each records itself `unavailable` (the check before them stops them
# all: tests/test_gpu_ready.py), so the GPU claims' paths run on any machine.
TINY = {**yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()), "devices": ["cpu", "gpu"]}


def workflow_copy(tmp_path: Path, config: dict | None = None) -> Path:
    """The workflow in a scratch directory, so tests never touch the checkout's results/."""
    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "Snakefile", tmp_path)
    for name in ("environment.yml", "environment-cuda12.yml"):
        shutil.copy(ROOT / name, tmp_path)
    if config is not None:
        (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    return tmp_path
