"""Worker process: measures one cell and writes its record (run by blockbench.measure).

Usage: python -m blockbench.worker SPEC.json RESULT.json PARTIAL.json
"""

import sys
from pathlib import Path

import jax

from blockbench.cell import measure
from blockbench.registry import lookup
from blockbench.results_io import read_json, write_json_atomic
from blockbench.spec import EXIT_BAD_CELL, CellSpec


def main(spec_path: str, result_path: str, partial_path: str) -> None:
    # The persistent cache would make compile times bimodal (hits are free); it stays off.
    jax.config.update("jax_enable_compilation_cache", False)
    spec = CellSpec.from_dict(read_json(Path(spec_path)))
    try:
        lookup(spec.device, spec.workload, spec.impl, spec.size)
    except ValueError as exc:
        print(f"measure.py: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_BAD_CELL)
    record = measure(spec, lambda partial: write_json_atomic(Path(partial_path), partial))
    write_json_atomic(Path(result_path), record)


if __name__ == "__main__":
    main(*sys.argv[1:4])
