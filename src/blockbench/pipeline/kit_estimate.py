"""The GPU kit's time: a model of what each process costs (config `kit.estimate`), the same
model with the process starts measured in the first minute, and the grid cut into parts of
whole blocks, each fitting one command of a lent machine, the blocks that decide claims first.

The model is an estimate for the machine it names, not a measurement: a process costs its
start (interpreter, imports, backend, inputs, provenance, the correctness check) plus each
phase under the sampling rule, with one call lasting overhead + work / throughput (`work` as
in the registry: flops for matmul, elements for SELU). The first minute replaces the starts
with those it times on the machine at hand (`with_starts`).
"""

from collections.abc import Callable, Container, Mapping
from copy import deepcopy
from dataclasses import asdict, dataclass
from typing import Any

from blockbench.pipeline import grid, progress, run_order
from blockbench.pipeline.config_loading import merged
from blockbench.pipeline.grid import ACCELERATORS
from blockbench.pipeline.run_plan import Job, RunPlan
from blockbench.records.layout import Cell
from blockbench.records.params import MeasureParams
from blockbench.records.spec import (
    CALIBRATION_TRIES,
    SINGLE_CALL_SAMPLES,
    SINGLE_CALL_WALL_S,
    StopRule,
)
from blockbench.workloads.registry import STYLE_PHASES, WORKLOADS, impls_of

# Work a second where a cell was never measured: a plain 2-core CPU's order of magnitude
# (BLAS flops; elements; the eager loop's scalar updates, each a dispatch), and a process's
# start (interpreter, imports, backend, inputs). A model, stated wherever it is used.
RATES = {"matmul": 5e10, "dot_xx": 5e10, "stencil": 2e4}
MODEL = {
    "machine": "a model 2-core CPU",
    "process_start_s": {"cpu": 2.0, "gpu": 8.0},
    "compile_s": {"cpu": 0.3, "gpu": 1.0},
    "call_overhead_s": {"cpu": 2e-5, "gpu": 1e-4},
    "throughput": {
        "cpu": {w: RATES.get(w, 1e9) for w in WORKLOADS},
        "gpu": {w: 100 * RATES.get(w, 1e9) for w in WORKLOADS},
    },
}


# The GPU kit's settings, for every GPU grid; a config's `kit` key replaces any of them.
# `part_s`: one command's time, for machines that limit how long a command may run: the
# first minute's checks, the first stage of as many whole blocks as fit, their added rounds
# in what is left, the archive packed; a session of ten minutes keeps a minute for copying
# the checkout and the archive. `estimate`: the time model the parts and the dry run are
# planned on, an estimate and not a measurement. Its worker starts are the larger of those
# the H200 reference's two runs measured (5.32 s a GPU process, 2.04 s a CPU one, each with
# one packing of the archive), rounded up; the rest is a guess for a recent data-centre GPU.
# On the machine at hand the first minute measures the starts, and the kit plans with them.
KIT: dict[str, Any] = {
    "part_s": 540.0,
    "estimate": {
        "machine": "one H200 (its reference's worker starts) and 16 CPU cores",
        "process_start_s": {"cpu": 2.1, "gpu": 5.4},
        "compile_s": {"cpu": 0.3, "gpu": 1.0},
        "call_overhead_s": {"cpu": 2e-5, "gpu": 1e-4},
        "throughput": {"cpu": {"matmul": 5e11, "selu": 1e8}, "gpu": {"matmul": 2e13, "selu": 1e10}},
    },
}
# Kept free at the end of a part: the last archive and the exit.
PACK_RESERVE_S = 10.0


def kit(config: Mapping[str, Any]) -> dict[str, Any]:
    """The kit's settings for `config`: KIT, with what its `kit` key gives in their place,
    key by key (an `estimate` that names one start keeps the rest of the model)."""
    return merged(KIT, config.get("kit", {}))


# Phases timed one call per sample, without a warm-up (blockbench.cell.phase_plan).
ONE_CALL = ("trace_lower", "compile", "first_call")
# The first minute's cells: a jit product through every GPU phase, and the same product's
# steady phase on the CPU; small enough to take seconds, and each times a worker's start.
SMOKE = Cell("gpu", "matmul", "jax_jit", 1024)
SMOKE_CPU = Cell("cpu", "matmul", "jax_jit", 256)


def _device(cell: Cell) -> str:
    return "gpu" if cell.device in ACCELERATORS else "cpu"


def call_s(model: Mapping[str, Any], cell: Cell) -> float:
    device = _device(cell)
    # a catalog's own workload, read after the model was made, takes the model's default rate
    default = RATES.get(cell.workload, 1e9) * (100 if device == "gpu" else 1)
    rate = model["throughput"][device].get(cell.workload, default)
    return model["call_overhead_s"][device] + WORKLOADS[cell.workload].work(cell.size) / rate


def phase_s(model: Mapping[str, Any], cell: Cell, phase: str, rule: StopRule) -> float:
    """A phase's worst case under the stop rule: calibration to `sample_time_s`, then
    samples until the floor is in and the time cap is reached (one call each for costly
    phases, one cold first call on an accelerator, one for NumPy)."""
    call = call_s(model, cell)
    sample = max(call, rule.sample_time_s)
    if phase in ONE_CALL:
        once = phase == "first_call" and (
            _device(cell) == "gpu" or impls_of(cell.workload)[cell.impl].style == "numpy"
        )
        one = model["compile_s"][_device(cell)] + call
        return (1 if once or one >= rule.long_sample_s else rule.min_samples) * one
    # warm-up: `warmup` calls, and calls until `warmup_s` has passed (the last may run over);
    # on a GPU each repeated-call phase warms its clocks up for `accelerator_warmup_s`
    warm_s = rule.accelerator_warmup_s if _device(cell) == "gpu" else rule.warmup_s
    warm = max(rule.warmup * call, warm_s + call) if rule.warmup else 0.0
    if phase == "dispatch":  # one call a sample, the single-call floor (sampling.Sampler)
        floor = min(SINGLE_CALL_SAMPLES * call, SINGLE_CALL_WALL_S)
        return warm + max(floor, rule.min_samples * call)
    if call >= rule.long_sample_s:  # one clean sample stands for the process
        return warm + call
    # calibration: up to CALIBRATION_TRIES tries at the chosen loops, each a sample long
    return warm + CALIBRATION_TRIES * sample + max(rule.min_samples * sample, rule.max_time_s)


def process_s(model: Mapping[str, Any], cell: Cell, params: MeasureParams) -> float:
    """The model's seconds for one worker process of `cell`."""
    style = impls_of(cell.workload)[cell.impl].style
    phases = [p for p in STYLE_PHASES[style] if params.phases is None or p in params.phases]
    start = model["process_start_s"][_device(cell)] + call_s(model, cell)  # + the check's call
    return start + sum(phase_s(model, cell, p, params.rule) for p in phases)


def places(
    plan: RunPlan,
    jobs: list[Job],
    stage: str,
    run_label: str,
    existing: Container[str],
    done_before_s: float = 0.0,
) -> dict[Job, dict[str, Any]]:
    """Each job's progress.Place in `jobs`, the stage's order, as a dict (Snakemake's
    params): a job whose record `existing` holds was measured before this invocation and
    adds nothing to the model time it is compared with; `done_before_s`, the model time of
    what this invocation measured before the stage (the added rounds: its first stage)."""
    model = [process_s(MODEL, job.cell, plan.params(job)) for job in jobs]
    out, done, left = {}, done_before_s, sum(model)
    for i, (job, seconds) in enumerate(zip(jobs, model, strict=True)):
        left -= seconds
        if job.path(run_label) not in existing:
            done += seconds
        out[job] = asdict(progress.Place(stage, i + 1, len(jobs), done, max(left, 0.0)))
    return out


def smoke_params(config: Mapping[str, Any], cell: Cell = SMOKE) -> MeasureParams:
    """A short look at a cell: the run's precision and seed, little sampling; every phase
    of the GPU's smoke cell, the steady one of the CPU's."""
    rule = StopRule(min_samples=3, min_time_s=0.0, max_time_s=0.05, warmup_s=0.2)
    return MeasureParams(
        budget_s=120.0,
        seed=config["seed"],
        matmul_precision=config["matmul_precision"],
        rule=rule,
        phases=None if cell == SMOKE else ("steady",),
    )


def first_minute_s(model: Mapping[str, Any], config: Mapping[str, Any]) -> float:
    """The checks before the grid: gpu_ready's JAX process, the throwaway one, the two
    smoke cells."""
    return (
        2 * model["process_start_s"]["gpu"]
        + process_s(model, SMOKE, smoke_params(config))
        + process_s(model, SMOKE_CPU, smoke_params(config, SMOKE_CPU))
    )


def start_s(record: Mapping[str, Any]) -> float | None:
    """A process's seconds outside its phases, from its record's timeline: from the lock
    taken to sampling (worker start, imports, backend, provenance, inputs, warm-up), and from
    the last sample to the worker's exit (the check, the result's return). None where the
    timeline lacks a stamp (a worker that failed)."""
    t = record.get("timeline") or {}
    stamps = ("locked", "sampling", "sampled", "worker_exit")
    if not all(isinstance(t.get(k), int | float) for k in stamps):
        return None
    return (t["sampling"] - t["locked"]) + (t["worker_exit"] - t["sampled"])


def with_starts(model: Mapping[str, Any], starts: Mapping[str, float]) -> dict[str, Any]:
    """The model with the process starts measured here (device kind -> seconds)."""
    out = deepcopy(dict(model))
    out["process_start_s"] = {**out["process_start_s"], **starts}
    return out


def seconds(model: Mapping[str, Any], plan: RunPlan, jobs: list[Job]) -> dict[Cell, float]:
    """Each cell's estimated seconds over `jobs`."""
    out: dict[Cell, float] = {}
    for job in jobs:
        out[job.cell] = out.get(job.cell, 0.0) + process_s(model, job.cell, plan.params(job))
    return out


def unit_order(plan: RunPlan) -> list[str]:
    """The blocks and lone cells (run_order.units' names) in the order the plan first
    measures them: the order the kit records in its manifest."""
    return list(dict.fromkeys(plan.unit(job.cell) for job in plan.jobs()))


def deciding_done_s(model: Mapping[str, Any], plan: RunPlan) -> float:
    """The model's seconds of the first stage up to the last process of a block that holds
    a deciding cell (with `deciding_first`, the blocks measured first)."""
    claim_cells = {c.key for c in run_order.deciding(plan.cells, plan.claims)}
    first = {n for n, u in plan.units.items() if claim_cells.intersection(u["cells"])}
    jobs = plan.jobs()
    last = max((i for i, j in enumerate(jobs) if plan.unit(j.cell) in first), default=-1)
    return sum(seconds(model, plan, jobs[: last + 1]).values())


def by_need(plan: RunPlan) -> list[str]:
    """The blocks in the order a grid too long for one part gives them out: those holding a
    cell that a part judged at one size reads there (run_order.deciding), then those holding
    a cell another part the run measures reads (a trend's or growth's sizes), then the rest
    (the figures' sweeps); within each, the order measured."""
    deciding = {c.key for c in run_order.deciding(plan.cells, plan.claims)}
    read = {cell.key for _, cell, _ in grid.claimed(dict(plan.config), plan.claims)}

    def need(name: str) -> int:
        keys = set(plan.units[name]["cells"])
        return 0 if deciding & keys else 1 if read & keys else 2

    return sorted(unit_order(plan), key=need)


@dataclass(frozen=True)
class PartPlan:
    """One command's share of a grid (a part): its blocks and the model's seconds of
    their first stage (the first minute's checks not included)."""

    blocks: tuple[str, ...]
    seconds: float


def parts(
    model: Mapping[str, Any],
    plan: RunPlan,
    jobs: list[Job],
    fit_s: float,
) -> list[PartPlan]:
    """`jobs` (the first stage still to measure) as parts of whole blocks, each holding
    what fits `fit_s` on the model: blocks are taken in `by_need`'s order, each into the
    first part with room for it (first fit), so the blocks that decide claims are in the
    first part and a trend's sizes before blocks no claim reads. A block longer than
    `fit_s` alone is a part of its own. Whole blocks: a block's rounds all run on one
    machine."""
    cost = seconds(model, plan, jobs)
    by_unit = {
        name: sum(cost.get(Cell.from_key(k), 0.0) for k in u["cells"])
        for name, u in plan.units.items()
    }
    out: list[list[str]] = []
    for name in (n for n in by_need(plan) if by_unit[n] > 0):
        room = (p for p in out if sum(by_unit[n] for n in p) + by_unit[name] <= fit_s)
        if (part := next(room, None)) is None:
            out.append(part := [])
        part.append(name)
    return [PartPlan(tuple(p), sum(by_unit[n] for n in p)) for p in out]


def dry_run(
    config: Mapping[str, Any],
    plan: RunPlan,
    checks: bool,
    say: Callable[[str], None] = print,
) -> dict[str, float]:
    """List the first stage's cells with their rounds, phases and estimated seconds, the
    order of the blocks; say what the first minute, the first stage and the whole command
    take on the model."""
    model = kit(config)["estimate"]
    per_cell = seconds(model, plan, plan.jobs())
    say(f"{'device':6} {'workload':8} {'impl':16} {'size':>9} {'rounds':>6}  {'est. s':>7}  phases")
    for cell, took in sorted(per_cell.items()):
        phases = ",".join(plan.phases[cell]) if plan.phases[cell] else "all"
        name = f"{cell.device:6} {cell.workload:8} {cell.impl:16} {cell.size:>9}"
        say(f"{name} {plan.first[cell]:>6}  {took:7.1f}  {phases}")
    say("blocks in the order measured: " + ", ".join(unit_order(plan)))
    first = sum(per_cell.values())
    minute = first_minute_s(model, config) if checks else 0.0
    if config["deciding_first"]:
        done = deciding_done_s(model, plan) + minute
        say(
            f"the blocks that decide claim parts are measured by {done:.0f} s of the command "
            "(the first minute included); the blocks only trends read after them"
        )
    part = kit(config)["part_s"]
    planned = parts(model, plan, plan.jobs(), part - PACK_RESERVE_S - minute)
    for i, p in enumerate(planned, 1):
        count = sum(1 for j in plan.jobs() if plan.unit(j.cell) in p.blocks)
        say(
            f"part {i} of {len(planned)}: {(minute + p.seconds) / 60:.1f} model-min (first "
            f"minute {minute:.0f} s, first stage {p.seconds / 60:.1f} min), {len(p.blocks)} "
            f"blocks, {count} processes: " + ", ".join(p.blocks)
        )
    on_gpu = sum(1 for c in per_cell if c.device in ACCELERATORS)
    say(
        f"{len(per_cell)} cells ({on_gpu} GPU, {len(per_cell) - on_gpu} CPU), "
        f"{len(plan.jobs())} processes in the first stage, at least "
        f"{min(plan.first.values(), default=0)} rounds a cell, run label {config['run_label']}"
    )
    say(
        f"estimated on {model['machine']} (a model, config kit.estimate, not a measurement): "
        f"first minute's checks {minute:.0f} s, first stage {first / 60:.1f} min, the two "
        f"{(minute + first) / 60:.1f} min; added rounds fill the rest of --part-s "
        f"({part / 60:.1f} min in all)"
    )
    return {"checks_s": minute, "first_stage_s": first, "part_s": part, "parts": len(planned)}
