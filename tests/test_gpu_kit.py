"""The GPU kit on the CPU: its plan is the workflow's, its dry run fits a lent machine, and it
measures, resumes and packs a run whose GPU cells come out `unavailable`."""

import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import yaml

from blockbench.judge import aggregate, claim_rules
from blockbench.judge.articles import load as load_articles
from blockbench.records import layout, store
from blockbench.run import gpu_kit, grid

ROOT = Path(__file__).resolve().parents[1]
GPU_CLAIMS = ("B1", "B2", "C2", "C3", "C5", "C6")


def claimed_cells() -> set[tuple[str, str, str, int | None]]:
    """(device, workload, impl, size or None for a trend) of every GPU claim's terms."""
    claims = claim_rules.load(
        ROOT / "config/claims.yaml", load_articles(ROOT / "config/articles.yaml")
    )
    out = set()
    for claim in (c for c in claims if c["id"] in GPU_CLAIMS):
        for part in claim["parts"]:
            for side in ("num", "den"):
                terms = part[side] if isinstance(part[side], list) else [part[side]]
                out |= {(t["device"], t["workload"], t["impl"], part.get("size")) for t in terms}
    return out


def test_the_gpu_grid_is_a_valid_workflow_config_with_every_cell_the_gpu_claims_use():
    config = gpu_kit.load_config()
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(config, schema)
    plan = grid.plan(config)
    for device, workload, impl, size in claimed_cells():
        sizes = {c.size for c in plan if (c.device, c.workload, c.impl) == (device, workload, impl)}
        assert (size in sizes) if size else len(sizes) >= 3, (device, workload, impl, size)
    # nothing no claim uses: no stencil, grad or dot_xx, and every GPU cell is claimed
    assert {c.workload for c in plan} == {"matmul", "selu"}
    claimed = {(d, w, i) for d, w, i, _ in claimed_cells()}
    assert all((c.device, c.workload, c.impl) in claimed for c in plan if c.device == "gpu")
    # the kit measures exactly the workflow's processes, so the workflow measures none again
    jobs = gpu_kit.jobs(config)
    assert {(j.cell, j.repeat) for j in jobs} == {(c, r) for c in plan for r in range(3)}


def test_dry_run_lists_the_cells_and_fits_a_lent_h100_in_under_25_minutes():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gpu_run.py"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    listed = {tuple(line.split()[:4]) for line in lines[1:] if line.startswith(("cpu ", "gpu "))}
    for device, workload, impl, size in claimed_cells():
        if size:
            assert (device, workload, impl, str(size)) in listed
    assert "on one H100 and 16 CPU cores" in lines[-1]
    minutes = float(lines[-1].split("estimated ")[1].split(" min")[0])
    assert 5 < minutes < 25, lines[-1]


def tiny_config() -> dict:
    """A few cells of each kind at tiny sizes and budgets: the kit's behaviour, not numbers."""
    config = gpu_kit.load_config()
    config |= {
        "run_label": "kit-test",
        "repeats": 1,
        "budget_s": 120,
        "sampling": {"min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.05},
        "workloads": [
            {"name": "matmul", "impls": ["numpy", "jax_jit"], "sizes": [32]},
            {"name": "selu", "devices": ["gpu"], "impls": ["jax"], "sizes": [1000]},
        ],
    }
    grid.check(config)
    return config


def test_the_kit_measures_resumes_and_packs_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKBENCH_LOCK", str(tmp_path / "lock"))
    config, out, home = tiny_config(), tmp_path / "out", tmp_path / "home"
    assert gpu_kit.run(config, out, root=tmp_path / "device") == 0
    archive = out / "kit-test.tar.gz"
    with tarfile.open(archive) as tar:
        assert all(m.name.startswith("kit-test/") for m in tar.getmembers())

    raw = gpu_kit.unpack(archive, home)
    files = layout.raw_files(raw)
    records = {(r["cell"]["device"], r["cell"]["impl"]): r for r in map(store.read_json, files)}
    assert set(records) == {
        ("cpu", "numpy"),
        ("cpu", "jax_jit"),
        ("gpu", "jax_jit"),
        ("gpu", "jax"),
    }
    for (device, _), record in records.items():
        if device == "gpu":
            assert record["status"] == "unavailable" and "gpu" in record["reason"]
        else:
            assert record["status"] == "ok" and record["phases"]["steady"]["n"] >= 3
    aggregate.measurements(files)  # the import validates every file against the schema
    manifest = store.read_json(raw / gpu_kit.MANIFEST)
    assert manifest["complete"] and manifest["parts"][0]["processes"] == 4
    assert manifest["schema_validated"] is True

    # a second part measures only what is missing, and says how long it took
    (tmp_path / "device" / grid.Cell("cpu", "matmul", "numpy", 32).path("kit-test")).unlink()
    assert gpu_kit.run(config, out, root=tmp_path / "device") == 0
    parts = store.read_json(tmp_path / "device/results/raw/kit-test/kit.json")["parts"]
    assert [p["processes"] for p in parts] == [4, 1] and parts[1]["seconds"] > 0

    # a part with no time left measures nothing, packs what there is and asks to be rerun;
    # a fresh machine goes on from the archive
    fresh, again = tmp_path / "fresh", tmp_path / "again"
    assert gpu_kit.run(config, fresh, root=fresh, part_s=0) == gpu_kit.EXIT_MORE_PARTS
    assert not layout.raw_files(fresh / "results/raw/kit-test")
    assert gpu_kit.run(config, again, root=again, part_s=0, resume=archive) == 0
