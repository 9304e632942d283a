"""The GPU kit on the CPU: its plan is the workflow's, its quick grid fits a short GPU session,
it stops before the grid where the GPU is not ready, and it measures, decides rounds,
resumes and packs a run."""

import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pandas as pd
import pytest
import yaml
from fake_gpu import image_env
from tiny import workflow_copy

from blockbench.judge import aggregate, claim_rules
from blockbench.judge.claim import Term
from blockbench.measure import gpu_ready
from blockbench.pipeline import gpu_kit, grid, kit_archive, kit_config, kit_estimate, run_order
from blockbench.pipeline.run_plan import Job
from blockbench.records import layout, store
from blockbench.records.layout import Cell

ROOT = Path(__file__).resolve().parents[1]
GPU_CLAIMS = ("B1", "B2", "C2", "C3", "C5", "C6")


def gpu_parts() -> list[tuple[str, list[tuple[str, str, str]], int | None]]:
    """(claim, its terms as (device, workload, impl), size or None for a trend) of every
    part of a GPU claim that has a GPU term."""
    claims = claim_rules.read_claims(ROOT / "config/claims/articles")
    out = []
    for claim in (c for c in claims if c.id in GPU_CLAIMS):
        for part in claim.parts:
            terms = [t.cell for t in (*part.num, *part.den)]
            if any(device == "gpu" for device, _, _ in terms):
                out.append((claim.id, terms, part.size))
    return out


def test_the_quick_grid_plans_every_gpu_part_in_three_rounds_at_full_float32():
    config = kit_config.load_config()
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(config, schema)
    plan = kit_config.run_plan(config)
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
    """The kit's dry run, on the GPU image's packages alone."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gpu_run.py"), "--dry-run", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=image_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_the_quick_dry_run_fits_its_first_stage_in_8_minutes_and_the_command_in_9():
    """C5's cells take the 5 first processes its claim asks of the eager CPU SELU's cell,
    which its block shares."""
    lines = dry_run_lines()
    listed = {tuple(line.split()[:4]) for line in lines[1:] if line.startswith(("cpu ", "gpu "))}
    for _, terms, size in gpu_parts():
        if size:
            assert all((d, w, i, str(size)) in listed for d, w, i in terms)
    rounds = [int(line.split()[4]) for line in lines[1:] if line.startswith(("cpu ", "gpu "))]
    assert min(rounds) >= 3
    said = lines[-1]
    assert "on one H200 (its reference's worker starts) and 16 CPU cores" in said
    first = float(re.search(r"first stage ([\d.]+) min", said).group(1))
    both = float(re.search(r"the two ([\d.]+) min", said).group(1))
    whole = float(re.search(r"\(([\d.]+) min in all\)", said).group(1))
    assert first <= 8.0 and both <= whole <= 9.0, said


def test_the_full_gpu_grid_plans_two_parts_of_at_most_9_model_minutes():
    """config/gpu.yaml, longer than one command, as parts of whole blocks that each fit one
    (the first minute's checks included), the blocks that decide claims in the first."""
    lines = dry_run_lines("--config", str(ROOT / "config/gpu.yaml"))
    assert "stencil" not in "\n".join(lines) and "first stage" in lines[-1]
    said = [line for line in lines if line.startswith("part ")]
    assert len(said) == 2 and all(" of 2: " in line for line in said), said
    minutes = [float(re.search(r": ([\d.]+) model-min", line).group(1)) for line in said]
    assert all(m <= 9.0 for m in minutes), minutes
    config = kit_config.load_config(ROOT / "config/gpu.yaml")
    plan = kit_config.run_plan(config)
    listed = [line.split(" processes: ")[1].split(", ") for line in said]
    assert sorted(n for names in listed for n in names) == sorted(plan.units)
    deciding = {c.key for c in run_order.deciding(plan.cells, plan.claims)}
    assert all(n in listed[0] for n in plan.units if deciding.intersection(plan.units[n]["cells"]))


def test_the_kit_refuses_a_key_the_workflow_would_refuse_with_or_without_jsonschema(tmp_path):
    typo = tmp_path / "typo.yaml"
    typo.write_text("run_label: x\nsampling: {max_time: 1}\n")
    with pytest.raises(grid.ConfigError, match=r"config key sampling.max_time: not a setting"):
        kit_config.load_config(typo)
    done = subprocess.run(  # on the GPU image's packages: the standard library's check
        [sys.executable, str(ROOT / "scripts/gpu_run.py"), "--dry-run", "--config", str(typo)],
        capture_output=True,
        text=True,
        timeout=120,
        env=image_env(),
    )
    assert done.returncode == 2 and done.stderr.startswith("config key sampling.max_time: ")


def quick_plan() -> tuple[dict, list[dict], object]:
    config = kit_config.load_config()
    return config, kit_config.claims(config), kit_config.run_plan(config)


def test_the_blocks_that_decide_claims_are_measured_first_and_the_dry_run_says_by_when():
    """B1, B2, C2, C3 and C5's blocks, every first-stage round of them, before C6's trend
    blocks; the dry run says by when they are in, on the model."""
    config, claim_list, plan = quick_plan()
    model = kit_estimate.kit(config)["estimate"]
    deciding = {c.key for c in run_order.deciding(plan.cells, claim_list)}
    first = {n for n, u in plan.units.items() if deciding.intersection(u["cells"])}
    jobs = plan.jobs()
    first_trend = next(i for i, j in enumerate(jobs) if plan.unit(j.cell) not in first)
    assert all(plan.unit(j.cell) not in first for j in jobs[first_trend:])
    read_by = {
        t.at(p.size)
        for c in claim_list
        if c.id in ("B1", "B2", "C2", "C3", "C5")
        for p in c.parts
        if p.size is not None and any(side[0].device == "gpu" for side in (p.num, p.den))
        for t in (*p.num, *p.den)
    }
    assert read_by and all(c.key in deciding for c in read_by)
    before = sum(kit_estimate.seconds(model, plan, jobs[:first_trend]).values())
    assert kit_estimate.deciding_done_s(model, plan) == pytest.approx(before)
    # the dry run says by when, on the model (its starts are a guess the kit re-plans)
    minute = kit_estimate.first_minute_s(model, config)
    said = next(line for line in dry_run_lines() if "decide claim parts are measured by" in line)
    assert f"by {before + minute:.0f} s of the command" in said


def test_parts_take_whole_blocks_deciding_first_then_a_trends_sizes():
    """kit_estimate.parts: every block whole in one part that it fits; the blocks that
    decide claims first; a block a trend reads at one of its sizes (C6's GPU matmul at 1000)
    before blocks no claim reads (the figures' 256 and 2000)."""
    config = kit_config.load_config(ROOT / "config/gpu.yaml")
    plan = kit_config.run_plan(config)
    model, jobs = kit_estimate.kit(config)["estimate"], plan.jobs()
    need = kit_estimate.by_need(plan)
    deciding = {c.key for c in run_order.deciding(plan.cells, plan.claims)}
    tiers = [bool(deciding.intersection(plan.units[n]["cells"])) for n in need]
    assert tiers == sorted(tiers, reverse=True) and any(tiers)
    named = {n.split(":")[0]: i for i, n in enumerate(need)}
    assert named["matmul@1000"] < min(named["matmul@256"], named["matmul@2000"])
    whole = sum(kit_estimate.seconds(model, plan, jobs).values())
    for fit in (whole + 1, whole / 2, whole / 5, 1.0):
        parts = kit_estimate.parts(model, plan, jobs, fit)
        names = [n for p in parts for n in p.blocks]
        assert sorted(names) == sorted(plan.units)  # each block once, whole
        assert all(p.seconds <= fit or len(p.blocks) == 1 for p in parts)
        assert sum(p.seconds for p in parts) == pytest.approx(whole)
        # the parts that hold a deciding block come before every other part
        holds = [
            any(deciding.intersection(plan.units[n]["cells"]) for n in p.blocks) for p in parts
        ]
        assert holds == sorted(holds, reverse=True) and holds[0]
    assert len(kit_estimate.parts(model, plan, jobs, whole + 1)) == 1
    # measured starts replace the model's, and only them
    faster = kit_estimate.with_starts(model, {"gpu": 1.0, "cpu": 0.5})
    assert faster["process_start_s"] == {"gpu": 1.0, "cpu": 0.5}
    assert model["process_start_s"]["gpu"] == 5.4
    assert sum(kit_estimate.seconds(faster, plan, jobs).values()) < whole


def measure_jobs_in_priority_order(dry_run: str, label: str) -> list[str]:
    """The measure jobs `snakemake -n --verbose` lists, by the priority it gives each."""
    jobs = []
    # one job a block: each opens on its time stamp (a group's jobs have no blank line between)
    for block in re.split(r"^\s*\[\w{3} \w{3} [^]]+\]", dry_run, flags=re.M):
        rule = re.search(r"rule (measure\w*):", block)
        output = re.search(r"output: (\S+)", block)
        priority = re.search(r"priority: (\d+)", block)
        if rule and output and output.group(1).startswith(f"results/raw/{label}/"):
            jobs.append((-int(priority.group(1)) if priority else 0, output.group(1)))
    return [path for _, path in sorted(jobs)]


# Appended to a workflow copy's Snakefile: the config the workflow runs with, once loaded.
DUMP_CONFIG = """
import json

with open("loaded-config.json", "w") as dumped:
    json.dump(config, dumped)
"""


@pytest.mark.slow  # two Snakemake dry runs
@pytest.mark.parametrize("config_file", ["gpu-quick.yaml", "gpu.yaml"])
def test_the_kit_loads_the_workflows_whole_config_and_plans_its_processes_in_order(
    tmp_path, config_file
):
    """One config loader (blockbench.pipeline.config_loading): the workflow's whole config is the
    kit's, sampling and kit keys included; and one run plan: the first stage of
    `snakemake -n` is the kit's, job for job, in the order Snakemake's priorities give it."""
    wf = workflow_copy(tmp_path)
    with (wf / "Snakefile").open("a") as snakefile:
        snakefile.write(DUMP_CONFIG)
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
    config = kit_config.load_config(ROOT / "config" / config_file)
    assert json.loads((wf / "loaded-config.json").read_text()) == config
    assert config["sampling"]["max_time_s"] == 0.1
    kit = [job.path(config["run_label"]) for job in kit_config.run_plan(config).jobs()]
    assert measure_jobs_in_priority_order(done.stdout, config["run_label"]) == kit


def tiny_config(**changes) -> dict:
    """A few cells of each kind at tiny sizes and budgets: the kit's behaviour, not numbers."""
    config = kit_config.load_config()
    config |= {
        "run_label": "kit-test",
        "claim_sizes": "none",  # the blocks below alone
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
    for name in ("src", "config", "scripts", "workflow"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, str(work / "scripts/gpu_run.py"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env=image_env(),
    )
    assert done.returncode == gpu_kit.EXIT_NOT_READY
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("GPU not ready: "), lines
    assert "Traceback" not in done.stderr
    assert not (work / "results").exists()


@pytest.mark.slow  # measures the kit's cells on the CPU: 9 s
def test_the_kit_measures_decides_resumes_and_packs_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKBENCH_LOCK", str(tmp_path / "lock"))
    config, out, device = tiny_config(), tmp_path / "out", tmp_path / "device"
    assert gpu_kit.run(config, out, root=device) == 0
    archive = out / "kit-test.tar.gz"
    with tarfile.open(archive) as tar:
        names = {m.name for m in tar.getmembers()}
    assert all(n.startswith("kit-test/") for n in names)
    assert {"kit-test/kit.json", "kit-test/rounds.json", "kit-test/host_kind.json"} <= names

    home = tmp_path / "home"
    raw = kit_archive.unpack(archive, home)
    records = [store.read_json(f) for f in layout.raw_files(raw)]
    for record in records:
        if record["cell"]["device"] == "gpu":
            assert record["status"] == "unavailable" and "gpu" in record["reason"]
        else:
            assert record["status"] == "ok" and record["phases"]["steady"]["n"] >= 3
    aggregate.processes(layout.raw_files(raw))  # the import validates every file
    manifest = store.read_json(raw / kit_archive.MANIFEST)
    decision = manifest["decision"]
    assert manifest["complete"] and manifest["schema_validated"] is True
    # the decision as measured: every process it counts exists, and judging at home reads it
    measured = {(r["cell"]["device"], r["cell"]["impl"], r["repeat"]) for r in records}
    for key, rounds in decision["rounds"].items():
        cell = Cell.from_key(key)
        assert {(cell.device, cell.impl, r) for r in range(rounds)} <= measured
        assert rounds <= decision["asked"][key]
    assert store.read_json(raw / "rounds.json") == decision

    # the same command again measures nothing of a decided run
    kit_json = device / "results/raw/kit-test/kit.json"
    assert gpu_kit.run(config, out, root=device) == 0
    assert store.read_json(kit_json)["parts"][-1]["processes"] == 0

    # a window that closes in the added rounds loses only them: its archive holds the
    # decision as measured, which judging at home reads, and the same command has no more
    # to measure
    closed = tmp_path / "closed"
    real = gpu_kit.Part.measure
    calls = []

    def closes_in_added_rounds(self, plan, jobs):
        calls.append(len(jobs))
        if len(calls) == 2:
            raise KeyboardInterrupt  # the window closes
        return real(self, plan, jobs)

    monkeypatch.setattr(gpu_kit.Part, "measure", closes_in_added_rounds)
    with pytest.raises(KeyboardInterrupt):
        gpu_kit.run(config, out / "closed", root=closed)
    monkeypatch.setattr(gpu_kit.Part, "measure", real)
    raw_closed = kit_archive.unpack(out / "closed/kit-test.tar.gz", tmp_path / "closed-home")
    as_packed = store.read_json(raw_closed / "rounds.json")
    assert store.read_json(raw_closed / "kit.json")["decision"] == as_packed
    for key, rounds in as_packed["rounds"].items():  # nothing asked that was not measured
        jobs = [Job(Cell.from_key(key), r).path("kit-test") for r in range(rounds)]
        assert all((raw_closed.parent / j.removeprefix("results/raw/")).exists() for j in jobs)
    assert gpu_kit.run(config, out / "closed", root=closed) == 0
    manifest = store.read_json(closed / "results/raw/kit-test/kit.json")
    assert manifest["complete"] and manifest["parts"][-1]["processes"] == 0

    # a part with no time left measures nothing, records every process left out for time
    # (so that no job at home measures one) and asks to be rerun; a fresh machine goes on
    # from the archive
    fresh, again = tmp_path / "fresh", tmp_path / "again"
    assert gpu_kit.run(config, fresh, root=fresh, part_s=0) == gpu_kit.EXIT_MORE_PARTS
    files = layout.raw_files(fresh / "results/raw/kit-test")
    assert len(files) == len(kit_config.run_plan(config).jobs())
    assert all(map(kit_archive.left_out, files))
    assert gpu_kit.run(config, again, root=again, part_s=0, resume=archive) == 0


DRY_RUN = ("-m", "snakemake", "-n", "--verbose")


@pytest.mark.slow  # two parts of a tiny grid, one cell on the faked GPU; a Snakemake dry run
def test_a_grid_longer_than_a_part_is_measured_whole_blocks_a_part(tmp_path, monkeypatch):
    """A rehearsal on a faked GPU, with a part too short for the tiny grid: the first part
    measures the blocks that fit and records every process of the rest left out for time
    (judged not_run at home, where no job measures it); the same command again measures
    exactly what the first left out, never again what it finished, and decides its rounds."""
    from fake_gpu import use_fake_gpu

    from blockbench.judge.aggregate import cells, processes
    from blockbench.judge.run_view import RunView

    use_fake_gpu(monkeypatch)
    monkeypatch.setenv("BLOCKBENCH_LOCK", str(tmp_path / "lock"))
    config = tiny_config()
    # a model whose every process takes 100 s, so that the parts do not hang on this host
    model = kit_estimate.KIT["estimate"] | {"process_start_s": {"cpu": 100.0, "gpu": 100.0}}
    config["kit"] = {"estimate": model}
    plan = kit_config.run_plan(config)
    cost = kit_estimate.seconds(model, plan, plan.jobs())
    blocks = {n: sum(cost[Cell.from_key(k)] for k in u["cells"]) for n, u in plan.units.items()}
    assert len(blocks) == 2
    part_s = kit_estimate.PACK_RESERVE_S + max(blocks.values()) + 30  # one block, not both
    assert part_s - kit_estimate.PACK_RESERVE_S < sum(blocks.values())
    out, raw = tmp_path / "out", tmp_path / "results/raw/kit-test"
    said: list[str] = []
    assert gpu_kit.run(config, out, root=tmp_path, part_s=part_s, say=said.append) == 75
    assert any(line.startswith("this part: 1 blocks") for line in said), said
    first = {f: f.read_bytes() for f in layout.raw_files(raw)}
    decided_first = store.read_json(raw / kit_archive.MANIFEST)["decision"]["rounds"]
    left = {f for f in first if kit_archive.left_out(f)}
    manifest = store.read_json(raw / kit_archive.MANIFEST)
    (gone,) = manifest["left_out"]
    assert not manifest["complete"] and set(manifest["decision"]["rounds"]).isdisjoint(
        plan.units[gone]["cells"]
    )
    assert left == {tmp_path / j.path("kit-test") for j in plan.jobs() if plan.unit(j.cell) == gone}
    # at home, the first part's archive: the left-out block reads not_run with the reason
    home = kit_archive.unpack(out / "kit-test.tar.gz", tmp_path / "home")
    proc = processes(layout.raw_files(home))
    view = RunView(cells(proc), proc, "kit-test")
    cell = next(j.cell for j in plan.jobs() if plan.unit(j.cell) == gone)
    term = Term(cell.device, cell.workload, cell.impl)
    assert "is unavailable: left out for time" in view.why_missing(term, cell.size)
    # and the workflow there measures nothing of the run: no GPU block is tried at home
    wf = workflow_copy(tmp_path / "wf", config | {"check_gpu": False})
    kit_archive.unpack(out / "kit-test.tar.gz", wf / "results/raw")
    done = subprocess.run(
        [sys.executable, *DRY_RUN, "--cores", "1", "--configfile", "tiny.yaml"],
        cwd=wf,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert measure_jobs_in_priority_order(done.stdout, "kit-test") == []
    missing = sorted(left)[0].relative_to(tmp_path)
    (wf / missing).unlink()  # without its record, the same dry run measures it (and after)
    done = subprocess.run(done.args, cwd=wf, capture_output=True, text=True, timeout=300)
    assert str(missing) in measure_jobs_in_priority_order(done.stdout, "kit-test")

    # the same command again: exactly what was left out, then its own rounds
    assert gpu_kit.run(config, out, root=tmp_path, part_s=part_s) == 0
    second = {f: f.read_bytes() for f in layout.raw_files(raw)}
    assert all(second[f] == data for f, data in first.items() if f not in left)
    changed = {f for f in second if first.get(f) != second[f]}
    assert left <= changed and all(
        plan.unit(Cell.from_dict(store.read_json(f)["cell"])) == gone for f in changed
    )
    assert not any(map(kit_archive.left_out, second))
    manifest = store.read_json(raw / kit_archive.MANIFEST)
    assert manifest["complete"] and manifest["left_out"] == {}
    # each block decided once, by its own part: the first part's rounds stand
    assert sorted(u["name"] for u in manifest["decision"]["units"]) == sorted(plan.units)
    assert decided_first.items() <= manifest["decision"]["rounds"].items()
    assert set(manifest["decision"]["rounds"]) == {
        k for u in plan.units.values() for k in u["cells"]
    }
    assert [p["processes"] for p in manifest["parts"]] == [
        len(first) - len(left),
        len(changed),
    ]
    # the second archive unpacked over the first at home replaces the left-out records
    kit_archive.unpack(out / "kit-test.tar.gz", tmp_path / "home")
    assert not any(map(kit_archive.left_out, layout.raw_files(home)))
    record = store.read_json(next(iter(left)))
    if record["cell"]["device"] == "gpu":
        assert record["provenance"]["device"]["faked"] is True


def test_a_window_that_closes_before_its_first_process_leaves_nothing_to_measure_at_home(
    tmp_path, monkeypatch
):
    """Every first-stage process is recorded, left out for time, and packed, before the
    part measures any: the archive of a window closed at once holds a record for each."""
    monkeypatch.setenv("BLOCKBENCH_LOCK", str(tmp_path / "lock"))
    config = tiny_config()

    def closes(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(gpu_kit.Part, "measure", closes)
    with pytest.raises(KeyboardInterrupt):
        gpu_kit.run(config, tmp_path / "out", root=tmp_path)
    home = kit_archive.unpack(tmp_path / "out/kit-test.tar.gz", tmp_path / "home")
    files = layout.raw_files(home)
    assert len(files) == len(kit_config.run_plan(config).jobs())
    assert all(map(kit_archive.left_out, files))
    # and a decision that asks for nothing more: the workflow there reads no rounds to add
    assert store.read_json(home / "rounds.json")["rounds"] == {}
    assert store.read_json(home / "kit.json")["decision"]["rounds"] == {}


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


# ---- the rehearsal: the quick kit end to end on the CPU, the GPU faked ----------------------


def documented_command() -> tuple[list[str], dict[str, str]]:
    """docs/gpu.md's command for the GPU machine, as words and the variables it sets, up to
    its `--out`: the rehearsal runs this command, not one of its own."""
    text = (ROOT / "docs/gpu.md").read_text()
    line = re.search(r"^(\S+=\S+ )*python3 .*scripts/gpu_run.py .*--out", text, re.M).group(0)
    words = line.split()
    given = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
    command = [w for w in words if w.split("=")[0] not in given][:-1]
    return command, {k: v for k, v in given.items() if not v.isupper()}  # COMMIT: a blank


# The articles' sizes, scaled down: the claims keep their parts, at sizes that take
# milliseconds (config `claims` points at the rescaled copy).
TINY_SIZES = {10000: 96, 5000: 64, 1000: 32, 10_000_000: 4000, 1_000_000: 2000, 100_000: 1000}


def rehearsal_checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the checkout as a GPU machine gets it (no .git, nothing installed), with the
    quick grid and the GPU claims at tiny sizes; returns it and the grid's config file."""
    work = tmp_path / "checkout"
    for name in ("src", "config", "scripts", "workflow"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    tiny = work / "config/claims/tiny"
    shutil.copytree(ROOT / "config/claims/articles", tiny)
    claims = yaml.safe_load((tiny / "claims.yaml").read_text())
    for claim in claims:
        claim.pop("settings", None)  # every cell at the rehearsal's two rounds
        for part in claim["parts"]:
            for key in ("size", "measure_at"):
                if key in part:
                    part[key] = TINY_SIZES.get(part[key], part[key])
            if "sizes" in part:
                part["sizes"] = [TINY_SIZES.get(n, n) for n in part["sizes"]]
    (tiny / "claims.yaml").write_text(yaml.safe_dump(claims, sort_keys=False))
    quick = yaml.safe_load((ROOT / "config/gpu-quick.yaml").read_text())
    quick |= {
        "run_label": "rehearsal",
        "repeats": 2,
        # the decision is made and carried; the rounds it adds are the CPU kit test's (time)
        "max_rounds": 2,
        "budget_s": 60,
        "claims": "config/claims/tiny",
        "between_run": "no-studies",
        "sampling": {"min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.02, "warmup_s": 0.01},
    }
    (work / "config/rehearsal.yaml").write_text(yaml.safe_dump(quick, sort_keys=False))
    return work, work / "config/rehearsal.yaml"


@pytest.mark.slow  # the kit's whole session and the judging at home: two minutes
def test_the_quick_kit_rehearsed_end_to_end_on_a_faked_gpu(tmp_path, monkeypatch):
    """The gate, the smoke summary, the grid, the rounds, the archive, --unpack and the
    judged claims at home, with the GPU faked for every process the kit starts
    (tests/fake_gpu.py): a phase, a file of the archive or a claim part missing fails it."""
    from fake_gpu import NAME, fake_gpu_env

    from blockbench.pipeline import stages

    work, config_file = rehearsal_checkout(tmp_path)
    # docs/gpu.md's command, on the tiny grid; the kit and its workers on the GPU image's
    # packages alone (tests/gpu_image), with the GPU faked
    env = image_env(fake_gpu_env()) | {"BLOCKBENCH_LOCK": str(tmp_path / "lock")}
    command, given = documented_command()
    env |= given | {"BLOCKBENCH_GIT_COMMIT": "0" * 40}
    kit = [sys.executable, *command[1:], "--config", str(config_file)]
    done = subprocess.run(
        [*kit, "--out", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=work,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = done.stdout
    # the first minute's screen: the GPU and its software, the precision measured, the
    # re-plan with the starts measured here, the order of the blocks
    assert f"GPU ready: {NAME}" in said and "CUDA's libraries loaded" in said
    assert "no jsonschema here: records are written unvalidated" in said
    assert f"smoke cell {kit_estimate.SMOKE.key}: ok" in said
    assert f"smoke cell {kit_estimate.SMOKE_CPU.key}: ok" in said
    assert "matmul precision measured float32" in said and "NVML before: SM" in said
    assert "; power limit 700.0 W (default 700.0 W)" in said and "NVIDIA libraries after" in said
    assert re.search(r"re-plan: worker starts measured here CPU [\d.]+ s, GPU [\d.]+ s", said)
    assert "blocks in the order measured: " in said
    # everything said is in the log the output folder brings back
    log = (tmp_path / "out/rehearsal.log").read_text()
    assert all(line in log for line in said.splitlines())

    # the archive: every process of the plan as decided, and what the run was decided with
    monkeypatch.chdir(work)  # where its catalog is, as the kit ran
    config = kit_config.load_config(config_file, ROOT / "config/config.yaml")
    config["claims"] = [str(work / p) for p in config["claims"]]
    plan = kit_config.run_plan(config)
    archive = tmp_path / "out/rehearsal.tar.gz"
    assert archive.stat().st_size < 16 * 2**20
    with tarfile.open(archive) as tar:
        names = {m.name.removeprefix("rehearsal/") for m in tar.getmembers()}
    extras = {"kit.json", "rounds.json", "gpu_ready.json", "smoke.json", "host_kind.json"}
    extras |= {"catalogs.json"}  # the catalogs it judged (this checkout's own: no copy)
    assert extras <= names, extras - names
    manifest_in = store.read_json(work / "results/raw/rehearsal/kit.json")
    decision = manifest_in["decision"]
    assert manifest_in["schema_validated"] is False  # the image has no jsonschema
    assert set(manifest_in["starts_s"]) == {"cpu", "gpu"}
    assert manifest_in["order"] == kit_estimate.unit_order(plan)
    jobs = plan.jobs(decision["rounds"])
    assert {j.path("rehearsal").removeprefix("results/raw/rehearsal/") for j in jobs} <= names
    assert len(jobs) >= len(plan.jobs()) == 2 * len(plan.cells)

    # at home: unpack, then the workflow's stages read the kit's decision and judge
    home = tmp_path / "home"
    unpacked = subprocess.run(
        [*kit, "--unpack", str(archive)], capture_output=True, text=True, timeout=60
    )
    assert unpacked.returncode == 0 and "check_gpu=false" in unpacked.stdout, unpacked.stderr
    assert "each valid against the schema" in unpacked.stdout
    raw = work / "results/raw/rehearsal"
    records = [store.read_json(f) for f in layout.raw_files(raw)]
    for record in records:
        assert record["status"] == "ok", (record["cell"], record["reason"])
        planned = plan.phases[Cell.from_dict(record["cell"])]
        assert set(record["phases"]) == set(planned), record["cell"]
        if record["cell"]["device"] == "gpu":
            device = record["provenance"]["device"]
            assert device["platform"] == "gpu" and device["faked"] is True
            assert record["provenance"]["device_after"]["nvml"]["clocks_mhz"]["sm"] > 0
    smoke = store.read_json(raw / "smoke.json")
    assert set(smoke["phases"]) == {
        "host_to_device", "first_call", "trace_lower", "compile",
        "dispatch", "steady", "asarray", "device_to_host",
    }  # fmt: skip
    # the workflow's rounds checkpoint, run at home, writes the kit's decision as measured
    (raw / "rounds.json").unlink()
    again = stages.decide_rounds(
        raw=[str(work / j.path("rehearsal")) for j in plan.jobs()],
        claims_file=kit_config.claims_files(config),
        study_files=[],
        units=plan.units,
        run_label="rehearsal",
        precision=grid.precision(config),
        budget_minutes=60,
        out=raw / "rounds.json",
    )
    assert again == decision == store.read_json(raw / "rounds.json")
    out = {k: str(home / f"{k}.x") for k in ("processes", "processes_csv", "csv", "parquet")}
    out |= {k: str(home / f"{k}.x") for k in ("md", "speedups", "speedups_md")}
    home.mkdir()
    stages.build_tables([str(f) for f in layout.raw_files(raw)], SimpleNamespace(**out))
    claims_out = {k: home / f"claims.{k}" for k in ("csv", "md", "rst")}
    table = stages.build_claims(
        out["parquet"],
        out["processes"],
        kit_config.claims_files(config),
        *claims_out.values(),
        parts_csv=home / "parts.csv",
        parts_parquet=home / "parts.parquet",
        this_run="rehearsal",
        decisions=[raw / "rounds.json"],
    )
    # every GPU claim judged, but C6, whose CPU trends come from a CPU run merged with it
    verdicts = table.set_index("claim_id")["verdict"]
    for claim in GPU_CLAIMS:
        judged = verdicts[claim] in ("reproduced", "not_reproduced", "inconclusive")
        assert judged == (claim != "C6"), (claim, verdicts[claim])
    parts = pd.read_csv(home / "parts.csv").set_index(["claim_id", "part"])["measured"]
    for claim in GPU_CLAIMS:
        own = parts[claim]
        cpu_trends = own.index.str.contains("JAX jit CPU") & (claim == "C6")
        assert own[~cpu_trends].notna().all() and own[cpu_trends].isna().all(), own
    assert len(parts["C6"].dropna()) == 2  # its GPU trends: matmul and SELU


@pytest.mark.parametrize("config_file", sorted(p.name for p in (ROOT / "config").glob("*.yaml")))
def test_every_shipped_gpu_grid_asks_for_float32_products(config_file):
    """On an Ampere or newer GPU, `default` lets XLA multiply float32 in TF32: every GPU cell
    of a shipped grid, as the run plan measures it, asks `highest`."""
    config = kit_config.load_config(ROOT / "config" / config_file)
    if "gpu" not in config["devices"]:
        pytest.skip(f"{config_file} measures no GPU cell")
    plan = kit_config.run_plan(config)
    gpu_jobs = [job for job in plan.jobs() if job.cell.device == "gpu"]
    assert gpu_jobs
    asked = {plan.params(job).matmul_precision for job in gpu_jobs}
    assert asked == {"highest"}, f"{config_file}: {asked}"
