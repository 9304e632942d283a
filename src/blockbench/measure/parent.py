"""Measure one grid cell and write its JSON: the command behind every measurement job.

The parent process stays light: it checks the cell, takes the host's measurement lock,
starts a worker, and enforces the time budget from outside, which an in-process alarm could
not do while XLA compiles in C++. Whatever happens to the worker (time-out, kill by the
out-of-memory killer, crash) becomes a status in a schema-valid JSON, written atomically.
Only a malformed request (unknown workload, bad size) exits non-zero. The parent imports
neither JAX nor SciPy (seconds per cell); the worker validates the cell before measuring.
"""

import argparse
import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from blockbench.measure import cores, gpu_ready, host_kind, host_power, nvidia, provenance
from blockbench.measure.host_load import HostLoad, load_warnings
from blockbench.records.layout import Cell, first_process, installed_jax
from blockbench.records.params import CellSpec, MeasureParams
from blockbench.records.spec import (
    DEVICES,
    EXIT_BAD_CELL,
    EXIT_WRONG_HOST,
    METHOD_VERSION,
)
from blockbench.records.store import (
    SCHEMA_VERSION,
    can_validate,
    read_json,
    validate,
    write_json_atomic,
)

STDERR_TAIL = 2000
# Share of the budget a worker may spend sampling; the rest is for the correctness check
# and writing, so a slow cell ends with fewer samples (and says so), not with a kill.
SAMPLING_SHARE = 0.85
# The folder holding the blockbench package: the worker imports it from there, also in
# another JAX release's environment, which has no blockbench installed.
SRC = Path(__file__).resolve().parents[2]


def default_lock_path() -> Path:
    return Path(os.environ.get("BLOCKBENCH_LOCK", Path(tempfile.gettempdir()) / "blockbench.lock"))


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def lock_path(lock: Path | None, cluster_lock_dir: Path | None) -> Path:
    """The host's measurement lock: --lock, else $BLOCKBENCH_LOCK, else inside a SLURM job
    <cluster_lock_dir>/<node>.lock, else one in the temporary directory.

    On a cluster the temporary directory is often private to each job (a per-job /tmp), so
    two jobs on one node would each hold a lock of their own; the cluster's lock directory
    is one that every job on the node sees (by default under the workflow's directory, which
    every job shares), and the node's name in the file keeps nodes apart."""
    if lock is not None:
        return lock
    if "BLOCKBENCH_LOCK" in os.environ or not (cluster_lock_dir and "SLURM_JOB_ID" in os.environ):
        return default_lock_path()
    return cluster_lock_dir / f"{node_name()}.lock"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The cell, where its record goes, how this process runs, and the settings of
    MeasureParams (one flag each, from its fields)."""
    p = argparse.ArgumentParser(prog="blockbench measure", description=__doc__.splitlines()[0])
    p.add_argument("--device", required=True, choices=DEVICES)
    p.add_argument("--workload", required=True)
    p.add_argument("--impl", required=True)
    p.add_argument("--size", required=True, type=int)
    p.add_argument("--out", required=True, type=Path, help="JSON file to write")
    p.add_argument(
        "--repeat",
        type=int,
        default=0,
        help="which of the cell's independent worker processes this is (recorded)",
    )
    p.add_argument("--run-label", default="local")
    p.add_argument(
        "--no-isolation",
        dest="isolate",
        action="store_false",
        help="keep a JAX cell's measuring thread on the cell's cores (default: on a core "
        "outside them where the process may use one, so XLA's pool never preempts it)",
    )
    p.add_argument(
        "--lock",
        type=Path,
        default=None,
        help="host-wide lock file: one measurement per host at a time (default: "
        "$BLOCKBENCH_LOCK, else blockbench.lock in the temporary directory)",
    )
    MeasureParams.add_arguments(p)
    return p.parse_args(argv)


@contextmanager
def host_lock(path: Path) -> Iterator[int]:
    """Hold the host's measurement lock: two measurements at once would share cores,
    caches and memory bandwidth, whatever the scheduler believes. Yields the descriptor:
    a worker that inherits it keeps the lock held until it exits, even if we die first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for the measurement lock {path}", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def worker_env(device: str, n_threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    env["BLOCKBENCH_PARENT_PID"] = str(os.getpid())
    # Snakemake exports its rule's `threads` (1) into these; NumPy must get the cell's cores.
    env.update(cores.thread_env(n_threads))
    # Set outright, never inherited: a CPU cell must not start a GPU backend that grabs
    # memory and threads (nor fail on an exported JAX_PLATFORMS=cuda), and an accelerator
    # cell must not fall back to the CPU quietly when its backend fails to start: named
    # explicitly, JAX raises the backend's own error, which the cell records as its reason.
    env["JAX_PLATFORMS"] = gpu_ready.jax_platforms(device)
    return env


def run_worker(
    spec: CellSpec, budget_s: float, lock_fd: int, python: str = sys.executable
) -> dict[str, Any] | None:
    """The worker's record, or None when the worker rejected the cell itself."""
    with tempfile.TemporaryDirectory(prefix="blockbench-") as tmp:
        spec_path, result, partial, err_path = (
            Path(tmp) / n for n in ("spec.json", "result.json", "partial.json", "stderr.txt")
        )
        write_json_atomic(spec_path, spec.as_dict())
        cmd = [python, "-m", "blockbench.measure.worker", str(spec_path), str(result), str(partial)]
        spawned = time.time()
        with err_path.open("w+") as err:
            proc = subprocess.Popen(
                cmd,
                stdout=err,
                stderr=err,
                env=worker_env(spec.device, len(spec.cores)),
                start_new_session=True,
                pass_fds=(lock_fd,),
            )
            try:
                rc = proc.wait(timeout=budget_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = None
            except BaseException:
                # Ctrl-C reaches this process alone (the worker has a session of its own):
                # the worker goes first, so that it writes nothing more into the folder
                # being removed (a race that printed a traceback)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise
            err.seek(0)
            stderr = err.read()
        sys.stderr.write(stderr)
        if rc is None:
            return timed_out(read_json(partial) if partial.exists() else {}, budget_s)
        if result.exists():
            record = read_json(result)
            record["timeline"] = {"spawned": spawned, **record.get("timeline", {})}
            return record
        if rc == EXIT_BAD_CELL:
            return None
        return crashed(rc, stderr)


def timed_out(partial: dict[str, Any], budget_s: float) -> dict[str, Any]:
    """Keep the phases that finished: a compile that outlives the budget is itself a result."""
    phase = partial.get("current_phase")
    where = f" while measuring phase {phase}" if phase else ""
    return {
        "status": "timeout",
        "reason": f"over the cell's time budget of {budget_s:g} s{where}",
        "phases": partial.get("phases", {}),
        "check": None,
        "provenance": partial.get("provenance") or provenance.base(),
    }


def unavailable(reason: str) -> dict[str, Any]:
    """A process that is not run: its JAX release cannot run at all (its environment could
    not be made), or the GPU kit left its block out for time."""
    return {
        "status": "unavailable",
        "reason": reason,
        "phases": {},
        "check": None,
        "provenance": provenance.base(),
    }


def version_warnings(record: dict[str, Any], planned: str) -> list[str]:
    """The worker must have imported the release its cell was planned for."""
    imported = (record["provenance"].get("jax") or {}).get("imported") or {}
    got = imported.get("jax")
    if got is None or got == planned:
        return []
    return [f"jax version: planned {planned}, the worker imported {got}"]


def process_start() -> float:
    """When this process started, on time.time()'s clock: from its age in the kernel's ticks
    since boot (psutil's create_time adds a boot time rounded to the second)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return psutil.Process().create_time()
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


def crashed(rc: int, stderr: str) -> dict[str, Any]:
    tail = stderr[-STDERR_TAIL:].strip()
    if rc == -signal.SIGKILL:
        status, reason = "oom", "worker killed by SIGKILL, most likely the out-of-memory killer"
    else:
        status, reason = "error", f"worker exited with code {rc} without a result"
    return {
        "status": status,
        "reason": f"{reason}; stderr: {tail}" if tail else reason,
        "phases": {},
        "check": None,
        "provenance": provenance.base(),
    }


def cell_loops(out: Path, repeat: int) -> dict[str, int]:
    """The loops a sample of each calibrated phase, as the cell's first process chose them
    (its record beside this one's, which the workflow makes every later process wait for):
    every process of a cell then times the same loop, and the spread between them is the
    machine's, not the calibration's (a 100 us call read twice as slow at one loop as at
    50). Empty for the first process itself, and where the first has no measured record:
    each phase then calibrates its own, and its record says so (`loops_from`)."""
    if repeat == 0:
        return {}
    try:
        first = read_json(first_process(out))
    except (OSError, ValueError):
        return {}
    if first.get("status") != "ok":
        return {}
    phases = first["phases"].items()
    return {name: p["loops"] for name, p in phases if p.get("loops_from") == "calibrated"}


def main(argv: list[str] | None = None) -> int:
    """The command line (`blockbench measure`): its flags are the cell's and MeasureParams'
    fields, parsed into the same record the workflow passes."""
    args = parse_args(argv)
    cell = Cell(args.device, args.workload, args.impl, args.size)
    return measure(
        cell,
        args.repeat,
        args.out,
        args.run_label,
        MeasureParams.from_args(args),
        isolate=args.isolate,
        lock=args.lock,
    )


@dataclass(frozen=True)
class Ran:
    """How one worker process ran, as the parent saw it under the host's lock."""

    planned: str  # the JAX release the cell was planned for
    host_load: dict[str, Any]
    host_state: dict[str, Any]  # before and after
    started: float  # the lock taken
    finished: float


def run_locked(spec: CellSpec, lock_fd: int, started: float) -> tuple[dict[str, Any] | None, Ran]:
    """The process's outcome, run (or recorded as not run) while the lock is held (None: the
    worker rejected the cell itself), and the host's load and state around it."""
    params = spec.params
    env = read_json(params.jax_env) if params.jax_env else None
    planned = env["jax_version"] if env else installed_jax()
    load, state = HostLoad(spec.cores), host_power.read(spec.cores)
    if params.not_run:
        outcome = unavailable(params.not_run)
    elif env and not env["usable"]:
        outcome = unavailable(env["reason"])
    else:
        outcome = run_worker(
            spec, params.budget_s, lock_fd, env["python"] if env else sys.executable
        )
    host_load = load.finish()
    state = {"before": state, "after": host_power.read(spec.cores)}
    return outcome, Ran(planned, host_load, state, started, time.time())


def process_record(
    spec: CellSpec,
    outcome: dict[str, Any],
    ran: Ran,
    repeat: int,
    out: Path,
    run_label: str,
    lock: Path,
    checked: bool,
) -> dict[str, Any]:
    """The process's record: the worker's outcome, when it ran, the settings it ran with
    (unset ones null) and where, and the warnings about the host it ran on."""
    params = spec.params
    # the job's process start (Snakemake's script, this parent's imports) and the lock's wait
    outcome["timeline"] = {
        "job_start": process_start(),
        "locked": ran.started,
        **outcome.get("timeline", {}),
        "worker_exit": ran.finished,
    }
    unset = {k: v or None for k, v in params.as_dict().items() if k != "lock_dir"}
    outcome["provenance"]["config"] = unset | {
        "run_label": run_label,
        "budget_s": params.budget_s,
        "seed": params.seed,
        "threads": params.threads,
        "block": params.block,
        "repeat": repeat,
        "lock": str(lock),
        "schema_validated": checked,
        "loops_from": str(first_process(out)) if spec.loops else None,
        "jax_version": ran.planned,
    }
    record = {
        "schema_version": SCHEMA_VERSION,
        "method_version": METHOD_VERSION,
        "cell": spec.cell,
        "repeat": repeat,
        "warnings": [],
        **outcome,
        "host_load": ran.host_load,
        "host_state": ran.host_state,
        "started_at": ran.started,
        "finished_at": ran.finished,
    }
    record["warnings"] = (
        record["warnings"]
        + load_warnings(ran.host_load)
        + version_warnings(record, ran.planned)
        + host_power.speed_warnings(ran.host_state["before"], ran.host_state["after"])
        + nvidia.throttle_warnings(record["provenance"])
    )
    return record


def measure(
    cell: Cell,
    repeat: int,
    out: str | Path,
    run_label: str,
    params: MeasureParams,
    isolate: bool = True,
    lock: Path | None = None,
) -> int:
    """Measure worker process `repeat` of `cell` and write its record to `out`: what the
    workflow's measure job, the GPU kit and the command line each call. 0 once a record is
    written (whatever its status); EXIT_BAD_CELL or EXIT_WRONG_HOST where none is."""
    out = Path(out)
    lock = lock_path(lock, Path(params.lock_dir) if params.lock_dir else None)
    run_dir = host_kind.run_dir_of(out, cell, repeat)
    if run_dir is not None:
        wrong = host_kind.mismatch(run_dir, host_kind.here(cell.device))
        if wrong:  # no file: the cell stays to be measured on a node of the run's kind
            print(f"not measuring: {wrong}", file=sys.stderr)
            return EXIT_WRONG_HOST
    with host_lock(lock) as lock_fd:
        started = time.time()
        spec = CellSpec(
            **asdict(cell),
            params=params,
            cores=(chosen := cores.choose(params.threads)),
            spare_cores=cores.spare(chosen),
            deadline=started + SAMPLING_SHARE * params.budget_s,
            isolate=isolate,
            loops=cell_loops(out, repeat),
        )
        outcome, ran = run_locked(spec, lock_fd, started)
    if outcome is None:
        return EXIT_BAD_CELL
    # A cell's first process is checked against the schema as it is written: a record's shape
    # is its cell's code path, the same in every process, and every record is checked again
    # wherever it is read (judge.aggregate.read_record). Checking each process here cost
    # 0.11 s of a fresh process (importing jsonschema, compiling the schema) between two
    # measurements, about 4% of a default run.
    checked = repeat == 0 and can_validate()
    record = process_record(spec, outcome, ran, repeat, out, run_label, lock, checked)
    if checked:
        validate(record)
    write_json_atomic(out, record)
    steady = record["phases"].get("steady", {}).get("median_s")
    shown = f", steady median {steady:.3g} s" if steady is not None else ""
    print(
        f"{cell.workload}/{cell.impl} on {cell.device}, size {cell.size}: "
        f"{record['status']}{shown} {record['reason']}".rstrip()
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
