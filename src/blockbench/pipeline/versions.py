"""The JAX-version axis: which releases a run measures, where each one's results and
environment live, and making that environment.

The release installed where Snakemake runs (the locked one, requirements.lock) is measured
in that environment and keeps the run's plain label and paths, so a default run is what it
always was. Every other release gets a virtual environment of its own, made once by the
workflow and reused by every cell of that release, and a run label of its own,
`<run_label>+jax-<version>` (`+` cannot occur in a configured label): the version is one
more axis of a run, so its cells are never paired, pooled or compared with another
release's as if they were one run. The worker imports blockbench from the checkout
(PYTHONPATH), so an environment holds only JAX and what the worker imports.
"""

import json
import os
import shutil
import subprocess
import sys
import venv
from functools import cache
from pathlib import Path
from typing import Any

from blockbench.measure import parent
from blockbench.records.layout import DECISION, LOCK, installed_jax, run_label
from blockbench.records.store import write_json_atomic

STAMP = "env.json"
# What the worker imports besides JAX: pinned to the lock where the lock has them.
WORKER_PACKAGES = ("numpy", "psutil", "py-cpuinfo", "threadpoolctl", "nvidia-ml-py")
# Wheels only where a build would need a compiler; jax itself was an sdist up to 0.4.13.
BINARY_ONLY = "jaxlib,numpy,scipy,ml_dtypes"
# What a release may need instead of the locked NumPy: releases built against NumPy 1
# cannot import NumPy 2's ABI, and PyPI's metadata does not say so (jaxlib 0.4.13 asks for
# numpy>=1.22 only), so the import itself decides.
NUMPY_FALLBACK = "numpy<2"
# Imports what the worker imports and runs one jitted call on the CPU.
SMOKE = (
    "import json, jax, jaxlib, numpy, blockbench.measure.cell; "
    "jax.jit(lambda v: v + 1)(numpy.ones(2)).block_until_ready(); "
    "print(json.dumps({'jax': jax.__version__, 'jaxlib': jaxlib.__version__, "
    "'numpy': numpy.__version__}))"
)
PIP_TIMEOUT_S = 900


class VersionError(ValueError):  # grid.ConfigError's kind: names the key and the value
    """A JAX release that cannot be measured; the message names the config key and value."""


def requested(config: dict[str, Any]) -> list[str]:
    """The releases a run measures (`jax_versions`; empty: the installed one alone)."""
    return list(config.get("jax_versions") or [installed_jax()])


def priority(base: int, jobs: int, cells: int, index: int, count: int) -> int:
    """A job's priority with `count` releases, from its priority in one release's order
    (blockbench.pipeline.run_order: `jobs` jobs, rounds of `cells` cells). Rounds stay the
    outer loop; within a round the releases take turns, each with its blocks back to back, and the
    release that leads rotates from round to round."""
    position = jobs - base
    round_, within = divmod(position, cells)
    turn = (index - round_) % count
    return jobs * count - ((round_ * count + turn) * cells + within)


def env_dir(envs: str | Path, version: str) -> Path:
    return Path(envs) / f"jax-{version}"


def stamp(envs: str | Path, version: str) -> Path:
    """What the environment rule writes: the interpreter, the versions, or why it failed."""
    return env_dir(envs, version) / STAMP


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_S,
    )


@cache
def on_pypi(package: str) -> tuple[str, ...]:
    """Releases of `package` with a file this Python and platform can install, from the
    package index (`pip index versions --json`); raises VersionError when the index cannot
    be read."""
    done = _pip("index", "versions", "--json", package)
    try:
        found = json.loads(done.stdout)["versions"] if done.returncode == 0 else None
    except (ValueError, KeyError, TypeError):
        found = None
    if not found:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise VersionError(f"cannot list the releases of {package} on the package index: {tail}")
    return tuple(str(v) for v in found)


def check(config: dict[str, Any], envs: str | Path) -> None:
    """Refuse, before any job runs, a release PyPI does not have for this Python and
    platform. The installed release, one whose environment exists, and one whose run has
    its decision already (it was installed to measure it; a rebuild from raw JSON measures
    nothing) need no network."""
    python = f"Python {sys.version_info.major}.{sys.version_info.minor} on {sys.platform}"
    for i, version in enumerate(config.get("jax_versions") or []):
        label = run_label(config.get("run_label", ""), version)
        decided = Path(DECISION.format(run_label=label)).exists()
        if version == installed_jax() or stamp(envs, version).exists() or decided:
            continue
        key = f"config key jax_versions[{i}]: {version!r}"
        for package in ("jaxlib", "jax"):
            try:
                known = on_pypi(package)
            except VersionError as exc:
                raise VersionError(f"{key}: {exc}") from exc
            if version not in known:
                raise VersionError(
                    f"{key}: no {package} {version} on PyPI for {python} (it has "
                    f"{', '.join(known[:3])} ... {known[-1]})"
                )


def locked(lock: Path = LOCK) -> dict[str, str]:
    """name -> version of a requirements lock (lower-case names); empty without one."""
    if not lock.exists():
        return {}
    pins = (line.split("==", 1) for line in lock.read_text().splitlines() if "==" in line)
    return {name.strip().lower(): version.strip() for name, version in pins}


def _install(dest: Path, version: str, numpy: str, pins: dict[str, str]) -> tuple[str, Any]:
    """Make the environment afresh: ('', the versions its Python imports) when it runs the
    worker's imports and one jitted call, else (why not, None)."""
    shutil.rmtree(dest, ignore_errors=True)
    venv.create(dest, with_pip=False)  # this environment's pip installs into it
    python = dest / "bin" / "python"
    others = [f"{p}=={pins[p]}" if p in pins else p for p in WORKER_PACKAGES if p != "numpy"]
    done = _pip(
        "--python",
        str(python),
        "install",
        "--quiet",
        f"--only-binary={BINARY_ONLY}",
        f"jax=={version}",
        f"jaxlib=={version}",
        numpy,
        *others,
    )
    if done.returncode != 0:
        return "pip: " + " ".join(done.stderr.strip().splitlines()[-3:]), None
    smoke = subprocess.run(
        [str(python), "-c", SMOKE],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(parent.SRC), "JAX_PLATFORMS": "cpu"},
        timeout=300,
    )
    if smoke.returncode != 0:
        return "import: " + (smoke.stderr.strip().splitlines() or ["no output"])[-1], None
    return "", json.loads(smoke.stdout.strip().splitlines()[-1])


def create(version: str, dest: Path, lock: Path = LOCK) -> dict[str, Any]:
    """A virtual environment with this JAX release, the locked NumPy where the release
    imports with it (else the NumPy it needs, and why), and the worker's packages; its
    record, written to <dest>/env.json, says what it holds or why it could not be made."""
    pins = locked(lock)
    tried, imported = [], None
    for numpy in (f"numpy=={pins['numpy']}" if "numpy" in pins else "numpy", NUMPY_FALLBACK):
        why, imported = _install(dest, version, numpy, pins)
        tried.append({"numpy": numpy, "failed": why})
        if not why:
            break
    record = {
        "jax_version": version,
        "python": str((dest / "bin" / "python").absolute()),
        "usable": imported is not None,
        "reason": f"jax {version} could not be installed and imported: {why}" if why else "",
        "imported": imported,
        "numpy_locked": pins.get("numpy"),
        "tried": tried,
    }
    dest.mkdir(parents=True, exist_ok=True)
    write_json_atomic(dest / STAMP, record)
    return record
