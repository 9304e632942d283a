"""`blockbench claims`: each claim's devices, cells and first-stage time, from this machine's
own processes where there are some."""

import json
import re

from blockbench.measure import provenance
from blockbench.run import claims_list


def test_each_claim_says_its_cells_and_its_time_from_this_machines_processes(tmp_path, capsys):
    """Four processes of A1's cell (cpu/dot_xx/jax at 1000: a first stage of 4 in the
    default config) of 5 s each on this machine: 20 s; a cell never measured anywhere is
    estimated by the stated model, said so, and a GPU claim on a CPU-only config reads no
    cell. Each catalog is named."""
    cell = {"device": "cpu", "workload": "dot_xx", "impl": "jax", "size": 1000}
    record = {
        "cell": cell,
        "timeline": {"job_start": 100.0, "worker_exit": 105.0},
        "provenance": {"cpu_model": provenance.cpu_model()},
    }
    folder = tmp_path / "raw/local/cpu/dot_xx/jax/1000"
    folder.mkdir(parents=True)
    (folder / "0.json").write_text(json.dumps(record))
    empty = tmp_path / "reference"
    empty.mkdir()
    assert claims_list.main(["--raw", str(tmp_path / "raw"), "--reference", str(empty)]) == 0
    out = capsys.readouterr().out
    a1 = out.split("A1 dispatch-hides-compute: devices cpu\n", 1)[1].splitlines()
    assert a1[0].strip() == "cpu/dot_xx/jax at 1000"
    assert a1[1].strip() == "first stage ~20 s (cells: 1 measured here)"
    c1 = out.split("C1 cpu-jax-matmul-slower: devices cpu\n", 1)[1].splitlines()
    model = re.fullmatch(
        r"first stage ~(\d+) s \(cells: 2 from a model 2-core CPU \(never measured\)\)",
        c1[1].strip(),
    )
    # 2 cells x 3 processes, each a start of 2 s and at least one 2.5 s product (5000)
    assert model and int(model[1]) >= 6 * (2 + 2.5), c1[1]
    assert "catalog articles (config/claims/articles/claims.yaml): 15 claims" in out
    assert "B2 gpu-dot-transfer-cost: devices gpu (gpu not in this config); no cell" in out
