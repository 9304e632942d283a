"""Runs from another kind of machine, made from a committed run's fixture.

A test that needs "a run measured elsewhere" must not depend on which machine runs the
suite: a committed run of an Intel Xeon is "another machine" on an AMD host and the same
kind on an Intel one. These copies carry a CPU model no real host reports.

REFERENCE is part of the run `epyc-65b7fad` (commit 65b7fad, a 2-core AMD EPYC VM, method
version 2), the reference run of its day: the cells of A1 and A2, C1's block, the SELU sweep
of C6 and D1's block (tests/data/README.md; the whole run is in git history at 6ab2eca).
"""

import json
from pathlib import Path

from blockbench.records.layout import raw_files

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests/data"
REFERENCE = DATA / "runs/epyc-65b7fad"
ELSEWHERE_CPU = "Made-up CPU 9000 (tests/hosts.py)"


def run_elsewhere(
    dest: Path, label: str = "elsewhere", subdir: str = "", source: Path = REFERENCE
) -> Path:
    """Copy (part of) the reference run's fixture to `dest` as run `label` of a made-up
    machine."""
    for path in raw_files(source):
        rel = path.relative_to(source)
        if subdir and not str(rel).startswith(subdir):
            continue
        record = json.loads(path.read_text())
        record["provenance"]["config"]["run_label"] = label
        host = record["provenance"]["host"]
        host.update(hostname=f"{label}-host", cpu_model=ELSEWHERE_CPU)
        device = record["provenance"].get("device") or {}
        if device.get("platform") == "cpu":
            device["model"] = ELSEWHERE_CPU
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(json.dumps(record))
    return dest
