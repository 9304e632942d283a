"""The GPU kit on the CPU: its plan is the workflow's, its quick grid fits a short GPU session,
it stops before the grid where the GPU is not ready, and it measures, decides rounds,
resumes and packs a run."""

import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from tiny import workflow_copy

from blockbench.judge import aggregate, claim_rules
from blockbench.judge.articles import load as load_articles
from blockbench.measure import gpu_ready
from blockbench.records import layout, store
from blockbench.run import gpu_kit, grid
from blockbench.run.run_plan import Job

ROOT = Path(__file__).resolve().parents[1]
GPU_CLAIMS = ("B1", "B2", "C2", "C3", "C5", "C6")


def gpu_parts() -> list[tuple[str, list[tuple[str, str, str]], int | None]]:
    """(claim, its terms as (device, workload, impl), size or None for a trend) of every
    part of a GPU claim that has a GPU term."""
    claims = claim_rules.load(
        ROOT / "config/claims.yaml", load_articles(ROOT / "config/articles.yaml")
    )
    out = []
    for claim in (c for c in claims if c["id"] in GPU_CLAIMS):
        for part in claim["parts"]:
            terms = [
                (t["device"], t["workload"], t["impl"])
                for side in ("num", "den")
                for t in (part[side] if isinstance(part[side], list) else [part[side]])
            ]
            if any(device == "gpu" for device, _, _ in terms):
                out.append((claim["id"], terms, part.get("size")))
    return out


def test_the_quick_grid_plans_every_gpu_part_in_three_rounds_at_full_float32():
    config = gpu_kit.load_config()
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(config, schema)
    plan = gpu_kit.run_plan(config)
    parts = gpu_parts()
    assert {claim for claim, _, _ in parts} == set(GPU_CLAIMS)
    for claim, terms, size in parts:
        for kind in terms:
            cells = [c for c in plan.cells if (c.device, c.workload, c.impl) == kind]
            sizes = {c.size for c in cells}
            assert (size in sizes) if size else len(sizes) >= 3, (claim, kind, size)
            assert all(plan.first[c] >= 3 for c in cells), (claim, kind)
    # a trend's numerator and denominator at the same sizes, so each size has a ratio
    for _, terms, size in parts:
        if size is None:
            sizes = [
                {c.size for c in plan.cells if (c.device, c.workload, c.impl) == k} for k in terms
            ]
            assert len(set.intersection(*sizes)) >= 3
    # no TF32: the articles' T4 and NumPy computed float32
    assert config["matmul_precision"] == "highest"
    # nothing a GPU part does not use, on the GPU
    used = {kind for _, terms, _ in parts for kind in terms}
    assert all((c.device, c.workload, c.impl) in used for c in plan.cells if c.device == "gpu")


def dry_run_lines(*args: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gpu_run.py"), "--dry-run", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_the_quick_dry_run_fits_its_first_stage_in_7_minutes_and_the_command_in_9():
    lines = dry_run_lines()
    listed = {tuple(line.split()[:4]) for line in lines[1:] if line.startswith(("cpu ", "gpu "))}
    for _, terms, size in gpu_parts():
        if size:
            assert all((d, w, i, str(size)) in listed for d, w, i in terms)
    rounds = [int(line.split()[4]) for line in lines[1:] if line.startswith(("cpu ", "gpu "))]
    assert min(rounds) >= 3
    said = lines[-1]
    assert "on one H100 and 16 CPU cores" in said
    first = float(re.search(r"first stage ([\d.]+) min", said).group(1))
    both = float(re.search(r"the two ([\d.]+) min", said).group(1))
    whole = float(re.search(r"\(([\d.]+) min in all\)", said).group(1))
    assert first <= 7.0 and both <= whole <= 9.0, said


def test_the_full_gpu_grid_stays_for_a_longer_session():
    lines = dry_run_lines("--config", str(ROOT / "config/gpu.yaml"))
    assert "stencil" not in "\n".join(lines) and "first stage" in lines[-1]


def measure_jobs_in_priority_order(dry_run: str, label: str) -> list[str]:
    """The measure jobs `snakemake -n --verbose` lists, by the priority it gives each."""
    jobs = []
    for block in dry_run.split("\n\n"):
        rule = re.search(r"rule (measure\w*):", block)
        output = re.search(r"output: (\S+)", block)
        priority = re.search(r"priority: (\d+)", block)
        if rule and output and output.group(1).startswith(f"results/raw/{label}/"):
            jobs.append((-int(priority.group(1)) if priority else 0, output.group(1)))
    return [path for _, path in sorted(jobs)]


@pytest.mark.parametrize("config_file", ["gpu-quick.yaml", "gpu.yaml"])
def test_the_kit_plans_the_processes_the_workflow_lists_in_the_same_order(tmp_path, config_file):
    """One run plan: the first stage of `snakemake -n` is the kit's, job for job, and
    Snakemake's priorities order it as the kit measures it."""
    wf = workflow_copy(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            *("snakemake", "-n", "--verbose", "--cores", "4", "--configfile"),
            f"config/{config_file}",
        ],
        cwd=wf,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    config = gpu_kit.load_config(ROOT / "config" / config_file)
    kit = [job.path(config["run_label"]) for job in gpu_kit.run_plan(config).jobs()]
    assert measure_jobs_in_priority_order(done.stdout, config["run_label"]) == kit


def tiny_config(**changes) -> dict:
    """A few cells of each kind at tiny sizes and budgets: the kit's behaviour, not numbers."""
    config = gpu_kit.load_config()
    config |= {
        "run_label": "kit-test",
        "repeats": 2,
        "max_rounds": 3,
        "budget_s": 120,
        "check_gpu": False,
        "between_run": "no-studies",
        "sampling": {"min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.05},
        "workloads": [
            {"name": "matmul", "devices": ["cpu"], "impls": ["numpy", "jax_jit"], "sizes": [32]},
            {"name": "selu", "devices": ["gpu"], "impls": ["jax"], "sizes": [1000]},
        ],
    }
    config |= changes
    grid.check(config)
    return config


def test_the_kit_stops_before_the_grid_with_one_line_where_gpu_ready_fails(tmp_path, monkeypatch):
    said = []
    monkeypatch.setattr(gpu_ready, "check", lambda: (gpu_ready.Facts(), "no driver: test"))
    code = gpu_kit.run(
        tiny_config(check_gpu=True), tmp_path / "out", root=tmp_path, say=said.append
    )
    assert code == gpu_kit.EXIT_NOT_READY
    assert said == ["GPU not ready: no driver: test"]
    assert not (tmp_path / "results").exists() and not (tmp_path / "out").exists()


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a driver")
def test_on_a_machine_without_a_gpu_the_quick_kit_says_why_in_one_line_and_measures_nothing(
    tmp_path,
):
    work = tmp_path / "checkout"
    for name in ("src", "config", "scripts"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, str(work / "scripts/gpu_run.py"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == gpu_kit.EXIT_NOT_READY
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("GPU not ready: "), lines
    assert "Traceback" not in done.stderr
    assert not (work / "results").exists()


def test_the_kit_measures_decides_resumes_and_packs_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKBENCH_LOCK", str(tmp_path / "lock"))
    config, out, device = tiny_config(), tmp_path / "out", tmp_path / "device"
    plan = gpu_kit.run_plan(config)
    assert gpu_kit.run(config, out, root=device) == 0
    archive = out / "kit-test.tar.gz"
    with tarfile.open(archive) as tar:
        names = {m.name for m in tar.getmembers()}
    assert all(n.startswith("kit-test/") for n in names)
    assert {"kit-test/kit.json", "kit-test/rounds.json", "kit-test/host_kind.json"} <= names

    home = tmp_path / "home"
    raw = gpu_kit.unpack(archive, home)
    records = [store.read_json(f) for f in layout.raw_files(raw)]
    for record in records:
        if record["cell"]["device"] == "gpu":
            assert record["status"] == "unavailable" and "gpu" in record["reason"]
        else:
            assert record["status"] == "ok" and record["phases"]["steady"]["n"] >= 3
    aggregate.measurements(layout.raw_files(raw))  # the import validates every file
    manifest = store.read_json(raw / gpu_kit.MANIFEST)
    decision = manifest["decision"]
    assert manifest["complete"] and manifest["schema_validated"] is True
    # the decision as measured: every process it counts exists, and judging at home reads it
    measured = {(r["cell"]["device"], r["cell"]["impl"], r["repeat"]) for r in records}
    for key, rounds in decision["rounds"].items():
        cell = plan.cell(key)
        assert {(cell.device, cell.impl, r) for r in range(rounds)} <= measured
        assert rounds <= decision["asked"][key]
    assert store.read_json(raw / "rounds.json") == decision

    # a second part measures only what is missing, and says how long it took
    lost = device / Job(grid.Cell("cpu", "matmul", "numpy", 32), 0).path("kit-test")
    lost.unlink()
    assert gpu_kit.run(config, out, root=device) == 0
    parts = store.read_json(device / "results/raw/kit-test/kit.json")["parts"]
    assert parts[-1]["processes"] == 1 and parts[-1]["seconds"] > 0 and lost.exists()

    # a part with no time left measures nothing, packs what there is and asks to be rerun;
    # a fresh machine goes on from the archive
    fresh, again = tmp_path / "fresh", tmp_path / "again"
    assert gpu_kit.run(config, fresh, root=fresh, part_s=0) == gpu_kit.EXIT_MORE_PARTS
    assert not layout.raw_files(fresh / "results/raw/kit-test")
    assert gpu_kit.run(config, again, root=again, part_s=0, resume=archive) == 0


def test_a_part_resumed_on_another_kind_of_host_stops_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKBENCH_LOCK", str(tmp_path / "lock"))
    config = tiny_config(
        workloads=[{"name": "selu", "devices": ["cpu"], "impls": ["numpy"], "sizes": [1000]}]
    )
    raw = tmp_path / "results/raw/kit-test"
    raw.mkdir(parents=True)
    (raw / "host_kind.json").write_text(
        '{"hostname": "elsewhere", "cpu_model": "Made-up CPU", "cpus": 999}'
    )
    said = []
    code = gpu_kit.run(config, tmp_path / "out", root=tmp_path, say=said.append)
    assert code == 69 and said[-1].startswith("stopped: this machine is not the kind")
    assert not layout.raw_files(raw)
