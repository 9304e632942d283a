"""The GPU kit: every cell the GPU claims need, measured on a GPU machine in one command.

It is for a machine without Snakemake or a package registry, that may limit how long one
command runs, and from which only a few files come back. It measures the run plan the
workflow would (blockbench.run.run_plan: the same processes, order and settings) through
the workflow's own command (parent.main), in the order of a run:

1. the first minute: `gpu_ready`, one throwaway GPU process that loads CUDA's libraries
   (so that no measured first call pays for a cold disk), and one short cell through every
   GPU phase, summarised in a few lines; a machine that fails any of it stops there, with
   one line naming the cause, before the grid;
2. the first stage, then the rounds decision (blockbench.judge.stopping, the workflow's
   checkpoint), sized to the time left, then the added rounds it asks for while time is
   left. The decision, cut to what was measured, is final: it travels in the archive's
   manifest, and judging at home never asks for a GPU round that was not measured.

Every process's JSON is packed into one archive after it is written; the command run again
resumes from what exists (or from an archive, on a fresh machine). At home the archive
unpacks into results/raw/<run_label>/, where the workflow finds every cell measured and only
builds tables, figures and claims.
"""

import argparse
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from blockbench.judge import articles, claim_rules
from blockbench.measure import gpu_ready, parent
from blockbench.measure.sampling import SINGLE_CALL_WALL_S
from blockbench.records import layout, store
from blockbench.records.params import MeasureParams
from blockbench.records.spec import EXIT_WRONG_HOST, StopRule
from blockbench.run import grid, stages
from blockbench.run.grid import ACCELERATORS, Cell
from blockbench.run.run_plan import Job, RunPlan
from blockbench.workloads.registry import STYLE_PHASES, WORKLOADS, impls_of

ROOT = Path(__file__).resolve().parents[3]
BASE_CONFIG = ROOT / "config" / "config.yaml"
QUICK_CONFIG = ROOT / "config" / "gpu-quick.yaml"
MANIFEST = layout.KIT_MANIFEST
# Kept free at the end of a part: the last archive and the exit.
PACK_RESERVE_S = 10.0
EXIT_NOT_READY = 1  # the first minute failed: nothing of the grid was measured
EXIT_MORE_PARTS = 75  # EX_TEMPFAIL: this part ended in time, first-stage cells remain
# Phases timed one call per sample, without a warm-up (blockbench.cell.phase_plan).
ONE_CALL = ("trace_lower", "compile", "first_call")
# The first minute's cell: a jit product, every GPU phase, small enough to take seconds.
SMOKE = Cell("gpu", "matmul", "jax_jit", 1024)
SMOKE_FILE = "smoke.json"
# Loads the CUDA plugin, cuBLAS and the compiler from disk once, in a process of its own.
THROWAWAY = (
    "import jax, jax.numpy as jnp; d = jax.devices()[0]; "
    "x = jax.device_put(jnp.ones((256, 256)), d); print(d, float(jnp.dot(x, x)[0, 0]))"
)


def merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """`overlay` over `base` as Snakemake merges a --configfile: mappings merge key by key,
    anything else (a list of workloads) replaces."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def load_config(overlay: Path = QUICK_CONFIG, base: Path = BASE_CONFIG) -> dict[str, Any]:
    config = merged(yaml.safe_load(base.read_text()), yaml.safe_load(overlay.read_text()))
    grid.check(config)
    return config


def claims_files(config: dict[str, Any]) -> list[Path]:
    """The config's claims files, in the checkout the kit runs from."""
    return [ROOT / f for f in claim_rules.claims_files(config["claims"])]


def run_plan(config: dict[str, Any]) -> RunPlan:
    """The workflow's plan of this config (rules/common.smk makes the same)."""
    claims = claim_rules.load(claims_files(config), articles.load(ROOT / config["articles"]))
    return RunPlan(config, claims)


# ---- the time model (an estimate; config `kit.estimate`) ----------------------------------


def _device(cell: Cell) -> str:
    return "gpu" if cell.device in ACCELERATORS else "cpu"


def call_s(model: dict[str, Any], cell: Cell) -> float:
    rate = model["throughput"][_device(cell)][cell.workload]
    return model["call_overhead_s"][_device(cell)] + WORKLOADS[cell.workload].work(cell.size) / rate


def phase_s(model: dict[str, Any], cell: Cell, phase: str, rule: StopRule) -> float:
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
    if phase == "dispatch":
        return warm + max(min(30 * call, SINGLE_CALL_WALL_S), rule.min_samples * call)
    if call >= rule.long_sample_s:  # one clean sample stands for the process
        return warm + call
    return warm + 3 * sample + max(rule.min_samples * sample, rule.max_time_s)


def process_s(model: dict[str, Any], cell: Cell, params: MeasureParams) -> float:
    """The model's seconds for one worker process of `cell`."""
    style = impls_of(cell.workload)[cell.impl].style
    phases = [p for p in STYLE_PHASES[style] if params.phases is None or p in params.phases]
    start = model["process_start_s"][_device(cell)] + call_s(model, cell)  # + the check's call
    return start + sum(phase_s(model, cell, p, params.rule) for p in phases)


def first_minute_s(model: dict[str, Any], config: dict[str, Any]) -> float:
    """The checks before the grid: gpu_ready's JAX process, the throwaway one, the smoke cell."""
    gpu_start = model["process_start_s"]["gpu"]
    return 2 * gpu_start + process_s(model, SMOKE, smoke_params(config))


def smoke_params(config: dict[str, Any]) -> MeasureParams:
    """A short look at every phase: the run's precision and seed, little sampling."""
    rule = StopRule(min_samples=3, min_time_s=0.0, max_time_s=0.05, warmup_s=0.2)
    return MeasureParams(
        budget_s=120.0,
        seed=config["seed"],
        matmul_precision=config["matmul_precision"],
        rule=rule,
    )


def dry_run(config: dict[str, Any], say: Callable[[str], None] = print) -> dict[str, float]:
    """List the first stage's cells with their rounds, phases and estimated seconds; say
    what the first minute, the first stage and the whole command take on the model."""
    plan, model = run_plan(config), config["kit"]["estimate"]
    per_cell: dict[Cell, float] = {}
    for job in plan.jobs():
        per_cell[job.cell] = per_cell.get(job.cell, 0.0) + process_s(
            model, job.cell, plan.params(job)
        )
    say(f"{'device':6} {'workload':8} {'impl':16} {'size':>9} {'rounds':>6}  {'est. s':>7}  phases")
    for cell, seconds in sorted(per_cell.items()):
        phases = ",".join(plan.phases[cell]) if plan.phases[cell] else "all"
        name = f"{cell.device:6} {cell.workload:8} {cell.impl:16} {cell.size:>9}"
        say(f"{name} {plan.first[cell]:>6}  {seconds:7.1f}  {phases}")
    first = sum(per_cell.values())
    checks = first_minute_s(model, config) if gated(config, plan) else 0.0
    part = config["kit"]["part_s"]
    on_gpu = sum(1 for c in per_cell if c.device in ACCELERATORS)
    say(
        f"{len(per_cell)} cells ({on_gpu} GPU, {len(per_cell) - on_gpu} CPU), "
        f"{len(plan.jobs())} processes in the first stage, at least "
        f"{min(plan.first.values(), default=0)} rounds a cell, run label {config['run_label']}"
    )
    say(
        f"estimated on {model['machine']} (a model, config kit.estimate, not a measurement): "
        f"first minute's checks {checks:.0f} s, first stage {first / 60:.1f} min, the two "
        f"{(checks + first) / 60:.1f} min; added rounds fill the rest of --part-s "
        f"({part / 60:.1f} min in all)"
    )
    return {"checks_s": checks, "first_stage_s": first, "part_s": part}


# ---- the first minute --------------------------------------------------------------------


def gated(config: dict[str, Any], plan: RunPlan) -> bool:
    """Whether the run has GPU cells and checks the GPU before them (config `check_gpu`)."""
    return bool(config["check_gpu"]) and any(c.device == "gpu" for c in plan.cells)


def throwaway() -> str | None:
    """One GPU process that loads CUDA's libraries and runs a product; the cause if it fails."""
    env = {**os.environ, "JAX_PLATFORMS": gpu_ready.jax_platforms("gpu").split(",")[0]}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(parent.SRC), env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(
            [sys.executable, "-c", THROWAWAY],
            capture_output=True,
            text=True,
            timeout=gpu_ready.TIMEOUT_S,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"a first GPU process failed: {exc}"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        return f"a first GPU process failed: {said[-1]}"
    return None


def summary(record: dict[str, Any]) -> list[str]:
    """The smoke cell in a few lines: what a person checks before trusting the grid."""
    prov = record.get("provenance", {})
    device = prov.get("device") or {}
    after = prov.get("device_after") or {}
    packages = prov.get("software", {}).get("packages", {})
    check = record.get("check") or {}
    phases = record.get("phases", {})

    def nvml(d: dict[str, Any]) -> str:
        n = d.get("nvml") if isinstance(d.get("nvml"), dict) else {}
        clocks = (n.get("clocks_mhz") or {}).get("sm")
        return f"SM {clocks} MHz, {n.get('temperature_c')} C, {n.get('power_w')} W"

    memory = (after.get("memory_stats") or {}).get("peak_bytes_in_use")
    jax = {k: v for k, v in packages.items() if k.startswith("jax")}
    return [
        f"smoke cell {SMOKE.key}: {record.get('status')} {record.get('reason', '')}".rstrip(),
        f"  device {device.get('model')}; matmul precision measured "
        f"{check.get('matmul_precision_measured', 'unknown')} (asked "
        f"{prov.get('jax', {}).get('matmul_precision')})",
        f"  {', '.join(f'{k} {v}' for k, v in sorted(jax.items()))}; CUDA "
        f"{device.get('platform_version')}; driver {(device.get('nvml') or {}).get('driver')}",
        f"  NVML before: {nvml(device)}; after: {nvml(after)}; peak memory {memory} bytes",
        "  phases: "
        + ", ".join(f"{name} {p.get('median_s', 0):.3g} s" for name, p in phases.items()),
    ]


def first_minute(config: dict[str, Any], raw: Path, say: Callable[[str], None]) -> str | None:
    """gpu_ready, the throwaway process, the smoke cell; the one line naming a failure."""
    facts, reason = gpu_ready.check()
    if reason is not None:
        return f"GPU not ready: {reason}"
    raw.mkdir(parents=True, exist_ok=True)
    store.write_json_atomic(raw / Path(layout.GPU_READY).name, {**vars(facts), "ready": True})
    say(f"GPU ready: {', '.join(facts.gpus)}; driver {facts.driver}; {facts.plugin}")
    t0 = time.monotonic()
    if (failed := throwaway()) is not None:
        return f"GPU not ready: {failed}"
    say(f"CUDA's libraries loaded by a throwaway process in {time.monotonic() - t0:.1f} s")
    out = raw / SMOKE_FILE
    args = parent.job_args(vars(SMOKE), 0, out, config["run_label"], smoke_params(config))
    if parent.main(args) != 0 or not out.exists():
        return f"GPU not ready: the smoke cell {SMOKE.key} wrote no record"
    record = store.read_json(out)
    for line in summary(record):
        say(line)
    if record["status"] != "ok":
        return (
            f"GPU not ready: the smoke cell {SMOKE.key} is {record['status']}: {record['reason']}"
        )
    return None


# ---- measuring, in parts --------------------------------------------------------------


def versions(root: Path) -> dict[str, Any]:
    """The JAX, CUDA plugin and driver versions the GPU cells actually ran with, from the
    first GPU record that reached its device."""
    for path in layout.raw_files(root):
        record = store.read_json(path)
        device = record["provenance"].get("device") or {}
        if record["cell"]["device"] in ACCELERATORS and device:
            nvml = device.get("nvml") if isinstance(device.get("nvml"), dict) else {}
            packages = record["provenance"]["software"]["packages"]
            return {
                "packages": {k: v for k, v in packages.items() if k.startswith("jax")},
                "platform_version": device.get("platform_version"),
                "driver": nvml.get("driver"),
                "cuda_driver": nvml.get("cuda_driver"),
                "device": device.get("model"),
            }
    return {}


def pack(raw: Path, archive: Path, manifest: dict[str, Any]) -> None:
    """Every file of the run's folder (its measurements, the manifest, the rounds decision,
    the GPU check, the smoke cell, the host's kind) in one archive, written atomically."""
    store.write_json_atomic(raw / MANIFEST, manifest)
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f".{archive.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(p for p in raw.rglob("*") if p.is_file() and p.suffix == ".json"):
            tar.add(path, arcname=str(path.relative_to(raw.parent)))
    tmp.replace(archive)


def unpack(archive: Path, raw_root: Path) -> Path:
    """Extract a kit archive under `raw_root` (results/raw); return the run's directory.
    Measurements already there are kept (a part measured again never overwrites a result);
    the manifest and the rounds decision are the archive's."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        labels = {Path(m.name).parts[0] for m in members}
        if len(labels) != 1:
            raise ValueError(f"{archive}: expected one run's directory, found {sorted(labels)}")
        newer = (MANIFEST, Path(layout.DECISION).name)
        fresh = [m for m in members if not (raw_root / m.name).exists() or m.name.endswith(newer)]
        tar.extractall(raw_root, members=fresh, filter="data")
    return raw_root / labels.pop()


class Part:
    """One command's share of the run: its clock, what it measured, its manifest."""

    def __init__(self, config: dict[str, Any], root: Path, out: Path, part_s: float) -> None:
        self.config, self.part_s = config, part_s
        self.clock0 = time.monotonic()
        self.label = config["run_label"]
        self.root = root
        self.raw = root / "results" / "raw" / self.label
        self.archive = out / f"{self.label}.tar.gz"
        self.manifest = (
            store.read_json(self.raw / MANIFEST) if (self.raw / MANIFEST).exists() else {}
        )
        self.manifest |= {"run_label": self.label, "config": config}
        self.manifest["schema_validated"] = store.can_validate()
        self.row: dict[str, Any] = {"started_at": time.time(), "seconds": 0.0, "processes": 0}
        self.manifest["parts"] = [*self.manifest.get("parts", []), self.row]
        self.walls: dict[Cell, float] = {}

    def left(self) -> float:
        return self.part_s - (time.monotonic() - self.clock0) - PACK_RESERVE_S

    def done(self, job: Job) -> bool:
        return (self.root / job.path(self.label)).exists()

    def pack(self) -> None:
        self.row["seconds"] = round(time.monotonic() - self.clock0, 1)
        self.manifest["versions"] = versions(self.raw)
        pack(self.raw, self.archive, self.manifest)

    def measure(self, plan: RunPlan, jobs: list[Job]) -> int | None:
        """Measure `jobs` not yet measured while each fits the time left; None when every one
        was, else the exit status that stops the part (0: out of time)."""
        model = self.config["kit"]["estimate"]
        for job in (j for j in jobs if not self.done(j)):
            params = plan.params(job)
            expected = self.walls.get(job.cell) or process_s(model, job.cell, params)
            if expected > (left := self.left()):
                return 0
            path = self.root / job.path(self.label)
            t0 = time.monotonic()
            budget = min(params.budget_s, left)
            args = parent.job_args(
                vars(job.cell), job.repeat, path, self.label, replace(params, budget_s=budget)
            )
            if (code := parent.main(args)) != 0:
                return code
            self.walls[job.cell] = max(self.walls.get(job.cell, 0.0), time.monotonic() - t0)
            if budget < params.budget_s and store.read_json(path)["status"] == "timeout":
                path.unlink()  # cut short by this part, not by its own budget: measure it again
                return 0
            self.row["processes"] += 1
            self.pack()
        return None


def final_decision(decision: dict[str, Any], plan: RunPlan, part: Part) -> dict[str, Any]:
    """The decision as measured: each cell's rounds cut to the processes that exist, with
    what was asked kept beside them."""
    asked = decision.get("asked", decision["rounds"])
    measured = {}
    for key, rounds in asked.items():
        cell = plan.cell(key)
        measured[key] = next((r for r in range(rounds) if not part.done(Job(cell, r))), rounds)
    return decision | {"asked": asked, "rounds": measured}


def run(
    config: dict[str, Any],
    out: Path,
    root: Path = ROOT,
    part_s: float | None = None,
    resume: Path | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """The first minute, the first stage, the rounds decision and the added rounds, within
    `part_s`. 0: the first stage and the decision are in (added rounds may have been cut by
    time, and the decision says so); EXIT_MORE_PARTS: first-stage processes remain (run the
    same command again); EXIT_NOT_READY: the GPU failed its first minute."""
    plan = run_plan(config)
    if resume is not None:
        unpack(resume, root / "results" / "raw")
    part = Part(config, root, out, config["kit"]["part_s"] if part_s is None else part_s)
    # an earlier part's decision: its added rounds are what is left to measure
    decision = part.manifest.get("decision")
    todo = plan.jobs(decision["asked"]) if decision else plan.jobs()
    checks = gated(config, plan) and not all(part.done(j) for j in todo)
    if checks and (failed := first_minute(config, part.raw, say)) is not None:
        say(failed)
        return EXIT_NOT_READY
    stopped = part.measure(plan, plan.jobs())
    if stopped is None and decision is None:
        decision = stages.decide_rounds(
            raw=[str(part.root / j.path(part.label)) for j in plan.jobs()],
            claims_file=claims_files(config),
            articles_file=ROOT / config["articles"],
            study_files=layout.study_files(ROOT / config["between_run"]),
            units=plan.units,
            run_label=part.label,
            precision=grid.precision(config),
            budget_minutes=None,
            out=part.raw / Path(layout.DECISION).name,
            left_s=part.left(),
        )
    if stopped is None and decision is not None:
        stopped = part.measure(plan, plan.jobs(decision.get("asked", decision["rounds"])))
        decision = final_decision(decision, plan, part)
        part.manifest["decision"] = decision
        store.write_json_atomic(part.raw / Path(layout.DECISION).name, decision)
    part.row["remaining"] = sum(not part.done(j) for j in plan.jobs())
    part.manifest["complete"] = decision is not None
    part.pack()
    if stopped == EXIT_WRONG_HOST:
        say("stopped: this machine is not the kind the run began on (the line above)")
        return EXIT_WRONG_HOST
    if stopped not in (None, 0):
        raise RuntimeError(f"parent.py refused a cell ({stopped}): a bad cell in the config")
    added = sum(decision["asked"].values()) - sum(decision["rounds"].values()) if decision else 0
    say(
        f"part {len(part.manifest['parts'])}: {part.row['processes']} process(es) in "
        f"{part.row['seconds']:.0f} s; {part.row['remaining']} of the first stage's "
        f"{len(plan.jobs())} left; {part.archive}"
        + (f"; {added} added round(s) cut by time" if added else "")
    )
    if decision is None:
        say("not complete: run the same command again (it resumes)")
        return EXIT_MORE_PARTS
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_run.py", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="folder for the archive <run_label>.tar.gz")
    p.add_argument(
        "--config",
        type=Path,
        default=QUICK_CONFIG,
        help="the grid, merged over config/config.yaml (default config/gpu-quick.yaml; "
        "config/gpu.yaml is the full grid, for a longer session)",
    )
    p.add_argument("--part-s", type=float, help="this command's time (default: kit.part_s)")
    p.add_argument("--resume", type=Path, help="an earlier part's archive to go on from")
    p.add_argument("--dry-run", action="store_true", help="list the cells and the estimate")
    p.add_argument(
        "--unpack",
        type=Path,
        metavar="ARCHIVE",
        help="at home: extract a kit archive into results/raw/<run_label>/ and stop",
    )
    args = p.parse_args(argv)
    if args.unpack:
        raw = unpack(args.unpack, ROOT / "results" / "raw")
        config = args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config
        print(
            f"{raw}: {len(layout.raw_files(raw))} measurements; judge them here (no GPU, no "
            f"CUDA environment) with\n  python3 scripts/bootstrap.py run --configfile "
            f"{config} --config run_label={raw.name} check_gpu=false"
        )
        return 0
    config = load_config(args.config)
    if args.dry_run:
        dry_run(config)
        return 0
    if args.out is None:
        p.error("--out is required (or --dry-run, --unpack)")
    return run(config, args.out, part_s=args.part_s, resume=args.resume)
