"""Formatting and lint are part of the suite: ruff for Python, snakefmt for the workflow, and
the length of the package's modules and functions."""

import ast
import subprocess
import sys
from collections.abc import Iterator
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


MAX_MODULE_LINES = 450  # a module a reader takes in at one sitting, with one job
MAX_FUNCTION_LINES = 80  # a function that fits on a screen, its docstring included


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Each function and method in `tree`, nested ones too, by qualified name, with its
    length in lines from `def` to its last line."""
    for node in ast.iter_child_nodes(tree):
        name = f"{prefix}{getattr(node, 'name', '')}"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield name, node.end_lineno - node.lineno + 1
            yield from functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{name}.")
        else:
            yield from functions(node, prefix)


def test_modules_and_functions_stay_short():
    """Every module of the package within MAX_MODULE_LINES lines, every function and method
    within MAX_FUNCTION_LINES: past them, split along a seam that gives each part one job."""
    long = []
    for path in sorted((ROOT / "src/blockbench").rglob("*.py")):
        text, rel = path.read_text(), path.relative_to(ROOT)
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            long.append(f"{rel}: {n} lines (at most {MAX_MODULE_LINES})")
        long += [
            f"{rel}:{name}: {n} lines (at most {MAX_FUNCTION_LINES})"
            for name, n in functions(ast.parse(text))
            if n > MAX_FUNCTION_LINES
        ]
    assert not long, "too long:\n" + "\n".join(long)
