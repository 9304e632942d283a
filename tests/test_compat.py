"""The workflow beside other releases than the locked ones: parsed with Snakemake alone (no
scientific library; Snakemake at its floor and at the locked release; below the floor it
stops), and the tiny grid end to end with every dependency at its floor. Each environment is
made once from PyPI and kept under the checkout's .venvs/ (git-ignored)."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from tiny import ROOT, TINY, workflow_copy


def environment(name: str, *requirements: str) -> Path:
    """A virtual environment of these pip requirements alone, made once from PyPI and kept
    in .venvs/NAME until they change. Not byte-compiled at install (pip does every file, one
    at a time): the few modules a run imports compile on first import instead."""
    env, wanted = ROOT / ".venvs" / name, " ".join(requirements)
    stamp = env / "made"
    if not stamp.exists() or stamp.read_text() != wanted:
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        pip = [str(env / "bin/python"), "-m", "pip", "install", "-q", "--no-compile"]
        subprocess.run([*pip, *requirements], check=True, timeout=900)
        stamp.write_text(wanted)
    return env / "bin"


# The workflow parses with what Snakemake itself installs: numpy, pandas, JAX and the
# plotting libraries are imported only inside jobs (blockbench.workloads.declare: `deferred`).
# Snakemake's CLI loads the installed executor plugins first (the SLURM one imports pandas),
# so they are made absent after that, for the parse: the Snakefile and what it imports.
SCIENTIFIC = ("numpy", "pandas", "jax", "jaxlib", "scipy", "matplotlib", "seaborn", "pyarrow")
PARSE_WITHOUT = """
import importlib.abc, importlib.metadata, sys
from snakemake.cli import main
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (made absent)", name=name)
for loaded in [m for m in sys.modules if m.split(".")[0] in {blocked!r}]:
    del sys.modules[loaded]
sys.meta_path.insert(0, Absent())
real = importlib.metadata.version
def version(name):
    if name in {blocked!r}:
        raise importlib.metadata.PackageNotFoundError(name)
    return real(name)
importlib.metadata.version = version
main(sys.argv[1:])
"""


def parse_without_science(wf: Path, *args: str) -> subprocess.CompletedProcess:
    code = PARSE_WITHOUT.format(blocked=SCIENTIFIC)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=wf, capture_output=True, text=True, env=env
    )


@pytest.mark.slow
@pytest.mark.parametrize("config", [None, TINY], ids=["default grid", "tiny grid"])
def test_the_workflow_parses_with_snakemake_alone(tmp_path, config):
    """`snakemake -n` lists the jobs with numpy, pandas, JAX and the plotting libraries made
    unimportable: what a user whose environment holds only Snakemake (`--sdm conda`) gets."""
    wf = workflow_copy(tmp_path, config)
    args = ("--configfile", "tiny.yaml") if config else ()
    run = parse_without_science(wf, "-n", "--cores", "4", *args)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "measure" in run.stdout and "claims" in run.stdout


def test_a_parse_that_imports_numpy_is_caught(tmp_path):
    """The check above can fail: a rule file that imports NumPy stops the parse."""
    wf = workflow_copy(tmp_path)
    common = wf / "workflow/rules/common.smk"
    common.write_text("import numpy\n" + common.read_text())
    run = parse_without_science(wf, "-n", "--cores", "4")
    said = run.stdout + run.stderr
    assert run.returncode != 0 and "No module named 'numpy' (made absent)" in said


FLOOR = re.search(r'^min_version\("([\d.]+)"\)', (ROOT / "workflow/Snakefile").read_text(), re.M)[1]
LOCKED = re.search(r"^snakemake==(\S+)$", (ROOT / "requirements.lock").read_text(), re.M)[1]


def snakemake_only(version: str) -> Path:
    """Snakemake `version` and what it installs, nothing of blockbench's own (about 30 s to
    make)."""
    return environment(f"snakemake-{version}", f"snakemake=={version}") / "snakemake"


@pytest.mark.slow
@pytest.mark.parametrize("version", [f"{FLOOR}.0", LOCKED], ids=["floor", "locked"])
@pytest.mark.parametrize("config", [None, TINY], ids=["default grid", "tiny grid"])
def test_an_environment_of_snakemake_alone_lists_the_jobs(tmp_path, version, config):
    """Where a user stands: Snakemake from pip and nothing else (the declared floor, and the
    locked release); jobs would run in the rules' `conda:` environment."""
    wf = workflow_copy(tmp_path, config)
    args = ("--configfile", "tiny.yaml") if config else ()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [str(snakemake_only(version)), "-n", "--cores", "4", *args],
        cwd=wf,
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "measure" in run.stdout and "claims" in run.stdout


@pytest.mark.slow
def test_a_snakemake_below_the_floor_stops_with_its_own_min_version_line(tmp_path):
    major, minor = FLOOR.split(".")
    below = f"{major}.{int(minor) - 1}.0"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [str(snakemake_only(below)), "-n", "--cores", "4"],
        cwd=workflow_copy(tmp_path),
        capture_output=True,
        text=True,
        env=env,
    )
    said = run.stdout + run.stderr
    assert run.returncode != 0
    assert (
        f"Expecting Snakemake version {FLOOR} or higher (you are currently using {below})" in said
    )


FLOORS = ROOT / "tests" / "floors.txt"


def floor_pins() -> dict[str, str]:
    lines = [x.split("#")[0].strip() for x in FLOORS.read_text().splitlines()]
    return dict(x.split("==") for x in lines if x)


def test_the_tried_floors_are_pyprojects():
    """tests/floors.txt pins what pyproject.toml declares, each at its lower bound."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["workflow"]]
    bounds = dict(re.fullmatch(r"([\w.-]+)>=([\d.]+)", d).groups() for d in declared)
    pins = floor_pins()
    for name, floor in bounds.items():
        if name == "snakemake-executor-plugin-slurm":
            continue  # only a SLURM run loads it
        pinned = pins[name].split(".")
        assert pinned[: len(floor.split("."))] == floor.split("."), (name, floor, pins[name])


# The floors run every stage and every kind of claim part (a ratio, a growth fit over sizes,
# a check) and both kinds of interval (between processes: the SELU block's two; within one)
# on as few processes as do it: what a floor breaks is in the libraries' calls, which a
# larger grid only repeats (the tiny grid runs on the locked releases).
FLOOR_GRID = {
    **TINY,
    "merge": [],
    "workloads": [
        {"name": "selu", "impls": ["numpy", "jax", "jax_jit"], "sizes": [1000], "repeats": 2},
        {"name": "stencil", "impls": ["loop", "convolve", "loop_jit"], "sizes": [4]},
        {"name": "grad_logistic", "impls": ["grad"], "sizes": [100]},
    ],
    "repeats": 1,
}
FLOOR_GRID["workloads"][1]["impl_sizes"] = {"loop_jit": [4, 6, 8]}


@pytest.mark.slow
def test_the_tiny_grid_runs_at_the_declared_floors(tmp_path):
    """Every dependency at its floor (tests/floors.txt, installed once into .venvs/floors:
    about a minute from PyPI), Snakemake's included: every stage end to end."""
    pins = [f"{name}=={version}" for name, version in floor_pins().items()]
    python = environment("floors", *pins) / "python"
    wf = workflow_copy(tmp_path, FLOOR_GRID)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BLOCKBENCH_LOCK": str(wf / "lock")}
    run = subprocess.run(
        [
            str(python),
            "-m",
            "snakemake",
            "--cores",
            "4",
            "--configfile",
            "tiny.yaml",
        ],
        cwd=wf,
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    table = pd.read_csv(wf / "results/claims.csv")
    verdicts = {"reproduced", "not_reproduced", "inconclusive", "not_run"}
    assert set(table["verdict"]) <= verdicts and len(table) == 15
