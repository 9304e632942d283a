"""The GPU kit: every cell the GPU claims need, measured on a GPU machine in one command.

It is for a machine without Snakemake or a package registry, that may limit how long one
command runs, and from which only a few files come back. So the kit plans the grid of
config/gpu.yaml as the workflow would (grid.plan, run_order.order), measures each worker
process through the workflow's own command (parent.main with parent.job_args: the same code,
the same JSON), skips processes whose JSON exists, stops before a process that would not end
within the part's time, and packs every raw JSON, with a manifest of parts and versions,
into one archive after each process. Run again, it resumes; at home the archive unpacks into
results/raw/<run_label>/, where the workflow finds every cell already measured and only
builds tables, figures and claims.
"""

import argparse
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from blockbench.judge import articles, claim_rules
from blockbench.measure import parent
from blockbench.measure.sampling import SINGLE_CALL_WALL_S
from blockbench.records import layout, store
from blockbench.records.spec import StopRule
from blockbench.run import grid, run_order
from blockbench.run.grid import ACCELERATORS, Cell, Phases
from blockbench.workloads.registry import STYLE_PHASES, WORKLOADS, impls_of

ROOT = Path(__file__).resolve().parents[3]
BASE_CONFIG = ROOT / "config" / "config.yaml"
GPU_CONFIG = ROOT / "config" / "gpu.yaml"
MANIFEST = "kit.json"
# Kept free at the end of a part: the last archive and the exit.
PACK_RESERVE_S = 10.0
EXIT_MORE_PARTS = 75  # EX_TEMPFAIL: this part ended in time, cells remain: run it again
# Phases timed one call per sample, without a warm-up (blockbench.cell.phase_plan).
ONE_CALL = ("trace_lower", "compile", "first_call")


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


def load_config(overlay: Path = GPU_CONFIG, base: Path = BASE_CONFIG) -> dict[str, Any]:
    config = merged(yaml.safe_load(base.read_text()), yaml.safe_load(overlay.read_text()))
    grid.check(config)
    return config


@dataclass(frozen=True)
class Job:
    """One worker process of one cell, in the run's order."""

    cell: Cell
    repeat: int
    phases: Phases
    block: str

    def path(self, root: Path, run_label: str) -> Path:
        return root / self.cell.path(run_label, self.repeat)


def jobs(config: dict[str, Any]) -> list[Job]:
    """Every process of the run, in the order the workflow's priorities give it."""
    plan = grid.plan(config)
    claims = claim_rules.load(ROOT / config["claims"], articles.load(ROOT / config["articles"]))
    repeats = {cell: s.repeats for cell, s in grid.settings(config).items()}
    order = run_order.order(plan, claims, repeats, config["seed"])
    ranked = sorted(order.items(), key=lambda item: -item[1][0])
    return [Job(cell, r, plan[cell], block) for (cell, r), (_, block) in ranked]


def params(config: dict[str, Any], job: Job, budget_s: float) -> dict[str, Any]:
    """parent.job_args's settings for one process, as the workflow's measure rule sets them."""
    return {
        "budget_s": budget_s,
        "seed": config["seed"],
        "matmul_precision": config["matmul_precision"],
        "sampling": grid.settings(config)[job.cell].per_process(),
        "phases": ",".join(job.phases or ()),
        "threads": config["threads"],
        "block": job.block,
    }


# ---- the time model (an estimate; config `kit.estimate`) ----------------------------------


def call_s(model: dict[str, Any], cell: Cell) -> float:
    device = "gpu" if cell.device in ACCELERATORS else "cpu"
    rate = model["throughput"][device][cell.workload]
    return model["call_overhead_s"][device] + WORKLOADS[cell.workload].work(cell.size) / rate


def phase_s(model: dict[str, Any], cell: Cell, phase: str, rule: StopRule) -> float:
    """A phase's worst case under the stop rule: calibration to `sample_time_s`, then
    samples until the floor is in and the time cap is reached (one call each for costly
    phases, one cold first call on an accelerator, one for NumPy)."""
    device = "gpu" if cell.device in ACCELERATORS else "cpu"
    call = call_s(model, cell)
    sample = max(call, rule.sample_time_s)
    if phase in ONE_CALL:
        once = phase == "first_call" and (
            device == "gpu" or impls_of(cell.workload)[cell.impl].style == "numpy"
        )
        one = model["compile_s"][device] + call
        return (1 if once or one >= rule.long_sample_s else rule.min_samples) * one
    # warm-up: `warmup` calls, and calls until `warmup_s` has passed (the last may run over)
    warm = max(rule.warmup * call, rule.warmup_s + call) if rule.warmup else 0.0
    if phase == "dispatch":
        return warm + max(min(30 * call, SINGLE_CALL_WALL_S), rule.min_samples * call)
    if call >= rule.long_sample_s:  # one clean sample stands for the process
        return warm + call
    return warm + 3 * sample + max(rule.min_samples * sample, rule.max_time_s)


def process_s(config: dict[str, Any], job: Job) -> float:
    """The model's seconds for one worker process of `job`'s cell."""
    model = config["kit"]["estimate"]
    rule = StopRule(**grid.settings(config)[job.cell].per_process())
    style = impls_of(job.cell.workload)[job.cell.impl].style
    phases = [p for p in STYLE_PHASES[style] if job.phases is None or p in job.phases]
    device = "gpu" if job.cell.device in ACCELERATORS else "cpu"
    start = model["process_start_s"][device] + call_s(model, job.cell)  # + the check's call
    return start + sum(phase_s(model, job.cell, p, rule) for p in phases)


def dry_run(config: dict[str, Any], say: Callable[[str], None] = print) -> float:
    """List every cell with its phases and estimated seconds; return the total."""
    runs = jobs(config)
    per_cell: dict[Cell, float] = {}
    for job in runs:
        per_cell[job.cell] = per_cell.get(job.cell, 0.0) + process_s(config, job)
    plan = grid.plan(config)
    say(f"{'device':6} {'workload':8} {'impl':16} {'size':>9}  {'est. s':>7}  phases")
    for cell, seconds in sorted(per_cell.items()):
        phases = ",".join(plan[cell]) if plan[cell] else "all"
        name = f"{cell.device:6} {cell.workload:8} {cell.impl:16} {cell.size:>9}"
        say(f"{name}  {seconds:7.1f}  {phases}")
    total = sum(per_cell.values())
    on_gpu = sum(1 for c in per_cell if c.device in ACCELERATORS)
    part = config["kit"]["part_s"]
    say(
        f"{len(per_cell)} cells ({on_gpu} GPU, {len(per_cell) - on_gpu} CPU), {len(runs)} "
        f"processes ({config['repeats']} per cell unless its block says), "
        f"run label {config['run_label']}"
    )
    say(
        f"estimated {total / 60:.1f} min on {config['kit']['estimate']['machine']} "
        f"(a model, config kit.estimate, not a measurement): at least "
        f"{-(-total // part):.0f} part(s) of at most {part:g} s"
    )
    return total


# ---- measuring, in parts --------------------------------------------------------------


def versions(root: Path) -> dict[str, Any]:
    """The JAX, CUDA plugin and driver versions the GPU cells actually ran with (they differ
    from the locked CPU versions), from the first GPU record that reached its device."""
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
    """Every raw JSON of the run and the manifest, in one archive (written atomically)."""
    store.write_json_atomic(raw / MANIFEST, manifest)
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f".{archive.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in [raw / MANIFEST, *layout.raw_files(raw)]:
            tar.add(path, arcname=str(path.relative_to(raw.parent)))
    tmp.replace(archive)


def unpack(archive: Path, raw_root: Path) -> Path:
    """Extract a kit archive under `raw_root` (results/raw); return the run's directory.
    Files already there are kept: a part measured again never overwrites a result."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        labels = {Path(m.name).parts[0] for m in members}
        if len(labels) != 1:
            raise ValueError(f"{archive}: expected one run's directory, found {sorted(labels)}")
        fresh = [
            m for m in members if not (raw_root / m.name).exists() or m.name.endswith(MANIFEST)
        ]
        tar.extractall(raw_root, members=fresh, filter="data")
    return raw_root / labels.pop()


def run(
    config: dict[str, Any],
    out: Path,
    root: Path = ROOT,
    part_s: float | None = None,
    resume: Path | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """Measure the processes not yet measured, within `part_s`; 0 when the run is complete,
    EXIT_MORE_PARTS when processes remain (run the same command again)."""
    started, clock0 = time.time(), time.monotonic()
    part_s = config["kit"]["part_s"] if part_s is None else part_s
    label = config["run_label"]
    raw = root / "results" / "raw" / label
    if resume is not None:
        unpack(resume, raw.parent)
    manifest = store.read_json(raw / MANIFEST) if (raw / MANIFEST).exists() else {}
    manifest |= {"run_label": label, "config": config}
    manifest["schema_validated"] = store.can_validate()
    runs = jobs(config)
    left_over = [job for job in runs if not job.path(root, label).exists()]
    part = {"started_at": started, "seconds": 0.0, "processes": 0, "remaining": len(left_over)}
    manifest["parts"] = [*manifest.get("parts", []), part]
    archive = out / f"{label}.tar.gz"
    walls: dict[Cell, float] = {}
    for job in left_over:
        left = part_s - (time.monotonic() - clock0) - PACK_RESERVE_S
        if (walls.get(job.cell) or process_s(config, job)) > left:
            break
        budget = min(config["budget_s"], left)
        path = job.path(root, label)
        t0 = time.monotonic()
        args = parent.job_args(vars(job.cell), job.repeat, path, label, params(config, job, budget))
        if parent.main(args) != 0:
            raise RuntimeError(f"parent.py refused {job.cell} (a bad cell in the config)")
        walls[job.cell] = max(walls.get(job.cell, 0.0), time.monotonic() - t0)
        if budget < config["budget_s"] and store.read_json(path)["status"] == "timeout":
            path.unlink()  # cut short by this part, not by its own budget: measure it again
            break
        part["processes"] += 1
        part["remaining"] -= 1
        part["seconds"] = round(time.monotonic() - clock0, 1)
        manifest["versions"] = versions(raw)
        manifest["complete"] = part["remaining"] == 0
        pack(raw, archive, manifest)
    part["seconds"] = round(time.monotonic() - clock0, 1)
    manifest["complete"] = part["remaining"] == 0
    pack(raw, archive, manifest)
    say(
        f"part {len(manifest['parts'])}: {part['processes']} process(es) in "
        f"{part['seconds']:.0f} s; {part['remaining']} of {len(runs)} left; {archive}"
    )
    if part["remaining"]:
        say("not complete: run the same command again (it resumes)")
        return EXIT_MORE_PARTS
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_run.py", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="folder for the archive <run_label>.tar.gz")
    p.add_argument(
        "--config",
        type=Path,
        default=GPU_CONFIG,
        help="the grid, merged over config/config.yaml (default config/gpu.yaml)",
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
        print(
            f"{raw}: {len(layout.raw_files(raw))} measurements; now run\n"
            f"  python3 scripts/bootstrap.py run --configfile {args.config} "
            f"--config run_label={raw.name}"
        )
        return 0
    config = load_config(args.config)
    if args.dry_run:
        dry_run(config)
        return 0
    if args.out is None:
        p.error("--out is required (or --dry-run, --unpack)")
    return run(config, args.out, part_s=args.part_s, resume=args.resume)
