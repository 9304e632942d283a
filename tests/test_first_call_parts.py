"""An accelerator's cold first call, taken apart (issue 79): the device's first use, the
compile and the first run, each timed in the cell's one cold process; the phase's sample is
the compile and the first run. A CPU cell's first call is measured as before."""

import copy
from pathlib import Path

import pytest
from conftest import run_measure
from fake_gpu import fake_gpu_env

from blockbench.measure import cell
from blockbench.records.spec import PHASES
from blockbench.records.store import SchemaError, validate

SHORT = ("--max-time-s", "0.05", "--min-samples", "3", "--accelerator-warmup-s", "0.05")


def measured(tmp_path: Path, device: str, impl: str, env: dict[str, str] | None) -> dict:
    """A matmul cell at 64, measured from the command line in a process of its own."""
    args = ("--device", device, "--workload", "matmul", "--impl", impl, "--size", "64")
    out = tmp_path / "cell.json"
    rc, record, err = run_measure(out, *args, *SHORT, env=env, lock=tmp_path / "lock")
    assert rc == 0 and record["status"] == "ok", (record and record["reason"]) or err
    validate(record)
    return record


@pytest.mark.parametrize("impl", ["jax_jit", "jax"])  # jax: C3's eager jnp.dot(x, x.T)
def test_a_gpu_cells_first_call_keeps_its_three_parts(tmp_path, impl):
    record = measured(tmp_path, "gpu", impl, fake_gpu_env())
    first = record["phases"]["first_call"]
    parts = first["parts_s"]
    assert list(parts) == ["device_first_use", "compile", "first_run"]
    assert all(seconds > 0 for seconds in parts.values()), parts
    # one cold call, whose sample is its compile and first run: not the device's first use
    assert first["n"] == 1 and first["note"] == cell.COLD_FIRST_CALL
    assert first["samples_s"] == [pytest.approx(parts["compile"] + parts["first_run"], rel=1e-9)]
    # the device's first use is the warm-up, made before any phase
    timeline = record["timeline"]
    assert parts["device_first_use"] <= timeline["warmed"] - timeline["provenance"]
    broken = copy.deepcopy(record)
    broken["phases"]["first_call"]["parts_s"]["run"] = 0.1  # no such part
    with pytest.raises(SchemaError):
        validate(broken)


def test_a_cpu_cells_first_call_has_no_parts_and_is_repeated(tmp_path):
    phases = measured(tmp_path, "cpu", "jax_jit", None)["phases"]
    assert list(phases) == list(PHASES)  # after trace_lower and compile, as before
    first = phases["first_call"]
    assert "parts_s" not in first and "note" not in first
    assert first["n"] >= 3 and len(first["samples_s"]) == first["n_all"]
