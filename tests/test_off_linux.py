"""Off Linux (macOS, say), with Linux's facilities faked away: no pinning, no /proc, no /sys
for blockbench's code (tests/off_linux/sitecustomize.py), and no prctl. A cell still measures
and says what it could not do; nothing claims what it did not read."""

import os
from pathlib import Path

from blockbench.measure import worker

OFF_LINUX = str(Path(__file__).parent / "off_linux")


def test_a_cell_measures_off_linux_and_records_what_it_could_not_read(measure_cli):
    env = {"PYTHONPATH": os.pathsep.join([OFF_LINUX, os.environ.get("PYTHONPATH", "")])}
    rc, record, err = measure_cli(
        "--device", "cpu", "--workload", "selu", "--impl", "numpy", "--size", "1000", env=env
    )
    assert rc == 0 and record["status"] == "ok", err
    prov = record["provenance"]
    assert prov["host"]["cpu_affinity"] is None  # no affinity to read
    assert prov["host"]["cpu_governors"] == {}
    assert prov["sampling"]["kernel_counters"] is False  # no per-task counters: not claimed
    assert record["phases"]["steady"].get("disturbance") is None
    for when in ("before", "after"):
        assert record["host_state"][when] == {
            "power": None,
            "boost": None,
            "driver": None,
            "governors": {},
            "throttle_counts": {},
        }
    said = "OSError: no per-core reading here: this system cannot pin a thread to a core"
    assert prov["core_speed"] == {"unavailable": said}
    assert prov["slurm"] is None


def test_a_worker_off_linux_asks_for_no_prctl(monkeypatch):
    """prctl(PR_SET_PDEATHSIG) is Linux's: elsewhere the worker does not call it."""
    monkeypatch.setattr(worker.sys, "platform", "darwin")

    def no_libc(*args, **kwargs):
        raise AssertionError("prctl asked for off Linux")

    monkeypatch.setattr(worker.ctypes, "CDLL", no_libc)
    worker.die_with_parent()  # returns without asking for libc
