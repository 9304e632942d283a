#!/usr/bin/env python3
"""Set up everything, then run the pipeline, the test suite or the rebuild of one run.

    python3 scripts/bootstrap.py run  [snakemake options]   # default CPU grid + report
    python3 scripts/bootstrap.py test [pytest options]      # the whole test suite
    python3 scripts/bootstrap.py test --fast                # without the slow tests
    python3 scripts/bootstrap.py run --gpu [snakemake options]   # with GPU cells (docs/gpu.md)
    python3 scripts/bootstrap.py regenerate RUN_DIR [options]   # `blockbench regenerate`

`test` runs pytest twice: the tests on two workers (pytest-xdist), then those marked `serial`,
which judge times they measured here, alone.

Ctrl-C lets the step it runs stop itself (Snakemake ends its jobs and removes its lock), then
says so in one line and exits 130: run the same command again to resume.

Needs only Python 3.11+ (standard library) and network access to PyPI. It creates `.venv/`
beside this repository, installs the pinned versions of requirements.lock and the project,
and, when the lock file or pyproject.toml changed, makes `.venv/` anew: installing a new
lock over an old environment would leave the packages the lock dropped in place. The project
is installed editable, so `.venv/bin/blockbench` (its one command, `blockbench --help`) runs
this checkout's code as it stands; the workflow's jobs do not rely on it (they put src/ on
PYTHONPATH).

`regenerate` rebuilds a run's tables, figures, claims and report from its raw JSON, measuring
nothing: `.venv/bin/blockbench regenerate RUN_DIR [options]` (its `--help`), paths relative
to this repository.

A run that asks for a GPU (`--gpu`, or `devices` naming gpu in a --config value or in a
--configfile) uses `.venv-cuda12/` instead, made the same way from requirements-cuda12.lock
(the same packages and the CUDA 12 build of the same JAX), and checks that JAX can use a GPU
here before Snakemake starts: if not, it stops with one line naming the cause and runs nothing.
`--config check_gpu=false` keeps the CPU environment (GPU cells measured elsewhere, judged here).
Submitting to SLURM, the check is left to the workflow's first GPU job, on a GPU node.
"""

import hashlib
import itertools
import os
import re
import signal
import subprocess
import sys
import venv
from pathlib import Path
from types import FrameType
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[1]
BIN_DIR = "Scripts" if os.name == "nt" else "bin"
LIB_DIR = "Lib" if os.name == "nt" else "lib"  # site-packages is under it
PIP = "26.3"  # the installer itself is pinned too: its resolver and output change by release
# A config value or file line that puts GPU cells in the grid: `devices=[cpu,gpu]`,
# `devices: [cpu, gpu]` (a workload's own devices too).
ASKS_FOR_GPU = re.compile(r"\bdevices\s*[=:].*\bgpu\b")
# ... unless the run measures none: `check_gpu=false` (GPU cells measured elsewhere, judged here)
NO_GPU_CHECK = re.compile(r"^check_gpu=(false|False|0)$")
# Snakemake's dry run: its long flags, or -n alone or among other short flags (`-np`)
DRY_RUN = re.compile(r"--dry-?run|-[A-Za-z]*n[A-Za-z]*")
INTERRUPTED = 130  # a shell's code for a command that Ctrl-C ended (128 + SIGINT)


class Env:
    """One virtual environment made from one lock (and the project): .venv or .venv-cuda12."""

    def __init__(self, name: str, lock: str) -> None:
        self.dir = ROOT / name
        self.lock = ROOT / lock
        self.bin = self.dir / BIN_DIR
        self.python = self.bin / "python"
        self.stamp = self.dir / ".blockbench-installed"

    def digest(self) -> str:
        inputs = (self.lock, ROOT / "pyproject.toml")
        return hashlib.sha256(b"".join(p.read_bytes() for p in inputs)).hexdigest()


CPU = Env(".venv", "requirements.lock")
CUDA = Env(".venv-cuda12", "requirements-cuda12.lock")


def say(message: str) -> None:
    print(f"[bootstrap] {message}", flush=True)


def exit_interrupted() -> NoReturn:
    """One line for Ctrl-C, not a traceback: a run stopped this way resumes where it was."""
    say("interrupted: run the same command again to resume")
    sys.exit(INTERRUPTED)


def on_terminal_foreground() -> bool:
    """Whether this process is in its terminal's foreground process group: a SIGINT here is
    then Ctrl-C, which the terminal sent to the whole group, the running step too."""
    try:
        tty = os.open("/dev/tty", os.O_RDONLY)
    except OSError:  # no terminal; on Windows, Ctrl-C reaches every process of the console
        return os.name == "nt"
    try:
        return os.tcgetpgrp(tty) == os.getpgrp()
    finally:
        os.close(tty)


def run(*cmd: str | Path, env: dict[str, str] | None = None, cwd: Path = ROOT) -> int:
    """Run one step; its exit code. On SIGINT the step is left to stop itself, then one line
    says so (exit_interrupted): Snakemake ends its jobs and removes its lock, which
    subprocess.call, killing it at once, did not let it do (the same command then stopped on
    the lock). Ctrl-C in a terminal reached the step already; a SIGINT sent to this process
    alone (`kill -INT`) is passed on, once: a second would cut Snakemake's shutdown short."""
    child = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env)
    interrupted = False

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        if not interrupted and not on_terminal_foreground():
            child.send_signal(signal.SIGINT)
        interrupted = True

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        code = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        exit_interrupted()
    return code


def create_venv(env: Env) -> None:
    """A venv with pip, made anew where it was made from another lock; where the OS split
    ensurepip out (Debian without python3-venv), make it without pip and install pip into it
    with the system's pip."""
    stale = env.stamp.exists() and env.stamp.read_text() != env.digest()
    if env.python.exists() and not stale:
        return
    say(f"{'re-creating' if stale else 'creating'} {env.dir}")
    try:
        venv.create(env.dir, with_pip=True, clear=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        say(f"venv with pip failed ({exc}); creating it without pip")
        venv.create(env.dir, with_pip=False, clear=True)
        if run(sys.executable, "-m", "pip", "--python", env.python, "install", "pip") != 0:
            sys.exit(
                f"[bootstrap] could not install pip into {env.dir}: install python3-venv or pip"
            )


def install(env: Env) -> None:
    wanted = env.digest()
    if env.stamp.exists() and env.stamp.read_text() == wanted:
        return
    say(f"installing pinned packages ({env.lock.name}) and blockbench")
    steps = (
        (env.python, "-m", "pip", "install", "--quiet", f"pip=={PIP}"),
        # pip byte-compiles what it installs one file at a time (13 of 21 s on a 2-core VM);
        # compileall does the same files on every core (7.5 s there). Never left to import
        # time: where PYTHONDONTWRITEBYTECODE is set (as in many container images) every
        # worker would compile JAX's modules again, 0.8 s more a job.
        (env.python, "-m", "pip", "install", "--quiet", "--no-compile", "-r", env.lock),
        (env.python, "-m", "pip", "install", "--quiet", "--no-deps", "-e", ROOT),
    )
    for step in steps:
        if run(*step) != 0:
            sys.exit(f"[bootstrap] failed: {' '.join(map(str, step))}")
    # as pip's own compiling, a file that does not compile (a package's test data written for
    # another Python) is left to import time, not a failed set-up
    if run(env.python, "-m", "compileall", "-qq", "-j", "0", env.dir / LIB_DIR) != 0:
        say("some installed files did not byte-compile; they compile when imported")
    env.stamp.write_text(wanted)


def submits_to_slurm(args: list[str]) -> bool:
    """Jobs go to SLURM (its executor, or a profile that names it): the GPU check is then the
    workflow's first GPU job, on a GPU node, not one made here on the submit host."""
    options = ("--executor", "-e", "--workflow-profile", "--profile")
    return any(a in options and "slurm" in b for a, b in itertools.pairwise(args))


def asks_for_gpu(args: list[str]) -> tuple[bool, list[str]]:
    """Whether the run's options put GPU cells in the grid, and the options without --gpu."""
    rest = [a for a in args if a != "--gpu"]
    if any(NO_GPU_CHECK.match(arg) for arg in rest):
        return False, rest
    files, after = [], False  # --configfile takes one file or more
    for arg in rest:
        after = arg == "--configfile" or (after and not arg.startswith("-"))
        if after and arg != "--configfile" and Path(arg).is_file():
            files.append(Path(arg))
    # a file's comments may show a GPU command; only its values count
    lines = [*rest, *(line.split("#")[0] for f in files for line in f.read_text().splitlines())]
    return len(rest) < len(args) or any(ASKS_FOR_GPU.search(line) for line in lines), rest


# pytest's exit code where a pass selects no test: a path with no `serial` test in it is fine
NO_TESTS = 5
# Two pytest workers: the suite's end-to-end runs measure one process at a time, as the
# workflow does, which leaves a second core idle; a test file is one worker's, so a module's
# run (the tiny grid, the SLURM cluster) is made once; files go out in the order collected
# (tests/conftest.py puts those of the most slow tests first, so that no long one starts last).
WORKERS = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]


def test_passes(args: list[str]) -> list[list[str]]:
    """pytest's arguments for the two passes of `test`: every test not marked `serial` on two
    workers, then the `serial` ones (they judge times they measured here) alone. `--fast`
    leaves out the slow tests (pyproject's markers); a -m or -n of your own makes one pass."""
    rest = [a for a in args if a != "--fast"]
    if any(a in ("-m", "--numprocesses") or a.startswith("-n") for a in rest):
        return [rest]
    fast = " and not slow" if "--fast" in args else ""
    return [
        [*WORKERS, "-m", f"not serial{fast}", *rest],
        ["-m", f"serial{fast}", *rest],
    ]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "regenerate"):
        print(__doc__)
        return 2
    if sys.version_info < (3, 11):  # noqa: UP036 (run by any system Python)
        sys.exit("[bootstrap] Python 3.11 or newer is needed")
    command = argv[0]
    # a rebuild measures nothing, so its options are never read as asking for a GPU
    gpu, rest = (False, argv[1:]) if command == "regenerate" else asks_for_gpu(argv[1:])
    env = CUDA if gpu and command == "run" else CPU
    create_venv(env)
    install(env)
    path = {**os.environ, "PATH": f"{env.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    if command == "regenerate":
        return run(env.bin / "blockbench", "regenerate", *rest, env=path)
    if command == "test":
        codes = [run(env.python, "-m", "pytest", *p, env=path) for p in test_passes(rest)]
        if all(c == NO_TESTS for c in codes):  # a -k or a path that selects nothing
            return NO_TESTS
        return next((c for c in codes if c not in (0, NO_TESTS)), 0)
    # the GPU check: its cause, in one line, on stderr, and nothing has run
    here = env is CUDA and not submits_to_slurm(rest)
    if here and run(env.python, "-m", "blockbench.measure.gpu_ready", env=path) != 0:
        return 1
    code = run(env.bin / "snakemake", "--cores", "4", *rest, env=path)
    # no report where nothing was made: a dry run, or only the lock a killed run left removed
    if code != 0 or "--unlock" in rest or any(DRY_RUN.fullmatch(a) for a in rest):
        return code
    (ROOT / "results").mkdir(exist_ok=True)
    code = run(env.bin / "snakemake", "--report", "results/report.html", *rest, env=path)
    if code == 0:
        say("done: results/claims.md, results/tables/, results/figures/, results/report.html")
    return code


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # between steps (making the venv): as during one
        exit_interrupted()
