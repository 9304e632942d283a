"""The tiny grid through a real SLURM, with the project's own profiles/slurm.

Only the local cluster's needs are overridden: no accounting database (so squeue for status,
no account), fast status checks, and exclusive nodes off (one 2-core node would otherwise
run the cells one at a time, which the host lock does anyway).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import slurm_cluster
from tiny import TINY, workflow_copy

from blockbench import figures
from blockbench.claim_rules import load as load_claims

TEST_OVERRIDES = [
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--slurm-no-account",
    # one node: a group of 2 cells asks for 2 CPUs and 2 GB
    "--group-components",
    "measure_cpu=2",
    "--set-resources",
    "measure:mem_mb=1000",
]
# The tiny grid cut to one or two implementations a workload: on a 2-core machine each SLURM
# job pays two Snakemake start-ups (the batch script, then its job step) besides its cell.
GRID = {
    **TINY,
    "workloads": [
        {"name": "matmul", "impls": ["numpy", "jax"], "sizes": [64]},
        {"name": "selu", "impls": ["numpy", "jax_jit"], "sizes": [1000]},
        {"name": "stencil", "impls": ["scan"], "sizes": [4]},
        {"name": "grad_logistic", "impls": ["grad_jit"], "sizes": [100]},
    ],
    "cluster": {"exclusive_cpu": False, "gpu_model": ""},
    "repeats": 1,  # each SLURM job pays two Snakemake start-ups; repeats run in the tiny test
}


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    # outside pytest's private (0700) temporary tree: slurmctld runs as user slurm
    state = Path(tempfile.mkdtemp(prefix="blockbench-slurm-"))
    wf = workflow_copy(tmp_path_factory.mktemp("slurm-wf"), GRID)
    started = time.monotonic()
    try:
        with slurm_cluster.cluster(state) as daemons:
            env = {
                **os.environ,
                "BLOCKBENCH_LOCK": str(wf / "measure.lock"),
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            }
            cmd = [
                "timeout",
                "-k",
                "10",
                "270",
                sys.executable,
                "-m",
                "snakemake",
                "--workflow-profile",
                "profiles/slurm",
                "--configfile",
                "tiny.yaml",
                *TEST_OVERRIDES,
            ]
            run = subprocess.run(cmd, cwd=wf, env=env, capture_output=True, text=True)
            pids = [d.pid for d in daemons]
    except slurm_cluster.Unavailable as why:
        if os.environ.get("BLOCKBENCH_REQUIRE_SLURM"):
            pytest.fail(f"SLURM is required here (BLOCKBENCH_REQUIRE_SLURM) but: {why}")
        pytest.skip(f"no SLURM on this machine: {why}")
    finally:
        if (state / "log").exists():
            shutil.copytree(state / "log", wf / "slurm-log", dirs_exist_ok=True)
        shutil.rmtree(state, ignore_errors=True)
    (wf / "snakemake.out").write_text(run.stdout + run.stderr)
    return {
        "wf": wf,
        "run": run,
        "pids": pids,
        "seconds": time.monotonic() - started,
        "state": state,
    }


def records(wf: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (wf / "results/raw").rglob("*.json")]


@pytest.mark.slurm
def test_workflow_completes_on_slurm_within_five_minutes(slurm_run):
    run = slurm_run["run"]
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    assert slurm_run["seconds"] < 300


@pytest.mark.slurm
def test_every_cpu_cell_ran_inside_a_slurm_job_and_is_ok(slurm_run):
    cpu = [r for r in records(slurm_run["wf"]) if r["cell"]["device"] == "cpu"]
    assert cpu
    for r in cpu:
        assert r["status"] == "ok", (r["cell"], r["reason"])
        slurm = r["provenance"]["slurm"]
        assert slurm and slurm["job_id"].isdigit() and slurm["node"]
        # NumPy and XLA used the cores the job step granted, not Snakemake's threads=1
        threads = r["provenance"]["threads"]
        assert threads["parity"] and threads["blas_threads"] == threads["n_cores"], threads


@pytest.mark.slurm
def test_gpu_cells_requested_a_gpu_and_came_back_unavailable(slurm_run):
    gpu = [r for r in records(slurm_run["wf"]) if r["cell"]["device"] == "gpu"]
    assert gpu
    for r in gpu:
        assert r["status"] == "unavailable"
        assert "no gpu device: JAX sees only cpu:0" in r["reason"]
        slurm = r["provenance"]["slurm"]
        # the GPU that SLURM granted (a generic resource with no hardware behind it)
        assert slurm["job_id"].isdigit() and slurm.get("gpus_on_node") == "1", slurm
    cpu = [r for r in records(slurm_run["wf"]) if r["cell"]["device"] == "cpu"]
    assert not any(r["provenance"]["slurm"].get("gpus_on_node") for r in cpu)  # only GPU cells


@pytest.mark.slurm
def test_tables_figures_and_claims_were_produced(slurm_run):
    wf = slurm_run["wf"]
    assert (wf / "results/tables/measurements.parquet").exists()
    for name in figures.NAMES:
        assert (wf / f"results/figures/{name}.png").exists()
    claims = pd.read_csv(wf / "results/claims.csv").set_index("claim_id")
    assert len(claims) == len(load_claims(wf / "config/claims.yaml"))
    assert claims.loc["B1", "verdict"] == "not_run"
    assert "no gpu device" in claims.loc["B1", "note"]


@pytest.mark.slurm
def test_every_daemon_started_is_stopped(slurm_run):
    for pid in slurm_run["pids"]:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        ), pid
