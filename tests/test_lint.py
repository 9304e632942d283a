"""Formatting and lint are part of the suite: ruff for Python, snakefmt for the workflow."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON_DIRS = ["src", "scripts", "tests", "workflow/scripts", "benchmarks"]


def run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint_is_clean():
    result = run("ruff", "check", *PYTHON_DIRS)
    assert result.returncode == 0, result.stdout


def test_ruff_format_is_clean():
    result = run("ruff", "format", "--check", *PYTHON_DIRS)
    assert result.returncode == 0, result.stdout


def test_snakefmt_is_clean():
    result = run("snakefmt", "--check", "Snakefile", "workflow/Snakefile", "workflow/rules")
    assert result.returncode == 0, result.stderr
