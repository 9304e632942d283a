"""Shared helpers: running the one-cell command the way Snakemake does, and the kind of
machine the suite pretends to run on (`--fake-cpu-model`)."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from blockbench.measure.provenance import FAKE_CPU_MODEL
from blockbench.records.store import validate

ROOT = Path(__file__).resolve().parents[1]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fake-cpu-model",
        default=None,
        help="run the suite as if this host's CPU model were this (e.g. 'AMD EPYC', "
        "'Intel(R) Xeon(R) Processor', 'Unknown CPU'): no test may depend on the real one",
    )


# Fixtures that run Snakemake end to end (minutes): a test that uses one is slow, marked or not.
SLOW_FIXTURES = {"tiny_run", "slurm_run"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A SLURM test starts a cluster and a test on the tiny run waits for it (minutes): they
    are slow too, out of the development tier. The files of the most slow tests go first,
    each file's tests in their order: on two workers (scripts/bootstrap.py), a file of
    minutes that started last would run on alone."""
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("slurm") or uses & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])


def pytest_configure(config: pytest.Config) -> None:
    """Set before any test runs, so that every process the suite starts inherits it."""
    fake = config.getoption("--fake-cpu-model")
    if fake:
        os.environ[FAKE_CPU_MODEL] = fake


# Short phases: the tests check behaviour, not precision.
FAST = ["--min-samples", "5", "--min-time-s", "0.02", "--max-time-s", "0.1"]


def run_measure(
    out: Path, *args: str, env: dict[str, str] | None = None, lock: Path | None = None
) -> tuple[int, dict[str, Any] | None, str]:
    """Run `blockbench measure` in a process of its own; return (exit code, validated JSON or
    None, stderr)."""
    cmd = [sys.executable, "-m", "blockbench", "measure", "--out", str(out), *FAST, *args]
    if lock is not None:
        cmd += ["--lock", str(lock)]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600
    )
    record = None
    if out.exists():
        record = json.loads(out.read_text())
        validate(record)
    return proc.returncode, record, proc.stderr


@pytest.fixture
def measure_cli(tmp_path: Path):
    def run(*args: str, env: dict[str, str] | None = None, name: str = "cell.json"):
        return run_measure(tmp_path / name, *args, env=env, lock=tmp_path / "lock")

    return run
