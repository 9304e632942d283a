#!/usr/bin/env python3
"""The two commands: set up everything, then run the pipeline or the test suite.

    python3 scripts/bootstrap.py run  [snakemake options]   # default CPU grid + report
    python3 scripts/bootstrap.py test [pytest options]      # the whole test suite

Needs only Python 3.11+ (standard library) and network access to PyPI. It creates `.venv/`
beside this repository, installs the pinned versions of requirements.lock and the project,
and, when the lock file or pyproject.toml changed, makes `.venv/` anew: installing a new
lock over an old environment would leave the packages the lock dropped in place.
"""

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"
STAMP = VENV / ".blockbench-installed"
INPUTS = (ROOT / "requirements.lock", ROOT / "pyproject.toml")
PIP = "26.3"  # the installer itself is pinned too: its resolver and output change by release


def say(message: str) -> None:
    print(f"[bootstrap] {message}", flush=True)


def run(*cmd: str | Path, env: dict[str, str] | None = None) -> int:
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)


def digest() -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in INPUTS)).hexdigest()


def create_venv() -> None:
    """A venv with pip, made anew where it was made from another lock; where the OS split
    ensurepip out (Debian without python3-venv), make it without pip and install pip into it
    with the system's pip."""
    stale = STAMP.exists() and STAMP.read_text() != digest()
    if PYTHON.exists() and not stale:
        return
    say(f"{'re-creating' if stale else 'creating'} {VENV}")
    try:
        venv.create(VENV, with_pip=True, clear=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        say(f"venv with pip failed ({exc}); creating it without pip")
        venv.create(VENV, with_pip=False, clear=True)
        if run(sys.executable, "-m", "pip", "--python", PYTHON, "install", "pip") != 0:
            sys.exit("[bootstrap] could not install pip into .venv: install python3-venv or pip")


def install() -> None:
    wanted = digest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    say("installing pinned packages (requirements.lock) and blockbench")
    steps = (
        (PYTHON, "-m", "pip", "install", "--quiet", f"pip=={PIP}"),
        (PYTHON, "-m", "pip", "install", "--quiet", "-r", ROOT / "requirements.lock"),
        (PYTHON, "-m", "pip", "install", "--quiet", "--no-deps", "-e", ROOT),
    )
    for step in steps:
        if run(*step) != 0:
            sys.exit(f"[bootstrap] failed: {' '.join(map(str, step))}")
    STAMP.write_text(wanted)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test"):
        print(__doc__)
        return 2
    if sys.version_info < (3, 11):  # noqa: UP036 (run by any system Python)
        sys.exit("[bootstrap] Python 3.11 or newer is needed")
    create_venv()
    install()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    command, rest = argv[0], argv[1:]
    if command == "test":
        return run(PYTHON, "-m", "pytest", *rest, env=env)
    code = run(BIN / "snakemake", "--cores", "4", *rest, env=env)
    if "--unlock" in rest:  # only the lock a killed run left behind is removed: no report
        return code
    if code == 0:
        (ROOT / "results").mkdir(exist_ok=True)
        code = run(BIN / "snakemake", "--report", "results/report.html", *rest, env=env)
        say("done: results/claims.md, results/tables/, results/figures/, results/report.html")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
