"""The tiny grid every end-to-end test runs, and a scratch copy of the workflow to run it in."""

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

# `workloads` is a list, so this replaces the default grid rather than merging into it.
TINY = {
    "run_label": "tiny",
    "devices": ["cpu", "gpu"],
    "workloads": [
        {
            "name": "dot_xx",
            "impls": ["jax"],
            "sizes": [64],
            "repeats": 3,
            "sampling": {"max_time_s": 0.15},
        },
        {
            "name": "matmul",
            "impls": ["numpy", "jax_numpy_input", "jax", "jax_jit"],
            "sizes": [64],
            "impl_sizes": {"numpy": [16, 32, 64], "jax_jit": [16, 32, 64]},
        },
        {"name": "selu", "impls": ["numpy", "jax", "jax_jit"], "sizes": [1000]},
        {
            "name": "stencil",
            "impls": ["loop", "convolve", "scan", "loop_jit", "convolve_jit", "scan_jit"],
            "sizes": [4],
            "impl_sizes": {"loop_jit": [4, 6, 8]},
        },
        {"name": "grad_logistic", "impls": ["grad", "grad_jit"], "sizes": [100]},
    ],
    "sampling": {"min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.05},
    "budget_s": 120,
    "repeats": 2,
    # a fixed design: the rounds added on demand have tests of their own (test_stopping.py)
    "max_rounds": 2,
    # no GPU here: each GPU cell records itself `unavailable` (the check before them stops
    # them all: tests/test_gpu_ready.py)
    "check_gpu": False,
    # the committed between-run studies are of real machines: a tiny run on one of their
    # kinds would be judged with them, and its claims would differ from one host to another
    "between_run": "no-studies",
}


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
