"""The host's state as the kernel tells it, read from a faked /sys: a laptop on battery, with
boost off, a slow governor or throttling, and a machine that exposes none of it."""

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from hosts import REFERENCE, ROOT

from blockbench.measure import host_power
from blockbench.pipeline import stages
from blockbench.records import layout

# the check a user runs before measuring, in a fresh process as they run it
HOST_CHECK = [sys.executable, "-m", "blockbench", "host-check"]


def fake_sys(
    root: Path,
    *,
    power: str | None = None,
    boost: str | None = None,
    driver: str = "acpi-cpufreq",
    governors: dict[int, str] | None = None,
    throttled: dict[int, int] | None = None,
) -> Path:
    """A /sys with the files host_state reads (power: 'ac', 'battery' or None)."""

    def put(rel: str, text: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")

    if power is not None:
        put("class/power_supply/AC/type", "Mains")
        put("class/power_supply/AC/online", "1" if power == "ac" else "0")
        put("class/power_supply/BAT0/type", "Battery")
        put("class/power_supply/BAT0/status", "Charging" if power == "ac" else "Discharging")
    if boost is not None:
        put("devices/system/cpu/cpufreq/boost", boost)
    for core, governor in (governors or {}).items():
        put(f"devices/system/cpu/cpu{core}/cpufreq/scaling_governor", governor)
        put(f"devices/system/cpu/cpu{core}/cpufreq/scaling_driver", driver)
    for core, count in (throttled or {}).items():
        put(f"devices/system/cpu/cpu{core}/thermal_throttle/core_throttle_count", str(count))
    return root


def test_a_machine_that_exposes_nothing_claims_nothing(tmp_path):
    state = host_power.read([0, 1], fake_sys(tmp_path))
    assert state == {
        "power": None,
        "boost": None,
        "driver": None,
        "governors": {},
        "throttle_counts": {},
    }
    assert host_power.speed_warnings(state, state) == []


def test_a_laptop_on_ac_at_full_speed_has_no_warning(tmp_path):
    root = fake_sys(tmp_path, power="ac", boost="1", governors={0: "performance", 1: "performance"})
    state = host_power.read([0, 1], root)
    assert state["power"] == "ac" and state["boost"] is True
    assert host_power.speed_warnings(state, state) == []


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        ({"power": "battery"}, "host state: on battery power"),
        ({"boost": "0"}, "host state: turbo boost off"),
        (
            {"governors": {0: "performance", 1: "powersave"}},
            "host state: a slow frequency governor on core(s) 1 (powersave)",
        ),
    ],
    ids=["battery", "boost off", "powersave on one core"],
)
def test_a_state_that_changes_speed_is_a_warning(tmp_path, setup, says):
    state = host_power.read([0, 1], fake_sys(tmp_path, **setup))
    assert host_power.speed_warnings(state, state) == [says]


def test_powersave_is_the_normal_governor_where_the_hardware_picks_the_frequency(tmp_path):
    root = fake_sys(tmp_path, driver="intel_pstate", governors={0: "powersave", 1: "powersave"})
    assert host_power.speed_warnings(host_power.read([0, 1], root)) == []


def test_throttling_during_the_cell_is_counted_on_its_cores_only(tmp_path):
    before = host_power.read([0], fake_sys(tmp_path / "a", throttled={0: 5, 1: 0}))
    after = host_power.read([0], fake_sys(tmp_path / "b", throttled={0: 12, 1: 40}))
    assert host_power.speed_warnings(before, after) == [
        "host state: 7 thermal throttling events during the cell"
    ]


def test_governors_of_every_core_the_cell_may_use_and_their_summary(tmp_path):
    root = fake_sys(tmp_path, governors={0: "performance", 1: "powersave", 2: "performance"})
    per_core = host_power.governors([0, 1, 2], root)
    assert per_core == {"0": "performance", "1": "powersave", "2": "performance"}
    assert host_power.summary(per_core) == "performance (0, 2); powersave (1)"
    assert host_power.summary({"0": "schedutil"}) == "schedutil"


def test_the_check_before_measuring_runs_on_this_machine():
    """One screen: what the kernel exposes here, or that it exposes nothing."""
    done = subprocess.run(HOST_CHECK, capture_output=True, text=True)
    shown = done.stdout
    assert shown.startswith("CPU: ") and "power: " in shown and "governors: " in shown
    warned = "host state:" in shown or "NumPy's BLAS:" in shown
    assert done.returncode in (0, 1) and warned == (done.returncode == 1)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="OpenBLAS names x86-64 kernels")
def test_the_check_before_measuring_says_whether_the_environment_chose_numpys_kernel():
    """Prescott runs on every x86-64 CPU; without the variable OpenBLAS picks its own."""
    bare = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    forced = subprocess.run(
        HOST_CHECK, capture_output=True, text=True, env={**bare, "OPENBLAS_CORETYPE": "Prescott"}
    )
    assert forced.returncode == 1 and "because OPENBLAS_CORETYPE=Prescott is set" in forced.stdout
    chosen = subprocess.run(HOST_CHECK, capture_output=True, text=True, env=bare)
    assert "NumPy's BLAS picks its own kernel" in chosen.stdout


def test_the_screen_names_what_would_slow_the_cells(tmp_path):
    state = host_power.read([0, 1], fake_sys(tmp_path, power="battery", boost="1"))
    assert host_power.describe(state) == [
        "power: battery",
        "turbo boost: on",
        "frequency driver: not exposed here",
        "governors: not exposed here",
        "thermal throttling events so far: not exposed here",
        "host state: on battery power",
    ]


def judged(tmp_path: Path, files: list[Path]) -> Path:
    """The tables and claims stages on these raw files; the folder they wrote to."""
    names = ("processes_csv", "csv", "md", "speedups", "speedups_md")
    out = SimpleNamespace(
        **{k: tmp_path / f"{k}.x" for k in names},
        processes=tmp_path / "processes.parquet",
        parquet=tmp_path / "measurements.parquet",
    )
    stages.build_tables([str(f) for f in files], out)
    stages.build_claims(
        out.parquet,
        out.processes,
        ROOT / "config/claims/articles/claims.yaml",
        csv=tmp_path / "claims.csv",
        markdown=tmp_path / "claims.md",
        rst=tmp_path / "claims.rst",
        parts_csv=tmp_path / "parts.csv",
        parts_parquet=tmp_path / "parts.parquet",
    )
    return tmp_path


def test_a_block_whose_round_ran_on_two_nodes_is_not_paired(tmp_path):
    """C1's block (matmul at 5000, JAX and NumPy back to back): one round's NumPy process on
    another node of the same kind. The ratio is then taken cell by cell, and says why."""
    run = tmp_path / "raw/split"
    shutil.copytree(REFERENCE, run)
    moved = run / "cpu/matmul/numpy/5000/1.json"
    record = json.loads(moved.read_text())
    record["provenance"]["host"]["hostname"] = "node-b"
    moved.write_text(json.dumps(record))
    parts = pd.read_csv(judged(tmp_path, layout.raw_files(run)) / "parts.csv")
    c1 = parts[parts["claim_id"] == "C1"].iloc[0]
    assert c1["detail"] == "not paired: a round of its cells ran on two nodes"
    d1 = parts[(parts["claim_id"] == "D1")].iloc[0]  # another block, on one node: paired
    assert d1["detail"].startswith("cells measured back to back in one block")


def test_a_run_measured_on_battery_is_named_and_warned_of_in_claims_md(tmp_path):
    """The reference run, two of its processes re-labelled as measured on battery with a
    powersave core: claims.md names the host and warns of the state."""
    run = tmp_path / "raw/laptop"
    shutil.copytree(REFERENCE, run)
    files = layout.raw_files(run)
    for path in files[:2]:
        record = json.loads(path.read_text())
        state = host_power.read([0, 1], fake_sys(tmp_path / "sys", power="battery"))
        record["host_state"] = {"before": state, "after": state}
        record["warnings"] += host_power.speed_warnings(state, state)
        path.write_text(json.dumps(record))
    md = judged(tmp_path, files) / "claims.md"
    text = md.read_text()
    # the reference VM's NumPy chose its own kernel (no OPENBLAS_CORETYPE)
    on = "Measured on AMD EPYC, 2 logical CPUs; NumPy's BLAS ran OpenBLAS SkylakeX; state:"
    assert f"{on} power battery." in text
    assert (
        "**Warning: 2 process(es) measured in a state that changes speed** (on battery power)"
        in text
    )
