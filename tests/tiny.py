"""The tiny grid every end-to-end test runs, and a scratch copy of the workflow to run it in."""

import shutil
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import yaml

from blockbench.pipeline import stages
from blockbench.records.layout import raw_files
from blockbench.workloads import registry

ROOT = Path(__file__).resolve().parents[1]

# The smoke grid a person runs (config/smoke.yaml), which every end-to-end test runs, with
# GPU cells too: here each records itself `unavailable` (the check before them stops them
# all: tests/test_gpu_ready.py), so the GPU claims' paths run on any machine.
TINY = {**yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()), "devices": ["cpu", "gpu"]}


# The catalogs blockbench ships; a catalog's own workloads are known once it is read.
SHIPPED_CATALOGS = sorted(p for p in (ROOT / "config" / "claims").iterdir() if p.is_dir())


def every_workload() -> dict:
    """The registry with every shipped catalog's workloads in it: what a test of every
    workload reads (blockbench's own modules alone are known without)."""
    for folder in SHIPPED_CATALOGS:
        registry.use_catalog(folder)
    return registry.WORKLOADS


def module_of(workload: str) -> types.ModuleType:
    """The module that declares `workload` (a shipped catalog's too), to call its functions."""
    return sys.modules[every_workload()[workload].check.__module__]


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


# The Xeon reference's default run: committed records a test can judge without measuring.
XEON_RUN = ROOT / "results/reference/xeon-m207-2cpu/run"
TABLES = (
    ("processes", "parquet"),
    ("processes_csv", "csv"),
    ("csv", "csv"),
    ("parquet", "parquet"),
    ("md", "md"),
    ("speedups", "csv"),
    ("speedups_md", "md"),
)
CLAIMS_OUT = ("claims.csv", "claims.md", "claims.rst", "parts.csv", "parts.parquet")


def reference_tables(tmp_path: Path) -> tuple[SimpleNamespace, list[Path]]:
    """The tables stage run over the Xeon reference's raw records into `tmp_path`, and the
    claims stage's five output paths beside them (claims.csv first)."""
    out = SimpleNamespace(**{k: tmp_path / f"{k}.{ext}" for k, ext in TABLES})
    stages.build_tables([str(p) for p in raw_files(XEON_RUN / "raw/p3-r1")], out)
    return out, [tmp_path / name for name in CLAIMS_OUT]
