"""What a measurement job asks SLURM for, and the checks made before the first submission.

The executor plugin (snakemake-executor-plugin-slurm, locked at 2.8) fills every gap it is
left with a guess: no account means the account of the user's last job (`sacct`), and
`--slurm-no-account` is accepted but read nowhere; a status command of `squeue` quietly
becomes `sacct`, which without an accounting database fails, and Snakemake then waits for
ever. So when jobs go to SLURM, `check` stops the run before anything is submitted unless
each of these is settled, and says which setting settles it. It also stops a run whose
catalog declares workloads from a folder the nodes may not see (`catalog_problem`).
"""

import math
import os
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

# The plugin checks job states at most this many seconds apart (its `max_sleep_time`);
# squeue forgets a finished job MinJobAge seconds after it ends.
MAX_STATUS_INTERVAL_S = 180
# Start-up and wrap-up around a cell's budget in one job: Snakemake in the batch script and
# again in the job step, Python and JAX imports, the correctness check, writing the JSON.
STARTUP_MIN = 5


def runtime_min(budget_s: float) -> int:
    """Minutes of one cell in a job (a group's cells would run one after another, and
    Snakemake would give the group the sum of theirs: see `cores` in profiles/slurm)."""
    return max(10, math.ceil(budget_s / 60) + STARTUP_MIN)


def account(cluster: Mapping[str, Any]) -> str:
    """The `slurm_account` resource: the configured account, or '' (none, or not set)."""
    value = cluster.get("account")
    return "" if value is None or str(value) == "none" else str(value)


# Filesystem types that nodes of a cluster mount alike (/proc/self/mountinfo's names)
SHARED_FS = frozenset(
    {
        "nfs",
        "nfs4",
        "lustre",
        "gpfs",
        "beegfs",
        "cephfs",
        "ceph",
        "cifs",
        "smb3",
        "glusterfs",
        "fuse.glusterfs",
        "panfs",
        "wekafs",
    }
)
MOUNTINFO = Path("/proc/self/mountinfo")


def mounts(mountinfo: str) -> list[tuple[Path, str]]:
    """Each mount point of a /proc/self/mountinfo text and its filesystem type (the field
    after ' - '), in its order: a later mount on the same point hides an earlier one."""
    out = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, kinds = head.split(), tail.split()
        if sep and len(fields) >= 5 and kinds:
            # the kernel writes a space, tab, newline or backslash in a path as \ooo (octal)
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])
            out.append((Path(point), kinds[0]))
    return out


def filesystem_of(path: Path, mountinfo: str | None = None) -> tuple[str, str]:
    """The type and mount point of the filesystem holding `path`: the longest mount point
    that contains it; ('unknown', '?') where /proc/self/mountinfo cannot be read."""
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text()
        except OSError:
            return "unknown", "?"
    path, found, depth = Path(path).resolve(), ("unknown", "?"), -1
    for point, fstype in mounts(mountinfo):
        if path.is_relative_to(point) and len(point.parts) >= depth:
            found, depth = (fstype, str(point)), len(point.parts)
    return found


def _same_device(a: Path, b: Path) -> bool:
    try:
        return os.stat(a).st_dev == os.stat(b).st_dev
    except OSError:
        return False


def catalog_problem(
    folder: Path,
    workdir: Path,
    filesystem: Callable[[Path], tuple[str, str]],
    same_device: Callable[[Path, Path], bool],
) -> str | None:
    """Why the nodes may not see a catalog folder that declares workloads (each measurement
    job imports them on its node), or None. Without a way to ask the nodes, the rule is
    simple: the folder is fine on the working directory's filesystem, which the executor
    plugin already needs shared (the jobs start there and write their results into it), or
    on a filesystem type made to be shared (SHARED_FS). A local disk, tmpfs or the like
    elsewhere is refused, though a site may mount the same path on every node: moving the
    catalog costs less than a run whose every job fails."""
    if same_device(folder, workdir):
        return None
    fstype, point = filesystem(folder)
    if fstype in SHARED_FS:
        return None
    return (
        f"the catalog {folder} declares workloads, which every measurement job imports on "
        f"its node, but it is on a {fstype} filesystem (mounted at {point}), neither the "
        f"working directory's ({workdir}) nor a shared type, so the nodes may not see it: "
        "move the catalog beside the workflow or onto a shared filesystem."
    )


def _sacct_works() -> bool:
    try:
        run = subprocess.run(
            ["sacct", "-X", "-n", "-o", "JobID", "--starttime", "now-1hours"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return run.returncode == 0


def problems(
    cluster: Mapping[str, Any],
    *,
    cores: int | None,
    group_components: int,
    status_command: str | None,
    init_seconds: int,
    guess_account: Callable[[], str | None],
    min_job_age: Callable[[], int | None],
    sacct_available: Callable[[], bool],
    sacct_works: Callable[[], bool] = _sacct_works,
) -> list[str]:
    """Every setting a SLURM run needs and does not have, each with the failure it prevents."""
    out = []
    if cluster.get("account") is None:
        out.append(
            "cluster.account is not set: set it to the account to charge (sbatch -A), or to "
            "`none` where jobs need none. Unset, the executor plugin charges whatever account "
            "your last job used (it guesses from sacct; --slurm-no-account does not stop it)."
        )
    elif account(cluster) == "" and (guess := guess_account()):
        out.append(
            f"cluster.account is `none`, but the executor plugin would charge {guess!r} (the "
            "account of your last job, from sacct): where accounting exists it cannot be told "
            "to use none. Set cluster.account to the account to charge."
        )
    if cluster.get("cpus") is None and not cluster.get("exclusive_cpu", True):
        out.append(
            "cluster.cpus is null (every CPU of the node), which needs cluster.exclusive_cpu: "
            "without --exclusive a CPU cell's job would get 1 CPU. Set cluster.cpus to the "
            "CPUs each CPU cell should have, or exclusive_cpu to true."
        )
    if cores is None:
        out.append(
            "`cores` is not set (profiles/slurm sets it): without it, a group's cells are "
            "sized as if they ran side by side, so the group asks for the runtime of one "
            "cell and times out, and a CPU count per cell becomes one per group."
        )
    if group_components > 1:
        out.append(
            f"group-components for measure_cpu is {group_components}: set it to 1 (one cell "
            "a job; profiles/slurm does). Snakemake regroups jobs when the rounds checkpoint "
            "updates the plan (its issue #1628, open in 9.27.1): in a test it then put two "
            "cells in two group jobs each (measured twice) and four under two cells' time limit."
        )
    command = status_command
    age = min_job_age()
    if command == "squeue" and (age is None or age < 3 * init_seconds) and sacct_available():
        command = "sacct"  # what the plugin then does, with only a line in its log
    if command == "sacct" and not sacct_works():
        if status_command == "squeue":
            known = f"{age} s" if age is not None else "unknown (scontrol show config failed)"
            out.append(
                f"slurm-status-command is squeue, but MinJobAge is {known}, under 3 x "
                f"slurm-init-seconds-before-status-checks ({3 * init_seconds} s), so the "
                "plugin reads job states with sacct instead, which fails here (no accounting "
                "database), and Snakemake would wait for ever: ask for MinJobAge >= "
                f"{max(3 * init_seconds, MAX_STATUS_INTERVAL_S)} s."
            )
        else:
            out.append(
                "slurm-status-command is sacct, which fails here (no accounting database), "
                "and Snakemake would wait for ever: set slurm-status-command: squeue."
            )
    elif command == "squeue" and age is not None and age < MAX_STATUS_INTERVAL_S:
        out.append(
            f"squeue forgets a finished job after MinJobAge={age} s, but the executor plugin "
            f"checks job states up to {MAX_STATUS_INTERVAL_S} s apart, so a job could finish "
            "unseen and Snakemake would wait for ever: use slurm-status-command: sacct "
            "(needs accounting)."
        )
    return out


def catalog_problems(
    catalogs: Sequence[Path],
    workdir: Path | None = None,
    filesystem: Callable[[Path], tuple[str, str]] = filesystem_of,
    same_device: Callable[[Path, Path], bool] = _same_device,
) -> list[str]:
    """`catalog_problem` of each folder of the run's catalogs that declare workloads, seen
    from the working directory `workdir` (None: this process's)."""
    workdir = Path.cwd() if workdir is None else workdir
    found = (catalog_problem(f, workdir, filesystem, same_device) for f in catalogs)
    return [line for line in found if line]


def _guess(get_account: Callable[[Any], str | None]) -> str | None:
    """The account the plugin would pick itself (its own function, so the same answer)."""
    import logging

    try:
        return get_account(logging.getLogger("blockbench.pipeline.cluster")) or None
    except OSError:  # no sacct at all: the plugin would fail the same way when submitting
        return None


def check(workflow: Any, cluster: Mapping[str, Any]) -> None:
    """Raise before the first submission if the run goes to SLURM with a setting missing."""
    plugin = getattr(workflow, "executor_plugin", None)
    if plugin is None or plugin.name != "slurm":
        return
    from snakemake_executor_plugin_slurm.accounts import get_account
    from snakemake_executor_plugin_slurm.job_status_query import (
        get_min_job_age,
        is_query_tool_available,
    )

    from blockbench.workloads import registry

    settings = workflow.executor_settings
    found = problems(
        cluster,
        cores=workflow.resource_settings.cores,
        group_components=dict(
            workflow.group_settings.group_components if workflow.group_settings else {}
        ).get("measure_cpu", 1),
        status_command=settings.status_command,
        init_seconds=settings.init_seconds_before_status_checks or 40,
        guess_account=lambda: _guess(get_account),
        min_job_age=get_min_job_age,
        sacct_available=lambda: is_query_tool_available("sacct"),
    )
    # the catalogs the workflow read while it was parsed, those that declare workloads
    found += catalog_problems(registry.catalog_folders())
    if found:
        raise ValueError("not submitting to SLURM:\n" + "\n".join(f"- {line}" for line in found))
