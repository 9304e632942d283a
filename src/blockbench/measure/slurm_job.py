"""Inside a SLURM job: the job's variables and what SLURM says it granted the step (CPUs,
GPUs, memory), recorded with every measurement so that a reader can place a result and see
whether the cell had the cores it thinks it had."""

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from blockbench.measure.safe_read import safe

# SLURM facts a reader needs to place a result: job, step, node, and the CPUs and GPUs it
# was granted. Inside a job step SLURM_CPUS_ON_NODE counts the step's CPUs, not the job's.
SLURM_KEYS = {
    "job_id": "SLURM_JOB_ID",
    "step_id": "SLURM_STEP_ID",
    "array_task_id": "SLURM_ARRAY_TASK_ID",
    "node": "SLURMD_NODENAME",
    "nodelist": "SLURM_JOB_NODELIST",
    "partition": "SLURM_JOB_PARTITION",
    "cpus_on_node": "SLURM_CPUS_ON_NODE",
    "cpus_per_task": "SLURM_CPUS_PER_TASK",
    "job_cpus_per_node": "SLURM_JOB_CPUS_PER_NODE",
    "gpus": "SLURM_GPUS",
    "job_gpus": "SLURM_JOB_GPUS",
    "step_gpus": "SLURM_STEP_GPUS",
    "gpus_on_node": "SLURM_GPUS_ON_NODE",
    "cuda_visible_devices": "CUDA_VISIBLE_DEVICES",
}


def slurm() -> dict[str, Any] | None:
    """The job's SLURM variables, and what SLURM itself says it granted (scontrol)."""
    if "SLURM_JOB_ID" not in os.environ:
        return None
    out: dict[str, Any] = {
        key: os.environ[var] for key, var in SLURM_KEYS.items() if var in os.environ
    }
    out["cgroup"] = safe(cpu_cgroup)
    out["granted"] = safe(
        slurm_granted, os.environ["SLURM_JOB_ID"], os.environ.get("SLURM_STEP_ID")
    )
    return out


def cpu_cgroup() -> str | None:
    """This process's cgroup that confines CPUs (v1 cpuset, else the v2 one): a job step's
    under task/cgroup (.../job_<id>/step_<id>), None where /proc has no cgroups."""
    path = Path("/proc/self/cgroup")
    if not path.exists():
        return None
    lines = [line.split(":", 2) for line in path.read_text().splitlines()]
    for _, controllers, where in lines:
        if "cpuset" in controllers.split(","):
            return where
    return next((where for _, controllers, where in lines if controllers == ""), None)


def _scontrol(*args: str) -> str:
    return subprocess.run(
        ["scontrol", *args], capture_output=True, text=True, check=True, timeout=10
    ).stdout


def slurm_granted(job_id: str, step_id: str | None) -> dict[str, Any]:
    """The step's CPU count, and the job's CPU ids, GPUs (with their type) and memory on this
    node, as `scontrol` reports them: the allocation itself, not what the process sees."""
    out: dict[str, Any] = {}
    if step_id is not None:
        step = _scontrol("show", "step", f"{job_id}.{step_id}")
        if found := re.search(r"\bCPUs=(\d+)", step):
            out["step_cpus"] = int(found.group(1))
        if found := re.search(r"\bTresPerStep=(\S+)", step):
            out["step_tres"] = found.group(1)
    job = _scontrol("show", "job", "--details", job_id)
    if found := re.search(r"\bJOB_GRES=(\S+)", job):
        out["job_gres"] = found.group(1)
    if found := re.search(r"\bCPU_IDs=(\S+)\s+Mem=(\d+)\s+GRES=(\S*)", job):
        out["job_cpu_ids"], out["job_mem_mb"] = found.group(1), int(found.group(2))
        out["node_gres"] = found.group(3)
    return out


def granted_cpus() -> int | None:
    """CPUs SLURM granted this job step on this node (None outside SLURM). A step's
    SLURM_CPUS_ON_NODE counts its own CPUs, whether or not the node binds it to them."""
    if "SLURM_JOB_ID" not in os.environ:
        return None
    try:
        return int(os.environ["SLURM_CPUS_ON_NODE"])
    except (KeyError, ValueError):
        return None
