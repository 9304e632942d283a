"""The one-cell command: statuses as results, programming errors as failures, files intact."""

import json
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from blockbench.measure import host_lock
from blockbench.results_io import validate, write_json_atomic


def test_an_ok_cell_records_phases_check_and_provenance(measure_cli):
    rc, record, _ = measure_cli(
        "--device", "cpu", "--workload", "selu", "--impl", "jax_jit", "--size", "1000"
    )
    assert rc == 0 and record["status"] == "ok"
    assert record["cell"] == {"device": "cpu", "workload": "selu", "impl": "jax_jit", "size": 1000}
    assert record["check"]["passed"] and record["check"]["max_rel_err"] < 1e-6
    prov = record["provenance"]
    assert prov["software"]["packages"]["jax"] and prov["device"]["platform"] == "cpu"
    assert prov["jax"]["compilation_cache"]["enabled"] is False
    assert prov["config"]["rule"]["max_time_s"] == 0.3
    assert record["started_at"] < record["finished_at"]
    # backend start-up is not counted as compile: the first samples are no outliers
    for phase in ("trace_lower", "compile"):
        samples = record["phases"][phase]["samples_s"]
        assert samples[0] < 2.5 * record["phases"][phase]["median_s"], (phase, samples)


def test_an_absent_device_is_unavailable_and_says_what_jax_sees(measure_cli):
    rc, record, _ = measure_cli(
        "--device", "gpu", "--workload", "matmul", "--impl", "jax", "--size", "64"
    )
    assert rc == 0
    assert record["status"] == "unavailable"
    assert "no gpu device" in record["reason"] and "cpu:0" in record["reason"]
    assert record["phases"] == {}


@pytest.mark.parametrize(
    "args",
    [
        ("--device", "cpu", "--workload", "nope", "--impl", "jax", "--size", "8"),
        ("--device", "cpu", "--workload", "stencil", "--impl", "scan", "--size", "7"),
        ("--device", "xpu", "--workload", "selu", "--impl", "jax", "--size", "8"),
    ],
)
def test_a_malformed_request_fails_loudly_and_writes_nothing(measure_cli, args):
    rc, record, stderr = measure_cli(*args)
    assert rc != 0 and record is None
    assert "error" in stderr


def test_persistent_compilation_cache_cannot_leak_into_compile_times(measure_cli, tmp_path):
    cache = tmp_path / "jax-cache"
    env = {
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }
    rc, record, _ = measure_cli(
        "--device", "cpu", "--workload", "selu", "--impl", "jax_jit", "--size", "100", env=env
    )
    assert rc == 0 and record["status"] == "ok"
    assert not cache.exists() or not any(cache.iterdir())
    assert record["provenance"]["jax"]["compilation_cache"] == {"enabled": False, "dir": str(cache)}


def test_a_cell_over_its_budget_is_a_timeout_that_keeps_finished_phases(measure_cli):
    # jit of the unrolled loop at 16x8 compiles for seconds: far over a 4 s budget
    rc, record, _ = measure_cli(
        "--device",
        "cpu",
        "--workload",
        "stencil",
        "--impl",
        "loop_jit",
        "--size",
        "16",
        "--budget-s",
        "4",
    )
    assert rc == 0 and record["status"] == "timeout"
    assert "time budget of 4 s" in record["reason"] and "phase" in record["reason"]
    assert record["finished_at"] - record["started_at"] < 15
    assert "host_to_device" in record["phases"]


def test_out_of_memory_is_a_status(measure_cli):
    # 300000^2 float32 is 360 GB: the allocation fails at once
    rc, record, _ = measure_cli(
        "--device", "cpu", "--workload", "matmul", "--impl", "numpy", "--size", "300000"
    )
    assert rc == 0 and record["status"] == "oom"
    assert "allocate" in record["reason"]


def test_schema_rejects_a_record_that_breaks_the_contract(measure_cli):
    _, record, _ = measure_cli(
        "--device", "gpu", "--workload", "selu", "--impl", "jax", "--size", "8"
    )
    for broken in (
        {**record, "status": "fine"},
        {k: v for k, v in record.items() if k != "cell"},
        {**record, "reason": ""},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path):
    target = tmp_path / "cell.json"
    write_json_atomic(target, {"status": "ok"})
    with pytest.raises(ValueError):
        write_json_atomic(target, {"median": float("nan")})  # NaN is not JSON
    assert json.loads(target.read_text()) == {"status": "ok"}
    assert [p.name for p in tmp_path.iterdir()] == ["cell.json"]


def test_host_lock_serialises_measurements(tmp_path: Path):
    lock, order = tmp_path / "lock", []

    def second():
        with host_lock(lock):
            order.append(("second", time.monotonic()))

    with host_lock(lock):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        order.append(("first-done", time.monotonic()))
    t.join(5)
    assert [name for name, _ in order] == ["first-done", "second"]
