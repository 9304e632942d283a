"""The tiny grid through a real SLURM that confines jobs like a production cluster, with the
project's own profiles/slurm, and the checks made before a SLURM run submits anything.

The cluster binds every job step to its CPUs (task/affinity, and task/cgroup where this
machine allows it) and has typed GPUs (gpu:h100) with no hardware behind them. Only the
local cluster's needs are overridden: fast status checks, and GPU jobs that share the node
(exclusive_gpu off, 1 CPU each), so that two of them run at once and the per-node lock is
what keeps their measurements apart.
"""

import itertools
import json
import os
import re
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

from blockbench.measure import parent, provenance
from blockbench.pipeline import cluster
from blockbench.pipeline.stages import read_claims
from blockbench.present import figure_names

TEST_OVERRIDES = ["--slurm-init-seconds-before-status-checks", "2"]
# The tiny grid cut to two blocks and one lone cell: on a 2-core machine each SLURM job pays
# two Snakemake start-ups (the batch script, then its job step) besides its cell.
CLUSTER = {
    "account": "none",  # no accounting database here
    "gpu_model": slurm_cluster.GPU_MODEL,
    "gpu_cpus": 1,
    "exclusive_gpu": False,
}
GRID = {
    **TINY,
    "workloads": [
        {"name": "matmul", "impls": ["numpy", "jax"], "sizes": [64]},
        {"name": "selu", "impls": ["numpy", "jax_jit"], "sizes": [1000]},
        {"name": "grad_logistic", "impls": ["grad_jit"], "sizes": [100]},
    ],
    "cluster": CLUSTER,
    "repeats": 1,  # each SLURM job pays two Snakemake start-ups; repeats run in the tiny test
}
CHECKED = {**GRID, "check_gpu": True}
# A run whose jobs land on two kinds of node (tests/two_node_kinds: an even job id passes for a
# node of another CPU model): a block of two cells over two rounds and a lone cell.
TWO_KINDS = {
    **TINY,
    "devices": ["cpu"],
    "workloads": [
        {"name": "matmul", "impls": ["numpy", "jax"], "sizes": [64]},
        {"name": "stencil", "impls": ["scan"], "sizes": [4]},
    ],
    "cluster": CLUSTER,
    "repeats": 2,
}
TWO_KINDS_SITE = Path(__file__).parent / "two_node_kinds"
GPU_CELL = "results/raw/tiny/gpu/selu/jax_jit/1000/0.json"


def snakemake(
    wf: Path, *args: str, limit_s: int = 270, site: Path | None = None
) -> subprocess.CompletedProcess:
    """Snakemake with the project's SLURM profile; `site`: a folder of a sitecustomize that
    every Python process of the run loads."""
    # never BLOCKBENCH_LOCK: the jobs must find each other through cluster.lock_dir
    env = {k: v for k, v in os.environ.items() if k != "BLOCKBENCH_LOCK"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    cmd = ["timeout", "-k", "10", str(limit_s), sys.executable, "-m", "snakemake"]
    cmd += ["--workflow-profile", "profiles/slurm", *args]
    return subprocess.run(cmd, cwd=wf, env=env, capture_output=True, text=True)


def jobcomp(path: Path) -> dict[str, dict[str, str]]:
    """SLURM's record of every finished job (JobCompType=jobcomp/filetxt), by job id."""
    jobs = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        jobs[fields["JobId"]] = fields
    return jobs


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    # outside pytest's private (0700) temporary tree: slurmctld runs as user slurm
    state = Path(tempfile.mkdtemp(prefix="blockbench-slurm-"))
    wf = workflow_copy(tmp_path_factory.mktemp("slurm-wf"), GRID)
    started = time.monotonic()
    try:
        with slurm_cluster.cluster(state) as running:
            run = snakemake(wf, "--configfile", "tiny.yaml", *TEST_OVERRIDES)
            seconds = time.monotonic() - started
            jobs = jobcomp(state / "log" / "jobcomp.txt")
            # a GPU cell behind the check a run's GPU cells wait for: one GPU job, no cell
            gpu_check = workflow_copy(tmp_path_factory.mktemp("slurm-gpu-check"), CHECKED)
            checked = snakemake(gpu_check, GPU_CELL, "--configfile", "tiny.yaml", *TEST_OVERRIDES)
            jobs_checked = jobcomp(state / "log" / "jobcomp.txt")
            # the same grid with no account set, asking for groups of cells, must stop
            # before submitting anything, naming both
            unset = {**GRID, "cluster": {k: v for k, v in CLUSTER.items() if k != "account"}}
            refused = snakemake(
                workflow_copy(tmp_path_factory.mktemp("slurm-no-account"), unset),
                "--configfile",
                "tiny.yaml",
                "--group-components",
                "measure_cpu=2",
            )
            jobs_after = jobcomp(state / "log" / "jobcomp.txt")
            two_kinds = workflow_copy(tmp_path_factory.mktemp("slurm-two-kinds"), TWO_KINDS)
            mixed = snakemake(
                two_kinds, "--configfile", "tiny.yaml", *TEST_OVERRIDES, site=TWO_KINDS_SITE
            )
            queued = subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout
            cpus = int(re.search(r"CPUs=(\d+)", slurm_cluster.node_line()).group(1))
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
        "seconds": seconds,
        "pids": [d.pid for d in running.procs],
        "cluster": running,
        "node_cpus": cpus,
        "jobs": jobs,
        "checked": checked,
        "checked_wf": gpu_check,
        "jobs_checked": {k: v for k, v in jobs_checked.items() if k not in jobs},
        "jobs_before_refusal": jobs_checked,
        "refused": refused,
        "jobs_after_refusal": jobs_after,
        "queued_after_refusal": queued,
        "two_kinds": two_kinds,
        "mixed": mixed,
    }


def records(wf: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (wf / "results/raw").glob("*/*/*/*/*/*.json")]


@pytest.mark.slurm
def test_workflow_completes_on_slurm_within_five_minutes(slurm_run):
    run = slurm_run["run"]
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    assert slurm_run["seconds"] < 300


@pytest.mark.slurm
def test_the_cluster_confines_job_steps_to_their_cpus(slurm_run):
    running = slurm_run["cluster"]
    assert "task/affinity" in running.task_plugin
    # cgroups as well where this machine allows slurmd to make them
    assert ("task/cgroup" in running.task_plugin) == (running.cgroups_unavailable is None)
    print(f"\nTaskPlugin={running.task_plugin}; cgroups: {running.cgroups_unavailable or 'on'}")


@pytest.mark.slurm
def test_every_cpu_cell_ran_on_every_cpu_of_its_node_numpy_and_xla_alike(slurm_run):
    """Exclusive node, no --cpus-per-task: the step has every CPU of the node, whatever the
    group; the cell's affinity, NumPy's BLAS pool and XLA's pool all equal that count."""
    cpu = [r for r in records(slurm_run["wf"]) if r["cell"]["device"] == "cpu"]
    n = slurm_run["node_cpus"]
    assert len(cpu) == 5
    seen = []
    for r in cpu:
        assert r["status"] == "ok", (r["cell"], r["reason"])
        slurm, threads = r["provenance"]["slurm"], r["provenance"]["threads"]
        assert slurm["job_id"].isdigit() and slurm["node"] and slurm["step_id"].isdigit()
        granted = slurm["granted"]["step_cpus"]  # scontrol show step: SLURM's own word
        assert granted == n and threads["granted"] == n, slurm
        assert threads["cores"] == list(range(n)), threads  # the affinity the step was bound to
        if slurm_run["cluster"].cgroups_unavailable is None:  # and its cpuset
            assert f"/job_{slurm['job_id']}/step_{slurm['step_id']}" in slurm["cgroup"], slurm
        assert threads["blas_threads"] == n, threads
        assert threads["xla_threads"] in (None, n), threads  # None: no XLA pool (NumPy cell)
        assert threads["parity"], threads
        assert not [w for w in r["warnings"] if w.startswith("thread parity")], r["warnings"]
        seen.append((r["cell"]["impl"], threads["n_cores"], threads["blas_threads"]))
        if r["cell"]["impl"] != "numpy":
            assert threads["xla_threads"] == n, threads
    print(f"\nCPU cells (impl, cores, BLAS threads) on a {n}-CPU node: {sorted(seen)}")


@pytest.mark.slurm
def test_a_block_rounds_cpu_cells_are_one_job_and_a_lone_cell_a_job_of_its_own(slurm_run):
    """A block's round (the cells a claim divides by each other) is one chain of the DAG, so one
    SLURM job on one node, with the sum of its cells' budgets as the time limit; each lone cell
    is a job of its own (the profile's group-components: 1)."""
    recs = records(slurm_run["wf"])
    by_job: dict[str, list[tuple[str, str]]] = {}
    for r in recs:
        if r["cell"]["device"] == "cpu":
            block = r["provenance"]["config"]["block"]
            by_job.setdefault(r["provenance"]["slurm"]["job_id"], []).append(
                (block, r["cell"]["impl"])
            )
    # every job SLURM ran left its cells' files: none measured again by a job regrouped
    # when the checkpoint updated the plan (Snakemake's issue #1628)
    recorded = {r["provenance"]["slurm"]["job_id"] for r in recs}
    assert recorded == set(slurm_run["jobs"]), (recorded, sorted(slurm_run["jobs"]))
    impls = sorted(sorted(impl for _, impl in cells) for cells in by_job.values())
    assert impls == [["grad_jit"], ["jax", "numpy"], ["jax_jit", "numpy"]], by_job
    for job, cells in by_job.items():
        assert len({block for block, _ in cells}) == 1, cells  # one block, or one lone cell
        done = slurm_run["jobs"][job]
        assert int(done["TimeLimit"]) == len(cells) * cluster.runtime_min(GRID["budget_s"]), done
        assert int(done["ProcCnt"]) == slurm_run["node_cpus"], done  # the whole node


@pytest.mark.slurm
def test_gpu_cells_got_the_gpu_model_and_the_cpus_they_asked_for(slurm_run):
    gpu = [r for r in records(slurm_run["wf"]) if r["cell"]["device"] == "gpu"]
    assert gpu
    for r in gpu:
        assert r["status"] == "unavailable"
        assert "no gpu device: JAX sees only cpu:0" in r["reason"]
        slurm = r["provenance"]["slurm"]
        # the typed GPU that SLURM granted (a generic resource with no hardware behind it)
        assert slurm["granted"]["job_gres"] == f"gpu:{slurm_cluster.GPU_MODEL}:1", slurm
        assert slurm["gpus_on_node"] == "1", slurm
        want = CLUSTER["gpu_cpus"]
        assert slurm["granted"]["step_cpus"] == want == int(slurm["cpus_on_node"]), slurm
        assert r["provenance"]["host"]["cpu_affinity"] == want  # bound to them
        if slurm_run["cluster"].cgroups_unavailable is None:
            assert f"/job_{slurm['job_id']}/step_{slurm['step_id']}" in slurm["cgroup"], slurm
    granted = sorted({r["provenance"]["slurm"]["granted"]["node_gres"] for r in gpu})
    print(f"\nGPU cells granted: {granted}")
    cpu = [r for r in records(slurm_run["wf"]) if r["cell"]["device"] == "cpu"]
    assert not any(r["provenance"]["slurm"].get("gpus_on_node") for r in cpu)  # only GPU cells


@pytest.mark.slurm
def test_a_gpu_node_without_a_driver_is_found_in_one_short_gpu_job(slurm_run):
    """With check_gpu (the default), the check is the one job submitted before a GPU cell;
    it ends with its one line, and no GPU cell is submitted."""
    assert slurm_run["checked"].returncode != 0
    (job,) = slurm_run["jobs_checked"].values()  # the check, and nothing after it
    assert job["JobState"] == "FAILED" and int(job["TimeLimit"]) == 10, job
    log = (slurm_run["checked_wf"] / "logs/gpu_ready/tiny.log").read_text()
    assert log.startswith("GPU not ready: no driver: nvidia-smi is not on PATH"), log
    assert not (slurm_run["checked_wf"] / "results/raw/tiny/gpu").exists()


@pytest.mark.slurm
def test_no_two_measurements_overlapped_though_jobs_did(slurm_run):
    """GPU jobs share the node here (exclusive_gpu off): the per-node lock in the workflow's
    directory, seen by every job, is what keeps their measurements apart."""
    wf, node = slurm_run["wf"], slurm_run["cluster"].node
    recs = sorted(records(wf), key=lambda r: r["started_at"])
    lock = wf / ".snakemake/blockbench-locks" / f"{node}.lock"
    assert lock.exists()
    assert {r["provenance"]["config"]["lock"] for r in recs} == {str(lock)}
    for before, after in itertools.pairwise(recs):
        assert before["finished_at"] <= after["started_at"], (before["cell"], after["cell"])


@pytest.mark.slurm
def test_a_run_with_no_account_set_stops_before_submitting(slurm_run):
    refused = slurm_run["refused"]
    assert refused.returncode != 0
    said = refused.stdout + refused.stderr
    assert "cluster.account is not set" in said and "issue #1628" in said
    assert slurm_run["jobs_after_refusal"].keys() == slurm_run["jobs_before_refusal"].keys()
    assert not slurm_run["queued_after_refusal"].strip()


@pytest.mark.slurm
def test_a_run_placed_on_two_kinds_of_node_measures_on_the_first_kind_alone(slurm_run):
    """Jobs on the other kind measure nothing and fail, each with its one line naming both
    kinds; a block's round is one job, so its cells are measured together or not at all."""
    wf, mixed = slurm_run["two_kinds"], slurm_run["mixed"]
    assert mixed.returncode != 0
    kept = records(wf)
    assert kept and len({r["provenance"]["host"]["cpu_model"] for r in kept}) == 1
    cells = [("matmul", "numpy", 64), ("matmul", "jax", 64), ("stencil", "scan", 4)]
    refused, held = [], []
    for (workload, impl, size), r in itertools.product(cells, range(TWO_KINDS["repeats"])):
        where = f"tiny/cpu/{workload}/{impl}/{size}/{r}"
        if (wf / f"results/raw/{where}.json").exists():
            continue
        log = wf / f"logs/measure/{where}.log"
        said = log.read_text() if log.exists() else ""
        if said:
            assert "not measuring: this host (" in said, said
            assert "is not the kind run tiny began on" in said, said
            refused.append(where)
        else:  # never started: its job stopped at the round's first cell, or never went out
            held.append(where)
    assert refused, "no job landed on the other kind"
    for r in range(TWO_KINDS["repeats"]):  # the block's round: both cells or neither
        raw = wf / "results/raw/tiny/cpu/matmul"
        assert len({(raw / f"{impl}/64/{r}.json").exists() for impl in ("numpy", "jax")}) == 1
    print(f"\nrefused on the other kind of node: {refused}; not started: {held}")


@pytest.mark.slurm
def test_tables_figures_and_claims_were_produced(slurm_run):
    wf = slurm_run["wf"]
    assert (wf / "results/tables/measurements.parquet").exists()
    for name in figure_names.names(["articles"]):
        assert (wf / f"results/figures/{name}.png").exists()
    claims = pd.read_csv(wf / "results/claims.csv").set_index("claim_id")
    assert len(claims) == len(read_claims(wf / "config/claims/articles"))
    assert claims.loc["B1", "verdict"] == "not_run"
    assert "no gpu device" in claims.loc["B1", "note"]


@pytest.mark.slurm
def test_every_daemon_started_is_stopped_and_every_cgroup_removed(slurm_run):
    for pid in slurm_run["pids"]:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        ), pid
    assert not list(slurm_cluster.CGROUP_V1.glob("slurm*"))


# The checks before a SLURM run submits anything, one setting at a time (no cluster needed).
GOOD = {"account": "proj", "exclusive_cpu": True, "cpus": None}


def problems(cluster_cfg=GOOD, **kw):
    args = {
        "cores": 1,
        "group_components": 1,
        "status_command": "squeue",
        "init_seconds": 40,
        "guess_account": lambda: None,
        "min_job_age": lambda: 300,
        "sacct_available": lambda: True,
        "sacct_works": lambda: True,
        **kw,
    }
    return cluster.problems(cluster_cfg, **args)


def test_a_complete_slurm_setup_has_no_problems():
    assert problems() == []
    assert problems({**GOOD, "account": "none"}) == []  # where the plugin finds nothing to guess
    assert problems({**GOOD, "exclusive_cpu": False, "cpus": 8}) == []
    assert problems(status_command="sacct") == []


@pytest.mark.parametrize(
    ("cluster_cfg", "kw", "says"),
    [
        ({**GOOD, "account": None}, {}, "cluster.account is not set"),
        ({**GOOD, "account": "none"}, {"guess_account": lambda: "other"}, "would charge 'other'"),
        ({**GOOD, "exclusive_cpu": False}, {}, "needs cluster.exclusive_cpu"),
        (GOOD, {"cores": None}, "`cores` is not set"),
        (GOOD, {"group_components": 2}, "issue #1628"),
        (GOOD, {"status_command": "sacct", "sacct_works": lambda: False}, "squeue"),
        # squeue with MinJobAge under 3 x init: the plugin switches to sacct by itself
        (GOOD, {"min_job_age": lambda: 60, "sacct_works": lambda: False}, "MinJobAge >= 180"),
        (GOOD, {"min_job_age": lambda: 150}, "MinJobAge=150 s"),
    ],
)
def test_each_missing_slurm_setting_is_named_before_submitting(cluster_cfg, kw, says):
    found = problems(cluster_cfg, **kw)
    assert len(found) == 1 and says in found[0], found


def test_the_account_resource_is_the_configured_account_or_nothing():
    assert cluster.account({"account": "proj"}) == "proj"
    assert cluster.account({"account": 12345}) == "12345"
    assert cluster.account({"account": "none"}) == cluster.account({"account": None}) == ""


def test_a_cells_runtime_is_its_budget_and_start_up_in_whole_minutes():
    assert cluster.runtime_min(300) == 10
    assert cluster.runtime_min(3600) == 65
    assert cluster.runtime_min(3601) == 66


def test_inside_a_slurm_job_the_lock_is_the_nodes_file_in_the_cluster_lock_dir(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("BLOCKBENCH_LOCK", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    shared = tmp_path / "locks"
    assert parent.lock_path(None, shared) == parent.default_lock_path()  # not in SLURM
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu042")
    assert parent.lock_path(None, shared) == shared / "gpu042.lock"
    assert parent.lock_path(tmp_path / "x.lock", shared) == tmp_path / "x.lock"
    monkeypatch.setenv("BLOCKBENCH_LOCK", str(tmp_path / "env.lock"))
    assert parent.lock_path(None, shared) == tmp_path / "env.lock"


def test_a_cell_on_more_cores_than_slurm_granted_its_step_is_flagged(monkeypatch):
    """Where the cluster binds nothing (TaskPlugin=task/none), the affinity is the whole
    node while the step was granted fewer CPUs: the libraries agree with the affinity, but
    the cell is flagged."""
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "1")
    threads = provenance.threads((0, 1), None)
    assert threads["granted"] == 1
    assert not threads["parity"] and "SLURM granted the job step CPUs: 1" in threads["mismatch"]
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "2")
    assert provenance.threads((0, 1), None)["granted"] == 2
    monkeypatch.delenv("SLURM_JOB_ID")
    assert provenance.threads((0, 1), None)["granted"] is None


# A catalog that declares workloads must be where the nodes see it (cluster.catalog_problem)
MOUNTINFO = r"""22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:40 / /home rw,relatime shared:20 - nfs4 srv:/home rw,vers=4.2
41 22 0:41 / /scratch rw,nosuid - tmpfs tmpfs rw,size=1g
42 41 0:42 / /scratch/my\040data rw,relatime master:3 - lustre 10.0.0.1@tcp:/fs rw
43 41 0:43 / /scratch rw,relatime - xfs /dev/sdb1 rw
"""


def test_a_catalog_on_the_working_directorys_filesystem_passes(tmp_path):
    catalog = tmp_path / "mycatalog"
    catalog.mkdir()
    assert cluster.catalog_problems(catalogs=[catalog], workdir=tmp_path) == []  # the real st_dev
    # the same device is enough, whatever the type of its filesystem
    local = {"filesystem": lambda p: ("ext4", "/"), "same_device": lambda a, b: True}
    assert cluster.catalog_problems(catalogs=[catalog], workdir=tmp_path, **local) == []


def test_a_catalog_on_a_local_filesystem_elsewhere_is_named_before_submitting():
    catalog = Path("/dev/shm/mycatalog")
    found = cluster.catalog_problems(
        catalogs=[catalog, Path("/home/me/shared")],
        workdir=Path("/home/me/run"),
        filesystem=lambda p: ("tmpfs", "/dev/shm") if p == catalog else ("nfs4", "/home"),
        same_device=lambda a, b: False,
    )
    assert len(found) == 1, found
    assert str(catalog) in found[0] and "tmpfs" in found[0] and "/dev/shm" in found[0]
    assert "shared filesystem" in found[0]


def test_a_catalog_on_a_network_filesystem_passes():
    for fstype in ("nfs", "lustre", "fuse.glusterfs"):
        assert not cluster.catalog_problems(
            catalogs=[Path("/home/me/catalog")],
            workdir=Path("/local/run"),
            filesystem=lambda p, t=fstype: (t, "/home"),
            same_device=lambda a, b: False,
        )


def test_a_paths_filesystem_is_that_of_the_longest_mount_point_holding_it():
    assert cluster.mounts(MOUNTINFO)[3] == (Path("/scratch/my data"), "lustre")
    assert cluster.filesystem_of(Path("/home/me/cat"), MOUNTINFO) == ("nfs4", "/home")
    assert cluster.filesystem_of(Path("/homework"), MOUNTINFO) == ("ext4", "/")
    assert cluster.filesystem_of(Path("/scratch/my data/c"), MOUNTINFO) == (
        "lustre",
        "/scratch/my data",
    )
    # the later of two mounts on one point is the one seen
    assert cluster.filesystem_of(Path("/scratch/c"), MOUNTINFO) == ("xfs", "/scratch")
    assert cluster.filesystem_of(Path("/x"), "garbage\n") == ("unknown", "?")
    fstype, point = cluster.filesystem_of(Path.cwd())  # this machine's /proc/self/mountinfo
    assert fstype != "unknown" and Path.cwd().resolve().is_relative_to(point)
