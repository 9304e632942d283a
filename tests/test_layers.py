"""The package's layers: imports only run down them (blockbench/__init__.py lists them)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from blockbench.records.params import CellSpec, MeasureParams
from blockbench.records.spec import StopRule
from blockbench.records.store import read_json, write_json_atomic

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "blockbench"
# Lowest first: a module may import its own layer and the ones before it.
LAYERS = ("errors", "records", "workloads", "measure", "judge", "present", "pipeline")


def layer_of(module: str) -> str | None:
    """The layer of a blockbench module name ('blockbench.judge.claims' -> 'judge')."""
    parts = module.split(".")
    if parts[0] != "blockbench" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in LAYERS else None


def imports(path: Path) -> list[tuple[int, str]]:
    """Every blockbench module a file imports, at any depth of its code."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "blockbench":
                found += [(node.lineno, f"blockbench.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.startswith("blockbench")]


def modules() -> list[Path]:
    """Every module but the package's own __init__ (which only documents the layers) and
    __main__ (`python -m blockbench`: the command line, above every layer)."""
    top = {PACKAGE / "__init__.py", PACKAGE / "__main__.py"}
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in top)


def test_every_module_lives_in_a_layer():
    for path in modules():
        rel = path.relative_to(PACKAGE)
        name = "blockbench." + ".".join(rel.with_suffix("").parts)
        assert layer_of(name.removesuffix(".__init__")), f"{rel} is in no layer of {LAYERS}"


def test_imports_only_run_down_the_layers():
    breaks = []
    for path in modules():
        rel = path.relative_to(PACKAGE)
        own = LAYERS.index(layer_of("blockbench." + ".".join(rel.with_suffix("").parts)))
        for line, name in imports(path):
            target = layer_of(name)
            assert target is not None, f"{rel}:{line} imports {name}, in no layer"
            if LAYERS.index(target) > own:
                breaks.append(f"{rel}:{line} ({LAYERS[own]}) imports {name} ({target})")
    assert not breaks, "imports running up the layers:\n" + "\n".join(breaks)


def test_the_checker_sees_a_break(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from blockbench.pipeline import grid\n")
    assert imports(bad) == [(2, "blockbench.pipeline")]
    assert LAYERS.index(layer_of("blockbench.pipeline")) > LAYERS.index("judge")


# What each kind of process may load: only a JAX cell's worker imports JAX.
NO_JAX = {
    "the workload registry": "import blockbench.workloads.registry",
    "the tables and claims stages": "import blockbench.pipeline.stages",
    "the figures": "import blockbench.present.figures, blockbench.present.article_figures",
    "the grid": "import blockbench.pipeline.grid, blockbench.pipeline.run_order",
}


@pytest.mark.parametrize("what", list(NO_JAX))
def test_only_a_jax_cell_imports_jax(what):
    code = NO_JAX[what] + "\nimport sys\nprint(sorted(m for m in sys.modules if m == 'jax'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"{what} imports JAX"


def test_records_need_neither_numpy_nor_jax():
    code = "import blockbench.records.spec, blockbench.records.layout, blockbench.records.store\n"
    code += "import sys\nprint(sorted(m for m in ('numpy', 'jax') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def imported_by(stderr: str) -> set[str]:
    """Top-level packages in `python -X importtime`'s report."""
    return {
        line.split("|")[-1].strip().split(".")[0] for line in stderr.splitlines() if "|" in line
    }


def test_a_numpy_cells_worker_measures_without_importing_jax(tmp_path):
    spec = CellSpec(
        "cpu", "selu", "numpy", 1000, MeasureParams(rule=StopRule(min_samples=3, max_time_s=0.05))
    )
    write_json_atomic(tmp_path / "spec.json", spec.as_dict())
    files = [str(tmp_path / name) for name in ("spec.json", "result.json", "partial.json")]
    cmd = [sys.executable, "-X", "importtime", "-m", "blockbench.measure.worker", *files]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    record = read_json(tmp_path / "result.json")
    assert record["status"] == "ok", record["reason"]
    assert record["provenance"]["device"]["model"]
    assert "jax" not in record["provenance"]
    assert "numpy" in imported_by(out.stderr)
    assert "jax" not in imported_by(out.stderr)
