# Grid and target lists, computed by the blockbench package from the validated config.
import functools
import json
import os
import shlex
import sys
import time
from pathlib import Path

from snakemake.logging import logger
from snakemake_interface_executor_plugins.settings import DeploymentMethod

from blockbench.pipeline import (
    cluster,
    grid,
    kit_estimate,
    progress,
    run_order,
    run_plan,
    scheduler_patch,
    versions,
)

from blockbench.present import figure_names
from blockbench.judge.claim_rules import claims_files, figures_files, read_claims
from blockbench.errors import InputError
from blockbench.records import layout

# The claims files `claims` names, CLAIMS_FILES (a catalog folder stands for its
# claims.yaml), read in order by every stage: a user's catalog after blockbench's adds its
# claims (blockbench.judge.claim_rules). A claim or published figure that could never be
# judged, a catalog that is missing, an id or slug two files share, or two settings of one
# cell that differ stop the run before any job, in one line (not Snakemake's stack, which
# points into blockbench, not at the file); the config was checked as it was loaded
# (workflow/Snakefile).
try:
    CLAIMS_FILES = [str(path) for path in claims_files(config["claims"])]
    # each catalog's published figures, which its claims name
    FIGURES_FILES = [str(path) for path in figures_files(CLAIMS_FILES)]
    CLAIM_LIST = read_claims(CLAIMS_FILES, config["only"])
    # The run plan (blockbench.pipeline.run_plan), the GPU kit's too: every process of the run
    # and its settings, the cells its claims read and those `workloads` add.
    PLAN = run_plan.RunPlan(config, CLAIM_LIST)
except InputError as exc:
    sys.exit(f"blockbench: {exc}")
# Snakemake's scheduler must not take CPU from the cells (blockbench.pipeline.scheduler_patch).
QUIET = scheduler_patch.quiet_rescheduling()

# Rounds on demand (blockbench.judge.stopping): a block (the cells a claim divides
# by each other) and each lone cell take their first rounds (a block's own, the most of its
# cells'); after them the checkpoint `rounds` (rules/rounds.smk) decides how many more each
# needs for the precision its claims ask, up to `max_rounds`, and the DAG grows by those.
# Process r of every cell runs in round r, the cells a claim compares back to back
# (blockbench.pipeline.run_order), and each job of a block's round waits for the one before it on
# its device: one chain, which a cluster runs as one job on one node (the `measure_cpu`
# group's connected jobs).
RUN = config["run_label"]
# Where each process of a cell writes its JSON (blockbench.records.layout).
RAW_FILE = layout.RAW
# The JAX-version axis (blockbench.pipeline.versions): each release is a run of its own; the
# installed (locked) release keeps the plain run label and this environment.
VERSIONS = versions.requested(config)
ENV_PRIORITY = (
    len(PLAN.order) * len(VERSIONS) + 1
)  # above every measurement (rule jax_env)
ENVS = config["jax_envs"]
LABELS = [layout.run_label(RUN, v) for v in VERSIONS]


def first_stage(wc):
    """Every process of the first stage of one run label: what the checkpoint decides from."""
    return [job.path(wc.run_label) for job in PLAN.jobs()]


# Known before any job runs: each run label's first stage and its rounds decision. The tables
# rule names them as well as `measured`, so that a run whose tables already exist (another
# run_label, a larger grid) still measures: a target whose only way to its new inputs is an
# unfinished checkpoint counts as up to date.
FIRST_STAGE = [job.path(label) for label in LABELS for job in PLAN.jobs()]
DECIDED = [layout.DECISION.format(run_label=label) for label in LABELS]


def measured(wc):
    """Every process of every run label, first stage and the rounds its checkpoint added:
    the decision is read back with the standard library alone (Snakemake imports nothing
    else)."""
    files = []
    for label in LABELS:
        files += [job.path(label) for job in PLAN.jobs(decided(label))]
    return files


MERGE_DIRS = [layout.run_dir(entry) for entry in config["merge"]]
MERGED = [str(p) for run, _ in MERGE_DIRS for p in layout.raw_files(run)]
MERGE_LABELS = {str(run): label for run, label in MERGE_DIRS if label}


# Each run label's rounds decision, and a merged run's where it has one (a run of a fixed
# design, or of an older blockbench, has none).
DECISIONS = DECIDED + [
    str(p) for p in (run / "rounds.json" for run, _ in MERGE_DIRS) if p.exists()
]


# Between-run studies (blockbench.judge.studies): read by every stage that shows a claim's interval.
STUDIES = layout.study_files(config["between_run"])
# Each claim against the JAX release (rules/versions.smk), where a run has several to set
# side by side: releases (`jax_versions`) or merged runs; a run alone would show one column.
BY_VERSION = ["claims_by_version"] if config["jax_versions"] or config["merge"] else []
TABLES = expand(
    "results/tables/{name}.{ext}",
    name=["measurements", "speedups", *BY_VERSION],
    ext=["csv", "md"],
) + [
    "results/tables/measurements.parquet",
    "results/tables/processes.parquet",
    "results/tables/processes.csv",
]
# The run's figures: each catalog's own, drawn by hand or generic (blockbench.present.
# figure_names), those of every run, and each claim's anatomy where it has a ratio part.
FIGURE_NAMES = figure_names.names((claim.catalog for claim in CLAIM_LIST), CLAIM_LIST)
FIGURES = expand(
    "results/figures/{name}.{ext}",
    name=[*FIGURE_NAMES, *BY_VERSION],
    ext=["png", "svg"],
)
CLAIMS = ["results/claims.csv", "results/claims.md", "results/claims.rst"]
# The committed references of the checkout blockbench is read from, which the verdict map
# sets the run beside ('' where its package was fetched from git: CHECKOUT, rules/package.smk).
MAP_REFERENCE = str(CHECKOUT / "results" / "reference") if CHECKOUT is not None else ""
ENV = "../../environment.yml"
# The GPU rules' environment: the same packages and the CUDA 12 build of the same JAX.
ENV_CUDA = "../../environment-cuda12.yml"


def figure_category(name):
    """Report menus sort by name: the catalogs' own figures first, then the verdicts (each
    claim's anatomy beside them), then the rest."""
    if figure_names.claim_of(name):
        return "2. Verdicts"
    own = name.startswith(("article_", figure_names.GENERIC))
    return "1. The claims, redrawn" if own else "3. Figures"


def figure_caption(name):
    """The report's caption of a figure: its own (workflow/report/figures), one for every
    generic figure of a catalog, one for every claim's anatomy."""
    if figure_names.catalog_of(name):
        return "../report/figures/catalog.rst"
    if figure_names.claim_of(name):
        return "../report/figures/anatomy.rst"
    return f"../report/figures/{name}.rst"


def figure_png(name):
    """A figure's PNG, with its caption and menu in the report."""
    return report(
        f"results/figures/{name}.png",
        caption=figure_caption(name),
        category=figure_category(name),
    )


def cell_of(wc):
    return layout.Cell.from_dict(wc)


def job_of(wc):
    return run_plan.Job(cell_of(wc), int(wc.repeat))


def priority_of(wc):
    """The job's place in the run's randomized, interleaved order (higher runs first)."""
    version = layout.version_of(wc.run_label)
    return versions.priority(
        PLAN.priority(job_of(wc)),
        len(PLAN.order),
        len(PLAN.cells),
        VERSIONS.index(version) if version in VERSIONS else 0,
        len(VERSIONS),
    )


def jax_env_of(wc):
    """The environment of the cell's JAX release; none for the installed one, nor for a
    process already measured (a run rebuilt from its raw JSON has no environments)."""
    version = layout.version_of(wc.run_label)
    if version == layout.installed_jax() or os.path.exists(
        job_of(wc).path(wc.run_label)
    ):
        return []
    return [str(versions.stamp(ENVS, version))]


def gpu_ready_of(wc):
    """The run's GPU check, which a GPU cell waits for (config `check_gpu`)."""
    if wc.device != "gpu" or not config["check_gpu"]:
        return []
    return layout.GPU_READY.format(run_label=wc.run_label)


def decided(run_label):
    """The rounds each cell takes, by cell key, as the run's checkpoint decided them."""
    with open(checkpoints.rounds.get(run_label=run_label).output[0]) as f:
        return json.load(f)["rounds"]


def after_of(wc):
    """The job of this cell's block round measured just before it ([]: the first, or none);
    in an added round, a cell the decision leaves out of it is passed over."""
    job = job_of(wc)
    rounds = PLAN.rounds(
        decided(wc.run_label) if job.repeat >= PLAN.first[job.cell] else {}
    )
    takes = lambda cell, r: r < rounds[cell]
    before = run_order.before(PLAN.chains, (job.cell, job.repeat), takes)
    # ancient: an order, not data; a cell measured again leaves the next one up to date
    return ancient(before[0].path(wc.run_label, before[1])) if before else []


def first_of(wc):
    """Process 0 of the cell, which every later process of it waits for: it chooses the loops
    a sample that they all use (blockbench.measure.parent.cell_loops)."""
    job = job_of(wc)
    return [] if job.repeat == 0 else ancient(job.cell.path(wc.run_label, 0))


# Each job's place in its stage for its progress line (blockbench.pipeline.progress): when this
# invocation started, which records it found, and the plan's model of each stage's jobs.
if not workflow.remote_exec:
    os.environ.setdefault(progress.START_ENV, str(time.time()))


@functools.cache
def stage_places(run_label, added):
    """Every job's place in the first stage, or in the rounds its checkpoint added."""
    jobs = PLAN.jobs(decided(run_label)) if added else PLAN.jobs()
    jobs = [job for job in jobs if (job.repeat >= PLAN.first[job.cell]) == added]
    existing = {
        job.path(run_label) for job in jobs if os.path.exists(job.path(run_label))
    }
    if not added:
        return kit_estimate.places(PLAN, jobs, "first stage", run_label, existing)
    # the pace so far is the whole invocation's: its first stage's processes count too
    first = stage_places(run_label, False)
    done = max((place["model_done_s"] for place in first.values()), default=0.0)
    return kit_estimate.places(PLAN, jobs, "added rounds", run_label, existing, done)


def measure_job(wc):
    """The job's record (blockbench.pipeline.measure_job), as JSON: its cell and process, its
    settings (blockbench.records.params) as the run plan gives them with where this workflow
    runs it (the cluster's lock, the JAX release's environment, the patch of Snakemake's
    scheduler, recorded with the measurement), and its place in its stage for its progress
    line."""
    job = job_of(wc)
    jax_env = jax_env_of(wc)
    params = PLAN.params(
        job,
        lock_dir=LOCK_DIR,
        jax_env=jax_env[0] if jax_env else "",
        scheduler_patch=QUIET,
    )
    record = {
        "cell": {key: wc[key] for key in layout.FIELDS},
        "repeat": job.repeat,
        "run_label": wc.run_label,
        "params": params.as_dict(),
        "progress": stage_places(wc.run_label, job.repeat >= PLAN.first[job.cell])[job],
    }
    return json.dumps(record, separators=(",", ":"))


# The measure job's Python (a shell command): the environment's where Snakemake deploys one
# (--sdm conda), else Snakemake's own, as Snakemake picks it for a script.
PYTHON = (
    "python"
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    else shlex.quote(sys.executable)
)


# What a measurement job asks a cluster for (profiles/slurm; config/README.md, `cluster`).
# Constants, so that planning a large grid stays fast. Minutes: the cell's budget and the
# start-up around it (a lone cell a job; a block round's chain, a job: group-components in
# profiles/slurm).
CLUSTER = config["cluster"]
RUNTIME = cluster.runtime_min(config["budget_s"])
# A measurement claims every core Snakemake may use (`cores`, set by profiles/slurm): on a
# host it runs alone, and Snakemake lays out a group's cells one per layer, so the group asks
# for one cell's CPUs and memory and for the sum of its cells' runtimes.
CELL_THREADS = workflow.resource_settings.cores or 1
# CPUs of a CPU cell's job step: -1 sends no --cpus-per-task, so that the step has every CPU
# of its (exclusive) node; GPU cells get the GPU and gpu_cpus CPUs.
CPU_CELL_CPUS = CLUSTER["cpus"] or -1
# --mem for every measurement job; 0 sends none: SLURM's default for the job, which on an
# exclusive node is the node's (DefMemPerCPU for each of its CPUs, or all of it).
MEM_MB = CLUSTER["mem_mb"] or 0
ACCOUNT = cluster.account(CLUSTER)
LOCK_DIR = str(Path(CLUSTER["lock_dir"]).resolve())
