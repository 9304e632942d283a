"""One run, one kind of host, checked before a cell measures.

The first cell of a run records its host's kind (CPU model and logical CPUs) beside the run's
measurements; every later cell compares its own and, on another kind (a cluster's job placed
on another partition's node, a checkout moved to another machine), stops before measuring
with one line. The tables stage checks the finished files too (blockbench.judge.aggregate);
this finds it on the first wrong node, not after the grid.
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from blockbench.records.layout import IN_RUN

KIND_FILE = "host_kind.json"


def run_dir_of(out: Path, cell: dict[str, Any], repeat: int) -> Path | None:
    """The run's folder, where `out` is where the layout puts this cell's file (None for a
    file written elsewhere: a test's scratch file)."""
    expected = IN_RUN.format(**cell, repeat=repeat).split("/")
    return out.parents[len(expected) - 1] if list(out.parts[-len(expected) :]) == expected else None


def mismatch(run_dir: Path, here: dict[str, Any]) -> str | None:
    """Record `here` as the run's kind if none is recorded yet (atomically: the first of two
    racing jobs wins), else the one line saying how this host differs; None: the same kind."""
    path = run_dir / KIND_FILE
    if not path.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        fd, draft = tempfile.mkstemp(dir=run_dir, prefix=".host_kind.")
        with os.fdopen(fd, "w") as f:
            json.dump(here, f)
        try:
            os.link(draft, path)  # fails where another job recorded first
        except FileExistsError:
            pass
        finally:
            os.unlink(draft)
    first = json.loads(path.read_text())
    same = ("cpu_model", "cpus")
    if all(first.get(k) == here.get(k) for k in same):
        return None
    return (
        f"this host ({here['hostname']}: {here['cpu_model']}, {here['cpus']} logical CPUs) is "
        f"not the kind run {run_dir.name} began on ({first['hostname']}: {first['cpu_model']}, "
        f"{first['cpus']} logical CPUs, {path}): keep a run on one kind of node "
        "(docs/slurm.md), or measure here under another run_label"
    )
