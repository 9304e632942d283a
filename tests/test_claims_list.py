"""`blockbench claims`: each claim's devices, cells and first-stage time, from this machine's
own processes where there are some."""

import json
import re
from pathlib import Path
from typing import Any

from blockbench.measure import provenance
from blockbench.pipeline import claims_list
from blockbench.records.layout import Cell

# A committed run's records: the test reads them where `blockbench measure` writes the host
REFERENCE_RAW = Path(__file__).resolve().parents[1] / "results/reference/xeon-m207-2cpu/run/raw"


def copy_record(raw: Path, cell_path: str, repeat: int, cpu_model: str) -> dict[str, Any]:
    """A committed record into `raw/local`, as if measured on `cpu_model` (where
    provenance.host() keeps it): only the CPU is made up, never the record's shape."""
    record = json.loads((REFERENCE_RAW / "p3-r1" / cell_path / f"{repeat}.json").read_text())
    record["provenance"]["host"]["cpu_model"] = cpu_model
    folder = raw / "local" / cell_path
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{repeat}.json").write_text(json.dumps(record))
    return record


def wall(record: dict[str, Any]) -> float:
    return record["timeline"]["worker_exit"] - record["timeline"]["job_start"]


def test_each_claim_says_its_cells_and_its_time_from_this_machines_processes(tmp_path, capsys):
    """Real records: one of A1's cell (cpu/dot_xx/jax at 1000: a first stage of 4 in the
    default config) measured on this CPU is used, 4 x its wall; one of the same cell and one
    of C1's measured on another CPU are not, so C1's two cells are estimated by the stated
    model, said so. A GPU claim on a CPU-only config reads no cell. Each catalog is named."""
    here, other = provenance.cpu_model(), f"not {provenance.cpu_model()}"
    raw = tmp_path / "raw"
    mine = copy_record(raw, "cpu/dot_xx/jax/1000", 0, here)
    copy_record(raw, "cpu/dot_xx/jax/1000", 1, other)
    copy_record(raw, "cpu/matmul/numpy/5000", 0, other)
    assert claims_list.walls([raw / "local"], here) == {
        Cell("cpu", "dot_xx", "jax", 1000): [wall(mine)]
    }
    empty = tmp_path / "reference"
    empty.mkdir()
    assert claims_list.main(["--raw", str(raw), "--reference", str(empty)]) == 0
    out = capsys.readouterr().out
    a1 = out.split("A1 dispatch-hides-compute: devices cpu\n", 1)[1].splitlines()
    assert a1[0].strip() == "cpu/dot_xx/jax at 1000"
    assert a1[1].strip() == f"first stage ~{4 * wall(mine):.0f} s (cells: 1 measured here)"
    c1 = out.split("C1 cpu-jax-matmul-slower: devices cpu\n", 1)[1].splitlines()
    model = re.fullmatch(
        r"first stage ~(\d+) s \(cells: 2 from a model 2-core CPU \(never measured\)\)",
        c1[1].strip(),
    )
    # 2 cells x 4 processes (C1's repeats), each a start of 2 s and at least one 2.5 s
    # product (5000)
    assert model and int(model[1]) >= 8 * (2 + 2.5), c1[1]
    assert "catalog articles (config/claims/articles/claims.yaml): 15 claims" in out
    assert "B2 gpu-dot-transfer-cost: devices gpu (gpu not in this config); no cell" in out
