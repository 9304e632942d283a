"""One run, one kind of host: the first cell records it, a cell on another kind measures
nothing and says so in one line (its file stays missing, so it is measured again later)."""

import json

from conftest import run_measure

from blockbench.measure import run_host
from blockbench.records.spec import EXIT_WRONG_HOST

CELL = {"device": "cpu", "workload": "selu", "impl": "numpy", "size": 1000}
HERE = {"hostname": "n1", "cpu_model": "AMD EPYC", "cpus": 2}


def test_the_run_folder_is_found_only_where_the_layout_puts_the_file(tmp_path):
    out = tmp_path / "results/raw/lab/cpu/selu/numpy/1000/3.json"
    assert run_host.run_dir_of(out, CELL, 3) == tmp_path / "results/raw/lab"
    assert run_host.run_dir_of(tmp_path / "cell.json", CELL, 3) is None
    assert run_host.run_dir_of(out, CELL, 4) is None


def test_the_first_cell_records_the_kind_and_later_ones_compare(tmp_path):
    assert run_host.mismatch(tmp_path, HERE) is None
    assert json.loads((tmp_path / run_host.KIND_FILE).read_text()) == HERE
    assert run_host.mismatch(tmp_path, {**HERE, "hostname": "n2"}) is None  # same kind
    said = run_host.mismatch(tmp_path, {"hostname": "n3", "cpu_model": "Intel Xeon", "cpus": 2})
    assert said.startswith("this host (n3: Intel Xeon, 2 logical CPUs) is not the kind run")
    assert "(n1: AMD EPYC, 2 logical CPUs" in said and "\n" not in said
    assert not list(tmp_path.glob(".host_kind.*"))  # no draft left behind


def test_a_cell_on_another_kind_of_host_measures_nothing(tmp_path):
    run = tmp_path / "results/raw/lab"
    run.mkdir(parents=True)
    first = {"hostname": "gpu-node-7", "cpu_model": "Made-up CPU 9000", "cpus": 96}
    (run / run_host.KIND_FILE).write_text(json.dumps(first))
    out = run / "cpu/selu/numpy/1000/0.json"
    args = ("--device", "cpu", "--workload", "selu", "--impl", "numpy", "--size", "1000")
    rc, record, err = run_measure(out, *args, "--run-label", "lab", lock=tmp_path / "lock")
    assert rc == EXIT_WRONG_HOST and record is None and not out.exists()
    assert err.strip().startswith("not measuring: this host (")
    assert "is not the kind run lab began on (gpu-node-7: Made-up CPU 9000, 96" in err
