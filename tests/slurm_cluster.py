"""A real single-node SLURM cluster for tests: munge, slurmctld and slurmd from Debian.

Configured in a temporary directory like a production cluster confines jobs: task/affinity
binds every job step to the CPUs it was granted, and task/cgroup (cgroup v1 cpusets) confines
it as well where this machine lets slurmd create cgroups. The node has typed GPUs
(`gpu:<GPU_MODEL>`) that are generic resources with no hardware behind them, so GPU jobs
schedule with a model and JAX inside finds no GPU. Every daemon started here is stopped by its
PID, and every cgroup slurmd made is removed. Why each setting: docs/slurm.md.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ["munge", "slurmctld", "slurmd", "slurm-client"]
BINARIES = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"]
ETC = Path("/etc/slurm")
FAKE_GPUS = 2  # generic resources with no hardware behind them
GPU_MODEL = "h100"  # their type: `sbatch --gpus=h100:1` must find them
CGROUP_V1 = Path("/sys/fs/cgroup/cpuset")  # Slurm 22.05's cgroup/v2 needs systemd as PID 1


class Unavailable(Exception):
    """SLURM could not be installed or started on this machine."""


def ensure_installed() -> None:
    if all(shutil.which(b) or Path("/usr/sbin", b).exists() for b in BINARIES):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable("SLURM is not installed and apt-get as root is not available")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
    ):
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise Unavailable(f"{' '.join(cmd)} failed: {run.stderr[-500:]}")


def node_line() -> str:
    """The CPU layout and memory slurmd detects, as a NodeName line."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    fields = out.splitlines()[0].split()
    keep = [
        f
        for f in fields[1:]
        if f.split("=")[0]
        in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    ]
    return " ".join(keep)


def cgroups_usable() -> str | None:
    """None where slurmd can confine steps with cgroup v1 cpusets here, else why not.

    Tried by making (and removing) a cpuset next to where slurmd makes its own. Without
    systemd as PID 1, Slurm 22.05 supports only cgroup v1; a container may mount the
    hierarchy read-only or not at all."""
    if not (CGROUP_V1 / "cpuset.cpus").exists():
        return f"no cgroup v1 cpuset hierarchy at {CGROUP_V1}"
    probe = CGROUP_V1 / f"blockbench-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"cannot create a cpuset under {CGROUP_V1}: {exc}"
    return None


def write_config(state: Path, node: str, cgroups: bool) -> Path:
    """slurmctld runs as user slurm: its state and log directories must be reachable."""
    state.chmod(0o755)
    for sub in ("spool", "slurmd", "log"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    for sub in ("spool", "log"):
        shutil.chown(state / sub, "slurm", "slurm")
    conf = state / "slurm.conf"
    conf.write_text(f"""\
ClusterName=blockbench-test
SlurmctldHost={node}(127.0.0.1)
AuthType=auth/munge
CredType=cred/munge
SlurmUser=slurm
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin={"task/affinity,task/cgroup" if cgroups else "task/affinity"}
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=300
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={state}/log/jobcomp.txt
StateSaveLocation={state}/spool
SlurmdSpoolDir={state}/slurmd
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
SlurmctldLogFile={state}/log/slurmctld.log
SlurmdLogFile={state}/log/slurmd.log
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName={node} NodeAddr=127.0.0.1 {node_line()} Gres=gpu:{GPU_MODEL}:{FAKE_GPUS} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
""")
    lines = ["AutoDetect=off"]
    for i in range(FAKE_GPUS):
        (state / f"fake-gpu{i}").touch()
        lines.append(f"NodeName={node} Name=gpu Type={GPU_MODEL} File={state}/fake-gpu{i}")
    (state / "gres.conf").write_text("\n".join(lines) + "\n")
    # Cores only: memory and devices stay unconstrained (the fake GPUs are plain files, and
    # this machine's memory cgroup is not slurmd's to manage).
    (state / "cgroup.conf").write_text(
        "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\nConstrainCores=yes\n"
        "ConstrainRAMSpace=no\nConstrainSwapSpace=no\nConstrainDevices=no\n"
    )
    return conf


CONFIG_FILES = ("slurm.conf", "gres.conf", "cgroup.conf")


@contextmanager
def linked_into_etc(state: Path) -> Iterator[None]:
    """The plugin's job step loses SLURM_CONF, so the config must be at /etc/slurm."""
    ETC.mkdir(parents=True, exist_ok=True)
    moved = []
    for name in CONFIG_FILES:
        target = ETC / name
        if target.exists() or target.is_symlink():
            backup = target.with_name(name + ".blockbench-backup")
            target.rename(backup)
            moved.append((backup, target))
        target.symlink_to(state / name)
    try:
        yield
    finally:
        for name in CONFIG_FILES:
            (ETC / name).unlink(missing_ok=True)
        for backup, target in moved:
            backup.rename(target)


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in reversed(procs):
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_idle(timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
        if state.stdout.strip() == "idle":
            return
        time.sleep(0.5)
    raise Unavailable(f"the node never became idle (sinfo: {state.stdout.strip()!r})")


def remove_cgroups(root: Path) -> None:
    """Remove the cpuset tree slurmd made (deepest first; a cgroup is removed with rmdir)."""
    if not root.is_dir():
        return
    for path in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        path.rmdir()
    root.rmdir()


@dataclass
class Cluster:
    procs: list[subprocess.Popen]
    node: str
    task_plugin: str
    cgroups_unavailable: str | None  # why steps are not confined by cgroups, if they are not


@contextmanager
def cluster(state: Path) -> Iterator[Cluster]:
    """Yield the started cluster; on exit stop each daemon by PID, remove the cgroups slurmd
    made and restore /etc/slurm."""
    ensure_installed()
    node = socket.gethostname().split(".")[0]
    why_not = cgroups_usable()
    # slurmd's cpuset root: slurm, or slurm_<node> where Slurm is built for several slurmd
    slurm_cgroups = [CGROUP_V1 / "slurm", CGROUP_V1 / f"slurm_{node}"]
    if why_not is None and any(p.exists() for p in slurm_cgroups):
        why_not = "slurmd's cpuset exists already (another slurmd on this machine?)"
    conf = write_config(state, node, cgroups=why_not is None)
    task_plugin = next(
        line.split("=", 1)[1] for line in conf.read_text().splitlines() if line.startswith("Task")
    )
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    procs: list[subprocess.Popen] = []
    log = (state / "log" / "daemons.txt").open("w")
    with linked_into_etc(state):
        try:
            procs.append(
                subprocess.Popen(
                    ["/usr/sbin/munged", "-F", "--force"], user="munge", stdout=log, stderr=log
                )
            )
            time.sleep(0.5)
            procs.append(subprocess.Popen(["slurmctld", "-D", "-i"], stdout=log, stderr=log))
            procs.append(subprocess.Popen(["slurmd", "-D"], stdout=log, stderr=log))
            wait_idle()
            yield Cluster(procs, node, task_plugin, why_not)
        finally:
            stop(procs)
            log.close()
            if why_not is None:
                for root in slurm_cgroups:
                    remove_cgroups(root)
