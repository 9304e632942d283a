"""One run, one kind of host: the first cell records it, a cell on another kind measures
nothing and says so in one line (its file stays missing, so it is measured again later)."""

import json

import pytest
from conftest import run_measure
from fake_gpu import NAME, use_fake_gpu

from blockbench.measure import host_kind
from blockbench.records.layout import Cell
from blockbench.records.spec import EXIT_WRONG_HOST

CELL = Cell("cpu", "selu", "numpy", 1000)
HERE = {"hostname": "n1", "cpu_model": "AMD EPYC", "cpus": 2}


def test_the_run_folder_is_found_only_where_the_layout_puts_the_file(tmp_path):
    out = tmp_path / "results/raw/lab/cpu/selu/numpy/1000/3.json"
    assert host_kind.run_dir_of(out, CELL, 3) == tmp_path / "results/raw/lab"
    assert host_kind.run_dir_of(tmp_path / "cell.json", CELL, 3) is None
    assert host_kind.run_dir_of(out, CELL, 4) is None


def test_the_first_cell_records_the_kind_and_later_ones_compare(tmp_path):
    assert host_kind.mismatch(tmp_path, HERE) is None
    assert json.loads((tmp_path / host_kind.KIND_FILE).read_text()) == HERE
    assert host_kind.mismatch(tmp_path, {**HERE, "hostname": "n2"}) is None  # same kind
    said = host_kind.mismatch(tmp_path, {"hostname": "n3", "cpu_model": "Intel Xeon", "cpus": 2})
    assert said.startswith("this host (n3: Intel Xeon, 2 logical CPUs) is not the kind run")
    assert "(n1: AMD EPYC, 2 logical CPUs" in said and "\n" not in said
    assert not list(tmp_path.glob(".host_kind.*"))  # no draft left behind


def test_a_cell_on_another_kind_of_host_measures_nothing(tmp_path):
    run = tmp_path / "results/raw/lab"
    run.mkdir(parents=True)
    first = {"hostname": "gpu-node-7", "cpu_model": "Made-up CPU 9000", "cpus": 96}
    (run / host_kind.KIND_FILE).write_text(json.dumps(first))
    out = run / "cpu/selu/numpy/1000/0.json"
    args = ("--device", "cpu", "--workload", "selu", "--impl", "numpy", "--size", "1000")
    rc, record, err = run_measure(out, *args, "--run-label", "lab", lock=tmp_path / "lock")
    assert rc == EXIT_WRONG_HOST and record is None and not out.exists()
    assert err.strip().startswith("not measuring: this host (")
    assert "is not the kind run lab began on (gpu-node-7: Made-up CPU 9000, 96" in err


H100 = {**HERE, "gpu_model": "NVIDIA H100 80GB HBM3", "gpu_driver": "570.86.15"}


def test_a_gpu_cells_kind_is_its_cpu_and_the_gpu_and_driver_nvidia_smi_reports(monkeypatch):
    use_fake_gpu(monkeypatch)  # nvidia-smi's stub first on PATH
    cpu = host_kind.here("cpu")
    assert set(cpu) == {"hostname", "cpu_model", "cpus"} and cpu["cpus"] >= 1
    gpu = host_kind.here("gpu")
    assert gpu == {**cpu, "gpu_model": NAME, "gpu_driver": "580.95.05"}
    monkeypatch.setenv("PATH", "/nonexistent")  # no driver: no GPU, and no crash
    assert host_kind.here("gpu") == {**cpu, "gpu_model": None, "gpu_driver": None}


def test_the_first_gpu_cell_records_the_gpu_and_later_gpu_cells_compare(tmp_path):
    """A run may open on a CPU cell: its kind has no GPU, and the first GPU cell adds it."""
    assert host_kind.mismatch(tmp_path, HERE) is None
    assert not (tmp_path / host_kind.GPU_KIND_FILE).exists()
    assert host_kind.mismatch(tmp_path, H100) is None
    assert json.loads((tmp_path / host_kind.KIND_FILE).read_text()) == HERE
    gpu = json.loads((tmp_path / host_kind.GPU_KIND_FILE).read_text())
    assert gpu == {"hostname": "n1", "gpu_model": H100["gpu_model"], "gpu_driver": "570.86.15"}
    assert host_kind.mismatch(tmp_path, {**H100, "hostname": "n2"}) is None  # same kind
    assert host_kind.mismatch(tmp_path, HERE) is None  # a CPU cell compares its CPU alone
    said = host_kind.mismatch(tmp_path, {**H100, "hostname": "n3", "gpu_driver": "580.95.05"})
    assert said.startswith(
        "this host's GPU (n3: NVIDIA H100 80GB HBM3, driver 580.95.05) is not the kind run"
    )
    assert "(n1: NVIDIA H100 80GB HBM3, driver 570.86.15, " in said and "\n" not in said
    said = host_kind.mismatch(tmp_path, {**H100, "gpu_model": "NVIDIA A100-SXM4-40GB"})
    assert "(n1: NVIDIA A100-SXM4-40GB, driver 570.86.15) is not" in said
    assert not list(tmp_path.glob(".host_kind.*"))


@pytest.mark.parametrize("first", [HERE, H100])
def test_a_host_without_a_gpu_records_none_but_differs_from_one_recorded(tmp_path, first):
    """Its GPU cell would be `unavailable` in a run of GPUs: it measures nothing, and stays
    to be measured on a node of the run's kind."""
    bare = {**HERE, "gpu_model": None, "gpu_driver": None}
    assert host_kind.mismatch(tmp_path, first) is None
    said = host_kind.mismatch(tmp_path, bare)
    if first is HERE:
        assert said is None and not (tmp_path / host_kind.GPU_KIND_FILE).exists()
    else:
        assert said.startswith("this host's GPU (n1: no GPU that nvidia-smi reports) is not")
