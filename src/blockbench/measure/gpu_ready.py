"""Whether this machine can run GPU cells with the JAX installed here, or the one reason why not.

Run before any GPU job: by the bootstrap before Snakemake starts, and by the workflow as the
job every GPU cell waits for (on SLURM, one short GPU job). A machine that cannot run them
stops there with one line naming the cause, instead of recording every GPU cell
`unavailable` after the grid, and never falls back to the CPU.

    python -m blockbench.measure.gpu_ready [--out FILE]   # exit 0: ready; 1: the cause on stderr
"""

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from blockbench.measure.nvidia import fake_gpu
from blockbench.records.store import write_json_atomic

# The CUDA plugins JAX publishes, by the distribution that carries them, in the order jaxlib
# tries them (CUDA 13 first: with both installed, JAX runs 13's), and the oldest driver each
# runs on. JAX's installation guide says >= 525 for CUDA 12 and >= 580 for CUDA 13 on Linux;
# the minor numbers are NVIDIA's for each toolkit (525.60.13, the floor of CUDA 12's
# minor-version compatibility; 580.65.06, CUDA 13.0's).
PLUGINS = {"jax-cuda13-plugin": (580, 65, 6), "jax-cuda12-plugin": (525, 60, 13)}
SMI_QUERY = ["--query-gpu=driver_version,name", "--format=csv,noheader"]
JAX_QUERY = "import jax, json; print(json.dumps([str(d) for d in jax.devices({!r})]))"
TIMEOUT_S = 120
# What a cell's worker lets JAX start: the CPU beside an accelerator (cores.py and the
# transfer guard use it).
PLATFORMS = {"cpu": "cpu", "gpu": "cuda,cpu", "tpu": "tpu,cpu"}


def jax_platforms(device: str) -> str:
    """JAX_PLATFORMS for a `device` cell's worker (blockbench.measure.parent sets it outright);
    the CPU alone under the test-only fake GPU, which must not start a real GPU's backend."""
    return "cpu" if fake_gpu(device) else PLATFORMS[device]


@dataclass
class Facts:
    """What the check read; kept with its verdict (the file the workflow's GPU cells wait for)."""

    plugin: str | None = None  # "jax-cuda12-plugin 0.10.2"; None: CPU-only jaxlib
    smi: str | None = None  # nvidia-smi's path; None: not on PATH
    smi_error: str | None = None  # its first line where it failed
    driver: str | None = None
    gpus: list[str] = field(default_factory=list)
    jax_devices: list[str] = field(default_factory=list)
    jax_error: str | None = None
    jaxlib: str | None = None  # jaxlib's version: a plugin of another release is ignored
    faked: bool = False  # the test-only fake GPU (nvidia.FAKE_GPU): JAX's CPU device


def installed_plugin() -> tuple[str, tuple[int, ...]] | None:
    """The CUDA plugin installed beside jaxlib, as 'name version', and its driver floor."""
    for name, floor in PLUGINS.items():
        try:
            return f"{name} {importlib.metadata.version(name)}", floor
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def read_smi(facts: Facts, run) -> None:
    """The driver version and the GPUs nvidia-smi lists (it ignores CUDA_VISIBLE_DEVICES)."""
    facts.smi = shutil.which("nvidia-smi")
    if facts.smi is None:
        return
    try:
        done = run([facts.smi, *SMI_QUERY], capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        facts.smi_error = str(exc)
        return
    said = (done.stdout + done.stderr).strip().splitlines()
    if any("No devices were found" in line for line in said):
        return  # a driver, and no GPU
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        facts.smi_error = said[0] if said else f"exit status {done.returncode}"
        return
    rows = [[part.strip() for part in line.split(",", 1)] for line in lines]
    facts.driver = rows[0][0]
    facts.gpus = [row[-1] for row in rows]


def read_jax(facts: Facts, run) -> None:
    """The CUDA devices JAX starts, in a fresh process asked for CUDA alone (no fall-back);
    the CPU's under the fake GPU."""
    platform = "cpu" if facts.faked else "cuda"
    env = {**os.environ, "JAX_PLATFORMS": platform}
    try:
        done = run(
            [sys.executable, "-c", JAX_QUERY.format(platform)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        facts.jax_error = str(exc)
        return
    if done.returncode == 0:
        facts.jax_devices = json.loads(done.stdout.strip().splitlines()[-1])
    else:
        said = done.stderr.strip().splitlines()
        # the last exception with a message: a failed CUDA start ends in a bare AssertionError
        # after the plugin's own RuntimeError ("cuInit(0) failed: ...")
        errors = [line for line in said if re.match(r"\w+(Error|Exception): \S", line)]
        facts.jax_error = (errors or said or [f"exit status {done.returncode}"])[-1]


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def cause(facts: Facts, floor: tuple[int, ...] | None) -> str | None:
    """The first thing on this machine that keeps GPU cells from running, in one line; None:
    nothing (JAX is asked after it)."""
    if facts.smi is None:
        return (
            "no driver: nvidia-smi is not on PATH, so this machine has no NVIDIA driver (or no GPU)"
        )
    if facts.smi_error is not None:
        return f"no driver: nvidia-smi failed: {facts.smi_error}"
    if floor is not None and facts.driver and version_tuple(facts.driver) < floor:
        need = ".".join(map(str, floor))
        return (
            f"driver too old: NVIDIA driver {facts.driver} is older than {need}, which "
            f"{(facts.plugin or '').split()[0]} needs: update the driver"
        )
    if not facts.gpus:
        return "no GPU visible: nvidia-smi lists no GPU"
    if facts.plugin is None:
        return (
            f"CPU-only jaxlib: no CUDA plugin is installed in {sys.prefix}; "
            "install requirements-cuda12.lock (python3 scripts/bootstrap.py run --gpu does)"
        )
    name, version = facts.plugin.split()
    # (the fake GPU's plugin is a stub's metadata, of the GPU image's release)
    if facts.jaxlib and version != facts.jaxlib and not facts.faked:
        return (
            f"plugin of another release: {name} {version} beside jaxlib {facts.jaxlib}, which "
            "JAX does not load: install the plugin of jaxlib's release"
        )
    return None


def check(run=None) -> tuple[Facts, str | None]:
    """Read what can be read, in the order the causes are named; stop at the first one."""
    run = run or subprocess.run
    facts = Facts(faked=bool(fake_gpu("gpu")))
    found = installed_plugin()
    facts.plugin, floor = found if found else (None, None)
    try:
        facts.jaxlib = importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        facts.jaxlib = None
    read_smi(facts, run)
    reason = cause(facts, floor)
    if reason is None:
        read_jax(facts, run)
        if not facts.jax_devices:
            reason = f"no GPU visible to JAX: {facts.jax_error or 'jax.devices(cuda) is empty'}"
    return facts, reason


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the facts and the verdict here (JSON)")
    args = parser.parse_args(argv)
    facts, reason = check()
    if args.out is not None and reason is None:
        write_json_atomic(args.out, {**asdict(facts), "ready": True})
    if reason is not None:
        print(f"GPU not ready: {reason}", file=sys.stderr)
        return 1
    print(
        f"GPU ready{' (faked for tests)' if facts.faked else ''}: {', '.join(facts.gpus)}; "
        f"driver {facts.driver}; {facts.plugin}; JAX sees {', '.join(facts.jax_devices)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
