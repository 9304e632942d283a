"""The GPU kit: every cell the GPU claims need, measured on a GPU machine, one part a command.

It is for a machine without Snakemake or a package registry, that may limit how long one
command runs, and from which only a few files come back. It measures the run plan the
workflow would (blockbench.pipeline.run_plan: the same processes and settings) through the
workflow's own measuring function (parent.measure). A grid longer than one command is cut
into parts of whole blocks (blockbench.pipeline.kit_estimate.parts), the blocks that decide
claims first; each command measures one part:

1. the first minute (blockbench.pipeline.kit_first_minute): the GPU checked, a GPU and a CPU
   worker's start timed; a machine that fails any of it stops there, with one line naming
   the cause, before the grid;
2. the re-plan: the first stage left, estimated with the starts measured here, cut into
   parts; this command takes the first, and every process of the others is recorded left
   out for time (kit_archive.LEFT_OUT), so that no job at home measures it and the next
   part does;
3. the part's first stage (config `deciding_first`: the deciding blocks' rounds first), its
   rounds decision (blockbench.judge.stopping, the workflow's checkpoint) over its own
   blocks, sized to the time left, then the added rounds it asks for while time is left:
   a block's rounds all run on one machine. The decision, cut to what was measured and
   merged with the earlier parts', is final: it travels in the archive's manifest, and
   judging at home never asks for a GPU round that was not measured.

Every process's JSON is packed into one archive after it is written (blockbench.pipeline.
kit_archive); the command run again resumes from what exists (or from an archive, on a
fresh machine), and never measures again what a part finished. At home the archive unpacks
into results/raw/<run_label>/, where the workflow finds every process recorded and only
builds tables, figures and claims.
"""

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from blockbench.errors import InputError
from blockbench.measure import parent
from blockbench.pipeline import grid, kit_decision, kit_estimate, stages
from blockbench.pipeline.kit_archive import (
    LEFT_OUT,
    MANIFEST,
    left_out,
    pack,
    unpack,
    validated,
    versions,
)
from blockbench.pipeline.kit_config import (
    QUICK_CONFIG,
    ROOT,
    claims_files,
    load_config,
    run_plan,
)
from blockbench.pipeline.kit_first_minute import first_minute, gated
from blockbench.pipeline.run_plan import Job, RunPlan
from blockbench.records import layout, store
from blockbench.records.layout import Cell
from blockbench.records.spec import EXIT_WRONG_HOST

EXIT_NOT_READY = 1  # the first minute failed: nothing of the grid was measured
# Why a process has not been measured, for a reader of its record at home.
NOT_YET = f"{LEFT_OUT}: the GPU kit has not measured it yet; the same command run again does"
EXIT_MORE_PARTS = 75  # EX_TEMPFAIL: this part ended in time, blocks remain for the next


class Part:
    """One command's share of the run: its clock, its time model, what it measured, its
    manifest."""

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
        self.model: dict[str, Any] = kit_estimate.kit(config)["estimate"]
        self.walls: dict[Cell, float] = {}

    def begin(self, plan: RunPlan, undecided: list[str]) -> None:
        """Before anything is packed: the decision as it stands (none yet: an empty one),
        written where the workflow reads it, over any a command stopped while deciding left
        there; and every first-stage process of the undecided blocks without a record
        recorded left out. So the archive, from its first packing on, asks nothing at home
        that it does not hold."""
        self.write_decision(self.manifest.get("decision") or kit_decision.empty(self.label))
        self.leave_out(plan, undecided, NOT_YET)

    def undecided(self, plan: RunPlan) -> list[str]:
        """The blocks no part has decided yet (the manifest's decision lacks their cells)."""
        decided = set(self.manifest.get("decision", {}).get("rounds", {}))
        return [n for n in plan.units if not decided.issuperset(plan.units[n]["cells"])]

    def left(self) -> float:
        return self.part_s - (time.monotonic() - self.clock0) - kit_estimate.PACK_RESERVE_S

    def done(self, job: Job) -> bool:
        """Measured: its record exists and is not one left out for time."""
        path = self.root / job.path(self.label)
        return path.exists() and not left_out(path)

    def pack(self) -> float:
        """Pack the run's folder; the seconds it took (a cost every process pays)."""
        t0 = time.monotonic()
        self.row["seconds"] = round(t0 - self.clock0, 1)
        self.manifest["versions"] = versions(self.raw)
        pack(self.raw, self.archive, self.manifest)
        return time.monotonic() - t0

    def replan(
        self, plan: RunPlan, undecided: list[str], starts: dict[str, float]
    ) -> tuple[set[str], list[str]]:
        """The blocks this part measures, and lines to say: the first stage still to
        measure, estimated with the worker starts measured here (each with the archive's
        packing), cut into parts of whole blocks that fit the time left
        (kit_estimate.parts); this part takes the first, and each process of the others is
        recorded left out for time now, so that a window that closes early leaves nothing
        a job at home would measure. A block measured but not yet decided (a command that
        stopped in its added rounds) is decided in this part."""
        model = kit_estimate.kit(self.config)["estimate"]
        self.model = kit_estimate.with_starts(model, starts)
        todo = [j for j in plan.jobs() if plan.unit(j.cell) in undecided and not self.done(j)]
        cut = kit_estimate.parts(self.model, plan, todo, self.left())
        this = set(cut[0].blocks) if cut else set()
        this |= {n for n in undecided if all(plan.unit(j.cell) != n for j in todo)}
        here = ", ".join(f"{d.upper()} {s:.1f} s" for d, s in sorted(starts.items())) or "none"
        said = "model's" if not starts else "measured"
        whole = sum(p.seconds for p in cut)
        lines = [
            f"re-plan: worker starts measured here {here} (model "
            + ", ".join(f"{d.upper()} {s:g} s" for d, s in sorted(model["process_start_s"].items()))
            + f"); first stage left, {len(todo)} processes: {whole / 60:.1f} min with the "
            f"{said} starts, {sum(kit_estimate.seconds(model, plan, todo).values()) / 60:.1f} "
            f"min on the model; {self.left() / 60:.1f} min left"
        ]
        self.manifest["starts_s"] = {d: round(s, 3) for d, s in starts.items()}
        later = [n for p in cut[1:] for n in p.blocks]
        if later:
            lines.append(
                f"this part: {len(cut[0].blocks)} blocks ({cut[0].seconds / 60:.1f} min); "
                f"left out for time, for {len(cut) - 1} more part(s) "
                f"({whole / 60 - cut[0].seconds / 60:.1f} min): " + ", ".join(later)
            )
        self.leave_out(
            plan,
            later,
            f"{LEFT_OUT}: the GPU kit's part of {self.part_s:.0f} s held other blocks "
            f"({whole / 60:.1f} min of first stage were left, estimated with the worker "
            "starts measured there); the same command run again measures it",
            again=True,
        )
        return this, lines

    def leave_out(self, plan: RunPlan, names: list[str], reason: str, again: bool = False) -> None:
        """Record each first-stage process of the blocks `names` that has no record yet (or,
        `again`, only one left out, whose reason this replaces) as left out for time
        (`unavailable`, with the reason): no job at home measures it, and the next part does."""
        for job in (j for j in plan.jobs() if plan.unit(j.cell) in names):
            path = self.root / job.path(self.label)
            if not path.exists() or (again and left_out(path)):
                params = replace(plan.params(job), not_run=reason)
                parent.measure(job.cell, job.repeat, path, self.label, params)

    def measure(self, plan: RunPlan, jobs: list[Job]) -> int | None:
        """Measure `jobs` not yet measured while each block's round fits the time left (a
        round cut in two would pair processes of two machines); None when every one was,
        else the exit status that stops the part (0: out of time)."""
        todo = [j for j in jobs if not self.done(j)]

        def expected(job: Job) -> float:
            return self.walls.get(job.cell) or kit_estimate.process_s(
                self.model, job.cell, plan.params(job)
            )

        now = None
        for job in todo:
            params = plan.params(job)
            if (key := (plan.unit(job.cell), job.repeat)) != now:
                now = key
                round_s = sum(expected(j) for j in todo if (plan.unit(j.cell), j.repeat) == key)
                if round_s > self.left():
                    return 0
            if expected(job) > (left := self.left()):
                return 0
            path = self.root / job.path(self.label)
            t0 = time.monotonic()
            budget = min(params.budget_s, left)
            cut = replace(params, budget_s=budget)
            if (code := parent.measure(job.cell, job.repeat, path, self.label, cut)) != 0:
                return code
            if budget < params.budget_s and store.read_json(path)["status"] == "timeout":
                path.unlink()  # cut short by this part, not by its own budget: measure it again
                return 0
            self.row["processes"] += 1
            self.pack()
            self.walls[job.cell] = max(self.walls.get(job.cell, 0.0), time.monotonic() - t0)
        return None

    def decide(self, plan: RunPlan, names: set[str]) -> tuple[dict[str, Any], int | None]:
        """The rounds decision for this part's blocks (the workflow's checkpoint, sized to
        the time left), their added rounds while time is left, and the decision as measured
        merged with the earlier parts'; and the exit status that stopped the added rounds.

        It reads this part's first stage and every earlier part's processes: the blocks of
        earlier parts join as units fixed at their rounds, so a part that reads blocks of two
        parts (a trend's sizes) is sized with all of them, and rounds go to this part's
        alone. A round's cost is priced from this part's processes, measured in one window."""
        earlier = self.manifest.get("decision") or {}
        before = earlier.get("rounds", {})
        units = {n: plan.units[n] for n in sorted(names)}
        for name, unit in plan.units.items():
            if name not in names and set(unit["cells"]) <= before.keys():
                rounds = max(before[k] for k in unit["cells"])
                units[name] = unit | {"first": rounds, "most": rounds, "fixed": True}
        mine = [k for n in names for k in plan.units[n]["cells"]]
        decision = stages.decide_rounds(
            raw=[str(self.root / j.path(self.label)) for j in plan.jobs(before)],
            claims_file=claims_files(self.config),
            study_files=layout.study_files(ROOT / self.config["between_run"]),
            units=units,
            run_label=self.label,
            precision=grid.precision(self.config),
            budget_minutes=None,
            out=self.raw / Path(layout.DECISION).name,
            left_s=self.left(),
            carried=False,
            cost_cells=mine,
            cost_since=self.row["started_at"],
        )
        decision, reads = kit_decision.own(decision, names), kit_decision.reading(plan, names)
        # final once made: packed at once, as measured, so that a window closing in the
        # added rounds loses only them, and judging at home never asks for one
        self.write_decision(
            kit_decision.merged(earlier, kit_decision.as_measured(decision, self.done), reads)
        )
        self.pack()
        asked = decision.get("asked", decision["rounds"])
        stopped = self.measure(plan, [j for j in plan.jobs(asked) if plan.unit(j.cell) in names])
        self.write_decision(
            kit_decision.merged(earlier, kit_decision.as_measured(decision, self.done), reads)
        )
        return self.manifest["decision"], stopped

    def write_decision(self, decision: dict[str, Any]) -> None:
        """The run's rounds decision as measured, where the workflow's checkpoint and the
        manifest read it; its blocks are decided, and the next part goes on with the rest."""
        store.write_json_atomic(self.raw / Path(layout.DECISION).name, decision)
        self.manifest["decision"] = decision


def run(
    config: dict[str, Any],
    out: Path,
    root: Path = ROOT,
    part_s: float | None = None,
    resume: Path | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """One part within `part_s`: the first minute, the first stage of the blocks that fit
    (the others left out for time, for the next part), their rounds decision and added
    rounds. 0: every block is measured and decided (added rounds may have been cut by time,
    and the decision says so); EXIT_MORE_PARTS: blocks remain (run the same command again);
    EXIT_NOT_READY: the GPU failed its first minute."""
    plan = run_plan(config)
    if resume is not None:
        unpack(resume, root / "results" / "raw")
    part_s = kit_estimate.kit(config)["part_s"] if part_s is None else part_s
    part = Part(config, root, out, part_s)
    undecided = part.undecided(plan)
    starts: dict[str, float] = {}
    checks = gated(config, plan) and undecided
    if checks:
        minute = first_minute(config, part.raw, say)
        if minute.failed is not None:
            say(minute.failed)
            return EXIT_NOT_READY
    if undecided:
        part.begin(plan, undecided)
    if checks:
        # each process also packs the archive: time one packing, and count it in each start
        packing = part.pack()
        starts = {d: s + packing for d, s in minute.starts.items()}
    this, lines = part.replan(plan, undecided, starts) if undecided else (set(), [])
    for line in lines:
        say(line)
    part.manifest["order"] = kit_estimate.unit_order(plan)
    say("blocks in the order measured: " + ", ".join(part.manifest["order"]))
    part.pack()  # the records left out, before any process: a window may close during one
    stopped = part.measure(plan, [j for j in plan.jobs() if plan.unit(j.cell) in this])
    added = 0
    if stopped is None and this:
        decision, stopped = part.decide(plan, this)
        mine = {k for n in this for k in plan.units[n]["cells"]}
        added = sum(decision["asked"][k] - decision["rounds"][k] for k in mine)
    remaining = part.undecided(plan)
    part.leave_out(plan, remaining, NOT_YET)  # a process cut short by the part's end
    part.manifest["left_out"] = {n: plan.units[n]["cells"] for n in remaining}
    part.row["remaining"] = sum(not part.done(j) for j in plan.jobs())
    part.manifest["complete"] = not remaining
    part.pack()
    if stopped == EXIT_WRONG_HOST:
        say("stopped: this machine is not the kind the run began on (the line above)")
        return EXIT_WRONG_HOST
    if stopped not in (None, 0):
        raise RuntimeError(f"parent.py refused a cell ({stopped}): a bad cell in the config")
    say(
        f"part {len(part.manifest['parts'])}: {part.row['processes']} process(es) in "
        f"{part.row['seconds']:.0f} s; {part.row['remaining']} of the first stage's "
        f"{len(plan.jobs())} left, in {len(remaining)} block(s); {part.archive}"
        + (f"; {added} added round(s) cut by time" if added else "")
    )
    if remaining:
        say(
            "not complete: run the same command again (it resumes; on a fresh machine, "
            f"--resume {part.archive})"
        )
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
    try:
        if args.unpack:
            return unpacked(args.unpack, args.config)
        config = load_config(args.config)
        if args.dry_run:
            kit_estimate.dry_run(config, plan := run_plan(config), gated(config, plan))
            return 0
        if args.out is None:
            p.error("--out is required (or --dry-run, --unpack)")
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / f"{config['run_label']}.log").open("a") as log:
            sys.stdout, sys.stderr = Tee(sys.stdout, log), Tee(sys.stderr, log)
            try:
                return run(config, args.out, part_s=args.part_s, resume=args.resume)
            finally:
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    except (InputError, grid.ConfigError) as exc:
        print(exc, file=sys.stderr)
        return 2


class Tee:
    """A stream that writes to the terminal and to the log in the output folder, flushed at
    once: a window that ends without warning keeps every line said before it."""

    def __init__(self, stream: TextIO, log: TextIO) -> None:
        self.streams = (stream, log)

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
            stream.flush()
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def unpacked(archive: Path, config_file: Path) -> int:
    """At home: the archive into results/raw/<run_label>/, every record validated, and the
    command that judges it."""
    raw = unpack(archive, ROOT / "results" / "raw")
    count = validated(raw)
    config = config_file.relative_to(ROOT) if config_file.is_relative_to(ROOT) else config_file
    print(
        f"{raw}: {count} measurements, each valid against the schema; judge them here (no GPU, "
        f"no CUDA environment) with\n  python3 scripts/bootstrap.py run --configfile {config} "
        f"--config run_label={raw.name} check_gpu=false"
    )
    return 0
