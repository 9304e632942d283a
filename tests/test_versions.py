"""The JAX-version axis: planning, refusing a bad release, and two releases end to end."""

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from test_workflow import SNAKEMAKE, snakemake
from tiny import ROOT, workflow_copy

from blockbench.pipeline import grid, run_order, versions
from blockbench.records import layout

# An older release than the locked one, from before the new CPU runtime (0.4.32) and with
# the locked NumPy; its environment is kept under the checkout's .venvs/ (git-ignored), so
# the suite makes it once per checkout.
OLD = "0.4.30"
ENVS = ROOT / ".venvs"


def test_the_installed_release_keeps_the_plain_run_label_and_order():
    here = layout.installed_jax()
    assert versions.requested({"jax_versions": []}) == [here]
    assert layout.run_label("local", here) == "local"
    assert layout.run_label("local", OLD) == f"local+jax-{OLD}"
    assert layout.version_of(f"local+jax-{OLD}") == OLD
    assert layout.version_of("local") == here
    plan = grid.cells({"devices": ["cpu"], **TWO})
    order = run_order.order(plan, [], dict.fromkeys(plan, 2), 0)
    cells = len(order) // 2
    assert [versions.priority(p, len(order), cells, 0, 1) for p, _ in order.values()] == [
        p for p, _ in order.values()
    ]
    # two releases: every job a distinct priority, round 0 of both before round 1 of either
    both = {
        (job, k): versions.priority(p, len(order), cells, k, 2)
        for job, (p, _) in order.items()
        for k in (0, 1)
    }
    assert len(set(both.values())) == len(both)
    first = sorted(both, key=both.get, reverse=True)[: 2 * cells]
    assert {job[1] for job, _ in first} == {0}


def test_a_release_pypi_lacks_is_refused_naming_key_and_value(monkeypatch, tmp_path):
    known = ("0.10.2", "0.4.30", "0.4.13")
    monkeypatch.setattr(versions, "on_pypi", lambda package: known)
    versions.check({"jax_versions": [OLD, layout.installed_jax()]}, tmp_path)
    with pytest.raises(versions.VersionError, match=r"jax_versions\[1\]: '0.4.14': no jaxlib"):
        versions.check({"jax_versions": [OLD, "0.4.14"]}, tmp_path)
    # an environment already made needs no index (offline re-runs)
    versions.stamp(tmp_path, "0.4.14").parent.mkdir(parents=True)
    versions.stamp(tmp_path, "0.4.14").write_text("{}")
    versions.check({"jax_versions": ["0.4.14"]}, tmp_path)


@pytest.mark.slow
def test_the_default_run_asks_no_index_and_plans_no_environment(monkeypatch, tmp_path):
    def offline(package: str) -> tuple[str, ...]:
        raise AssertionError("the default run must not ask the package index")

    monkeypatch.setattr(versions, "on_pypi", offline)
    versions.check({"jax_versions": []}, tmp_path)
    dry = snakemake(workflow_copy(tmp_path), "-n", "--cores", "4").stdout
    assert "jax_env" not in dry
    assert "results/raw/local/cpu/" in dry and "+jax-" not in dry


@pytest.mark.slow
def test_a_release_with_no_wheel_stops_the_run_before_any_job(tmp_path):
    run = snakemake(workflow_copy(tmp_path), "-n", "--config", "jax_versions=['0.4.14']")
    assert run.returncode != 0
    out = run.stdout + run.stderr
    if "cannot list the releases" in out:
        pytest.skip("no access to the package index here")
    assert "config key jax_versions[0]: '0.4.14': no jaxlib 0.4.14 on PyPI" in out


# A grid three claims read, at tiny sizes: A1 and A2 (dot_xx), C1 (matmul).
TWO = {
    "claim_sizes": "none",
    "workloads": [
        {"name": "dot_xx", "impls": ["jax"], "sizes": [64]},
        {"name": "matmul", "impls": ["numpy", "jax"], "sizes": [64], "phases": ["steady"]},
    ],
    "sampling": {"min_samples": 3, "min_time_s": 0.0, "max_time_s": 0.05},
    "budget_s": 120,
    "repeats": 1,
}


BY_VERSION = ("results/tables/claims_by_version.csv", "results/figures/claims_by_version.png")


@pytest.mark.slow
def test_two_releases_end_to_end_each_cell_imports_its_release(tmp_path):
    """One environment made (or reused) for the old release, every cell measured under the
    release it was planned for, and claims judged release by release."""
    here = layout.installed_jax()
    config = {**TWO, "run_label": "two", "jax_versions": [OLD, here], "jax_envs": str(ENVS)}
    wf = workflow_copy(tmp_path, config)
    run = subprocess.run(
        # the tables and figure by release: what this test reads (the others, drawn from the
        # same tables, are the tiny run's)
        [*SNAKEMAKE, *BY_VERSION, "--cores", "2", "--configfile", "tiny.yaml"],
        cwd=wf,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "BLOCKBENCH_LOCK": str(wf / "measure.lock")},
    )
    if run.returncode != 0 and "cannot list the releases" in run.stderr:
        pytest.skip("no access to the package index to make the old release's environment")
    assert run.returncode == 0, run.stderr[-3000:]
    env = json.loads(versions.stamp(ENVS, OLD).read_text())
    assert env["usable"] and env["imported"]["jax"] == OLD
    files = sorted((wf / "results/raw").glob("*/*/*/*/*/*.json"))
    planned = {"two": here, f"two+jax-{OLD}": OLD}
    assert {f.relative_to(wf / "results/raw").parts[0] for f in files} == set(planned)
    for f in files:
        record = json.loads(f.read_text())
        want = planned[f.relative_to(wf / "results/raw").parts[0]]
        assert record["status"] == "ok", (f, record["reason"])
        if record["cell"]["impl"] == "numpy":  # measured in the release's environment,
            assert "jax" not in record["provenance"], f  # without ever loading JAX
        else:
            assert record["provenance"]["jax"]["imported"]["jax"] == want, f
        assert record["provenance"]["config"]["jax_version"] == want
    table = pd.read_csv(wf / "results/claims.csv", dtype={"jax_version": str})
    assert set(zip(table["run_label"], table["jax_version"], strict=True)) == set(planned.items())
    measured = table[table["measured"].notna()]
    for claim in ("A1", "A2", "C1"):
        assert set(measured[measured["claim_id"] == claim]["jax_version"]) == {OLD, here}
    # releases are not compared with each other as if they were runs
    assert measured["other_runs"].isna().all() or (measured["other_runs"] == "").all()
    by_version = pd.read_csv(wf / "results/tables/claims_by_version.csv", dtype=str)
    assert set(by_version["jax_version"]) == {OLD, here}
    assert Path(wf / "results/figures/claims_by_version.png").stat().st_size > 0


def test_the_index_is_read_from_pips_json_not_its_prose(monkeypatch):
    def pip(*args):
        assert args[:3] == ("index", "versions", "--json")
        out = '{"name": "jax", "versions": ["0.10.2", "0.4.13"], "latest": "0.10.2"}'
        return subprocess.CompletedProcess(args, 0, out, "")

    monkeypatch.setattr(versions, "_pip", pip)
    versions.on_pypi.cache_clear()
    assert versions.on_pypi("jax") == ("0.10.2", "0.4.13")
    versions.on_pypi.cache_clear()
    monkeypatch.setattr(
        versions, "_pip", lambda *a: subprocess.CompletedProcess(a, 1, "", "ERROR: no index")
    )
    with pytest.raises(versions.VersionError, match="ERROR: no index"):
        versions.on_pypi("jax")
    versions.on_pypi.cache_clear()
