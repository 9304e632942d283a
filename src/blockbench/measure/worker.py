"""Worker process: measures one cell and writes its record (run by blockbench.measure.parent).

Usage: python -m blockbench.measure.worker SPEC.json RESULT.json PARTIAL.json
"""

import ctypes
import os
import signal
import sys
import time
from pathlib import Path

from blockbench.measure import cores
from blockbench.records.params import CellSpec
from blockbench.records.spec import EXIT_BAD_CELL
from blockbench.records.store import read_json, write_json_atomic

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """A worker whose parent was killed must stop measuring at once: nobody will read its
    result, and the host lock it shares with the parent must not outlive the parent's
    wish. (The lock is held through an inherited descriptor until the worker exits too.)"""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(os.environ.get("BLOCKBENCH_PARENT_PID", os.getppid())):
        os._exit(1)  # the parent died before prctl took effect


def main(spec_path: str, result_path: str, partial_path: str) -> None:
    started = time.time()
    die_with_parent()
    spec = CellSpec.from_dict(read_json(Path(spec_path)))
    cores.pin(spec.cores)  # before JAX starts its CPU client, which sizes its pool from this
    from blockbench.measure import jax_compat
    from blockbench.measure.cell import measure
    from blockbench.workloads import registry

    try:
        if spec.params.catalog:
            registry.use_catalog(spec.params.catalog)
        _, impl = registry.lookup(spec.device, spec.workload, spec.impl, spec.size)
    except ValueError as exc:
        print(f"blockbench measure: error: {exc}", file=sys.stderr)
        sys.exit(EXIT_BAD_CELL)
    if impl.style != "numpy":  # a NumPy cell never loads JAX
        jax_compat.disable_compilation_cache()
    imported = time.time()
    record = measure(spec, lambda partial: write_json_atomic(Path(partial_path), partial))
    # which module ran, as its text was read: a module changed mid-run shows and is refused
    record["workload_source"] = registry.source_of(spec.workload).as_record()
    record["timeline"] = {
        "worker_start": started,
        "imported": imported,
        **record.get("timeline", {}),
        "worker_end": time.time(),
    }
    write_json_atomic(Path(result_path), record)
    # The record is written: skip the interpreter's and JAX's teardown (0.1 to 0.3 s a job on
    # 2 cores, every round of every cell), which measures nothing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
