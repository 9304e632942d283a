"""blockbench as a module of another workflow: the lines docs/module.md gives, its own config and
run_label, every result under the host's directory and nothing in blockbench's."""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_compat import LOCKED, snakemake_only
from test_workflow import first_stage
from tiny import TINY

from blockbench.pipeline import grid, stages
from blockbench.present import figure_names
from blockbench.records import layout

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
# The tiny grid's SELU block, CPU only: every stage end to end in well under a minute.
GRID = {
    **TINY,
    "run_label": "host-tiny",
    "devices": ["cpu"],
    "workloads": [w for w in TINY["workloads"] if w["name"] == "selu"],
}
# What the host adds after those lines: its own target and a rule of its own that
# reads a blockbench output, and the onstart line a host that submits to SLURM needs.
HOST_RULES = """

rule all:
    default_target: True
    input:
        rules.bb_all.input,
        "summary/claims.md",


rule summary:
    input:
        rules.bb_claims.output.md,
    output:
        "summary/claims.md",
    shell:
        "cp {input} {output}"


onstart:
    blockbench.onstart()
"""


def module_block() -> str:
    """The module lines docs/module.md gives first."""
    text = (ROOT / "docs/module.md").read_text()
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def blockbench_copy(path: Path) -> Path:
    """A checkout of blockbench somewhere else, as another workflow would have one."""
    for name in ("workflow", "config", "src"):
        shutil.copytree(ROOT / name, path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("environment.yml", "environment-cuda12.yml", "requirements.lock"):
        shutil.copy(ROOT / name, path)
    return path


def snakemake(cwd: Path, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [*SNAKEMAKE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.slow
def test_a_host_workflow_runs_the_tiny_grid_through_the_readmes_module_lines(tmp_path):
    checkout = blockbench_copy(tmp_path / "blockbench")
    host = tmp_path / "host"
    (host / "config").mkdir(parents=True)
    block = module_block()
    assert 'config["blockbench"]' in block and "use rule * from blockbench as bb_*" in block
    snakefile = block.replace("/path/to/blockbench", str(checkout))
    (host / "Snakefile").write_text(snakefile + HOST_RULES)
    # the host's own config: a key of its own beside blockbench's section (only the keys
    # it changes; the schema's defaults fill in the rest)
    host_config = {"samples": ["a", "b"], "blockbench": GRID}
    (host / "config/config.yaml").write_text(yaml.safe_dump(host_config))

    run = snakemake(
        host,
        "--cores",
        "2",
        "--resources",
        "measure_host=1",
        env={"BLOCKBENCH_LOCK": str(tmp_path / "measure.lock")},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert "rule bb_measure:" in run.stdout + run.stderr  # blockbench's rules, renamed

    results = host / "results"
    raw = sorted(
        p.relative_to(host).as_posix() for p in layout.raw_files(results / "raw" / "host-tiny")
    )
    cells = grid.cells(GRID)
    assert raw == sorted(c.path("host-tiny", r) for c in cells for r in range(GRID["repeats"]))
    for path in raw:
        record = json.loads((host / path).read_text())
        assert record["status"] == "ok", path
        assert record["provenance"]["config"]["run_label"] == "host-tiny"
    table = pd.read_csv(results / "tables/measurements.csv")
    assert set(table["run_label"]) == {"host-tiny"}
    assert set(table["workload"]) == {"selu"} and set(table["status"]) == {"ok"}
    for name in figure_names.names(["articles"]):
        for ext in ("png", "svg"):
            assert (results / f"figures/{name}.{ext}").stat().st_size > 1000
    verdicts = pd.read_csv(results / "claims.csv")
    ids = [c.id for c in stages.read_claims(checkout / "config/claims/articles")]
    assert sorted(verdicts["claim_id"]) == sorted(ids)
    assert set(verdicts["run_label"]) == {"host-tiny"}
    assert (host / "summary/claims.md").read_text() == (results / "claims.md").read_text()
    assert (host / "logs/tables.log").exists()
    # nothing was written beside blockbench's own files
    assert not (checkout / "results").exists() and not (checkout / "logs").exists()
    assert not (checkout / ".snakemake").exists()


@pytest.mark.slow
def test_the_module_block_snakedeploy_writes_plans_the_same_grid(tmp_path):
    """snakedeploy copies config/ and profiles/ and writes workflow/Snakefile with a module
    that shares the host's config and keeps the rule names; nested --config values are
    typed as they are when blockbench runs on its own."""
    checkout = blockbench_copy(tmp_path / "blockbench")
    host = tmp_path / "deployed"
    shutil.copytree(ROOT / "config", host / "config")
    shutil.copytree(ROOT / "profiles", host / "profiles")
    (host / "workflow").mkdir()
    (host / "workflow/Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        "module blockbench:\n"
        f'    snakefile:\n        "{checkout}/workflow/Snakefile"\n'
        "    config:\n        config\n\n\n"
        "use rule * from blockbench\n"
    )
    dry = snakemake(host, "-n", "--cores", "4")
    assert dry.returncode == 0, dry.stderr[-3000:]
    counts = dict(
        line.split()[:2]
        for line in dry.stdout.splitlines()
        if line.split()[:1] in (["measure"], ["all"])
    )
    default = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert counts["measure"] == str(first_stage(default))
    assert counts["all"] == "1"
    override = "workloads=[{name: stencil, impls: [loop], sizes: [8], phases: [steady]}]"
    dry = snakemake(host, "-n", "--config", override, "run_label=deployed")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "results/raw/deployed/cpu/stencil/loop/8/0.json" in dry.stdout
    # the same deployed module, parsed by an environment holding Snakemake alone: the module
    # finds blockbench in its checkout's src/, and nothing else (no numpy, no JAX) is needed
    alone = subprocess.run(
        [str(snakemake_only(LOCKED)), "-n", "--cores", "4"],
        cwd=host,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert alone.returncode == 0, alone.stdout[-2000:] + alone.stderr[-2000:]
    listed = dict(
        line.split()[:2] for line in alone.stdout.splitlines() if line.startswith("measure")
    )
    assert listed["measure"] == counts["measure"]


def jobs_environment(path: Path) -> Path:
    """This test's interpreter and packages, without blockbench: a venv whose one .pth names
    the bootstrap's site-packages (whose own .pth files, the editable blockbench among them,
    are then not read)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    (site,) = path.glob("lib/python3*/site-packages")
    (site / "bootstrap.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return path / "bin" / "python"


def git_hosted(
    tmp_path: Path, grid: dict, added: dict[str, str] | None = None
) -> tuple[Path, dict[str, str]]:
    """What snakedeploy writes with --tag: a host whose module is named by host, repository
    and tag. Offline, Snakemake's clone of that repository (its git cache, which it fetches
    only when the tag is missing) is made beforehand from a repository on disk holding
    blockbench and the `added` files, whose working tree then loses src/. Returns the host's
    directory and an environment without PYTHONPATH that finds that clone."""
    repo = blockbench_copy(tmp_path / "blockbench")
    for name, text in (added or {}).items():
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "v"], ["tag", "v1.0"]):
        subprocess.run([*git, *args], check=True)
    shutil.rmtree(repo / "src")
    cache = tmp_path / "cache"
    clone = cache / "snakemake/snakemake/source-cache/snakemake-git-cache/github.com"
    clone = clone / "someone/blockbench"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(clone)], check=True)
    host = tmp_path / "deployed"
    shutil.copytree(ROOT / "config", host / "config")
    (host / "config/config.yaml").write_text(yaml.safe_dump(grid))
    (host / "workflow").mkdir()
    (host / "workflow/Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        "module blockbench:\n"
        "    snakefile:\n"
        '        github("someone/blockbench", path="workflow/Snakefile", tag="v1.0")\n'
        "    config:\n        config\n\n\n"
        "use rule * from blockbench\n"
    )
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    bare["XDG_CACHE_HOME"] = str(cache)
    return host, bare


def parse_alone(host: Path, bare: dict[str, str]) -> subprocess.CompletedProcess:
    """A dry run of the host in an environment of Snakemake alone, which must succeed."""
    dry = subprocess.run(
        [str(snakemake_only(LOCKED)), "-n", "--cores", "4"],
        cwd=host,
        capture_output=True,
        text=True,
        env=bare,
    )
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    return dry


@pytest.mark.slow
def test_a_module_read_from_a_git_repository_brings_its_package_along(tmp_path):
    """The workflow, its parse in an environment of Snakemake alone and its jobs in one
    without blockbench installed all read the package at the tag."""
    host, bare = git_hosted(tmp_path, {**GRID, "run_label": "git"})
    alone = parse_alone(host, bare)
    cells = grid.cells(GRID)
    assert f"measure {len(cells) * GRID['repeats']}" in " ".join(alone.stdout.split())

    python = jobs_environment(tmp_path / "jobs")
    found = subprocess.run([python, "-c", "import blockbench"], capture_output=True, env=bare)
    assert found.returncode != 0  # nothing but the fetched package can serve the jobs
    # up to the claims: the figures' job imports the same fetched package and adds minutes
    target = ["results/claims.csv", "--cores", "2", "--resources", "measure_host=1"]
    run = subprocess.run(
        [python, "-m", "snakemake", *target],
        cwd=host,
        capture_output=True,
        text=True,
        timeout=600,
        env={**bare, "BLOCKBENCH_LOCK": str(tmp_path / "measure.lock")},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    (fetched,) = (host / ".snakemake/blockbench").iterdir()
    assert (fetched / "src/blockbench/measure/parent.py").exists()
    raw = layout.raw_files(host / "results/raw/git")
    assert len(raw) == len(cells) * GRID["repeats"]
    for path in raw:
        record = json.loads(path.read_text())
        assert record["status"] == "ok", path
        source = record["provenance"]["git"]
        assert source == {
            "commit": "v1.0",
            "dirty": False,
            "from": "https://raw.githubusercontent.com/someone/blockbench/v1.0/workflow",
        }
    assert pd.read_csv(host / "results/claims.csv")["run_label"].eq("git").all()


# A workload added to blockbench's own package (a change to blockbench; a user's own goes in a
# catalog, below): one module and nothing else. Its import needs nothing the parse lacks.
NEW_WORKLOAD = '''"""A vector's negation: a workload added after blockbench's."""

from typing import Any

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")


def make_inputs(size: int, rng: Any) -> tuple[Any]:
    return (rng.standard_normal(size, dtype=np.float32),)


def check(inputs: tuple[Any], out: object) -> float:
    return max_rel_err(out, -inputs[0].astype(np.float64))


def negate(x: Any) -> Any:
    return -x


WORKLOADS = (
    Workload(
        "negate",
        "vector length",
        make_inputs,
        check,
        tolerance=1e-6,
        work=float,
        baseline="numpy",
        impls=(Impl("numpy", "numpy", negate, CPU_ONLY),),
    ),
)
'''


@pytest.mark.slow
def test_a_workload_committed_as_one_module_comes_along_with_the_package(tmp_path):
    """No list of the package's files is kept: a module read from git takes every file
    under src/blockbench at the tag, so the config check there knows a workload that is
    one new module, and the fetched package holds it."""
    module = "src/blockbench/workloads/negate.py"
    grid = {
        **GRID,
        "run_label": "git",
        "workloads": [{"name": "negate", "impls": ["numpy"], "sizes": [10]}],
    }
    host, bare = git_hosted(tmp_path, grid, {module: NEW_WORKLOAD})
    dry = parse_alone(host, bare)
    assert "results/raw/git/cpu/negate/numpy/10/0.json" in dry.stdout
    (fetched,) = (host / ".snakemake/blockbench").iterdir()
    assert (fetched / module).read_text() == NEW_WORKLOAD


# A catalog the host keeps in its own repository: its claim and the workload module that claim
# reads, in the shape docs/adding-a-workload.md gives, and no fork of blockbench.
HOST_WORKLOAD = '''"""Negating a float32 vector, two ways: a workload of the host's own catalog."""

from __future__ import annotations

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal(size, dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    return max_rel_err(out, -inputs[0].astype(np.float64))


def negate(x: np.ndarray) -> np.ndarray:
    return -x


def subtract(x: np.ndarray) -> np.ndarray:
    return 0 - x


WORKLOADS = (
    Workload(
        "host_negate",
        "vector length",
        make_inputs,
        check,
        tolerance=1e-6,
        work=float,
        baseline="negate",
        impls=(
            Impl("negate", "numpy", negate, CPU_ONLY),
            Impl("subtract", "numpy", subtract, CPU_ONLY),
        ),
    ),
)
'''
HOST_CLAIM = {
    "id": "H1",
    "slug": "negation-either-way",
    "source": "H: the host's own question",
    "statement": "Both ways of negating a vector run.",
    "parts": [
        {
            "name": "subtract / negate",
            "num": {"device": "cpu", "workload": "host_negate", "impl": "subtract"},
            "den": {"device": "cpu", "workload": "host_negate", "impl": "negate"},
            "size": 1000,
            "holds_if": "> 0",
            "why": "any ratio: the claim is that both run",
            "code": "0 - x  /  -x",
        }
    ],
}


def host_with_its_catalog(tmp_path: Path) -> tuple[Path, Path]:
    """A host repository through the page's module lines, whose blockbench section names
    the host's own catalog (a path relative to the host) as its only one; its grid is that
    catalog's claim alone. Returns the host's directory and blockbench's checkout."""
    checkout = blockbench_copy(tmp_path / "blockbench")
    host = tmp_path / "host"
    catalog = host / "catalogs/mine"
    (catalog / "workloads").mkdir(parents=True)
    (catalog / "claims.yaml").write_text(yaml.safe_dump([HOST_CLAIM], sort_keys=False))
    (catalog / "workloads/host_negate.py").write_text(HOST_WORKLOAD)
    (host / "config").mkdir()
    (host / "Snakefile").write_text(module_block().replace("/path/to/blockbench", str(checkout)))
    section = {
        **GRID,
        "run_label": "host-catalog",
        "claims": ["catalogs/mine"],
        "claim_sizes": "default",
        "workloads": [],
    }
    (host / "config/config.yaml").write_text(yaml.safe_dump({"blockbench": section}))
    return host, checkout


def test_a_host_names_a_catalog_of_its_own_repository_workloads_included(tmp_path):
    """The host's catalog joins through `claims` alone: the parse reads its module from the
    host's repository and plans the cells its claim reads, with blockbench unforked."""
    host, checkout = host_with_its_catalog(tmp_path)
    dry = snakemake(host, "-n", "--cores", "2")
    assert dry.returncode == 0, dry.stderr[-3000:]
    for impl in ("negate", "subtract"):
        assert f"results/raw/host-catalog/cpu/host_negate/{impl}/1000/0.json" in dry.stdout
    assert not list(checkout.rglob("host_negate*"))


@pytest.mark.slow  # a real run: every other one here is marked so too
def test_a_hosts_own_catalog_is_measured_and_judged_through_the_module(tmp_path):
    """The jobs import the host's module from its catalog folder, the claim is judged, and
    the run keeps a copy of the catalog under the host's results."""
    host, checkout = host_with_its_catalog(tmp_path)
    run = snakemake(
        host, "results/claims.csv", "--cores", "2", "--resources", "measure_host=1",
        env={"BLOCKBENCH_LOCK": str(tmp_path / "measure.lock")},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    verdicts = pd.read_csv(host / "results/claims.csv").set_index("claim_id")
    assert list(verdicts.index) == ["H1"]
    assert verdicts.loc["H1", "verdict"] == "reproduced", verdicts.loc["H1"].to_dict()
    assert verdicts.loc["H1", "catalog"] == "mine"
    raw = host / "results/raw/host-catalog"
    records = [json.loads(p.read_text()) for p in layout.raw_files(raw)]
    assert {r["cell"]["impl"] for r in records} == {"negate", "subtract"}
    for record in records:
        assert record["status"] == "ok" and record["workload_source"]["catalog"] == "mine"
    kept = raw / "catalogs/mine/workloads/host_negate.py"
    assert kept.read_text() == HOST_WORKLOAD
    assert not (checkout / "results").exists()
