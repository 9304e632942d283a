"""Runs from another kind of machine, made from the committed reference run.

A test that needs "a run measured elsewhere" must not depend on which machine runs the
suite: a committed run of an Intel Xeon is "another machine" on an AMD host and the same
kind on an Intel one. These copies carry a CPU model no real host reports.
"""

import json
from pathlib import Path

from blockbench.records.layout import raw_files

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results/reference/dev-2core-epyc/raw/epyc-65b7fad"
ELSEWHERE_CPU = "Made-up CPU 9000 (tests/hosts.py)"


def run_elsewhere(
    dest: Path, label: str = "elsewhere", subdir: str = "", source: Path = REFERENCE
) -> Path:
    """Copy (part of) the reference run to `dest` as run `label` of a made-up machine."""
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
