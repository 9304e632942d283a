"""`blockbench claims`: each catalog's claims, what each needs, and its time here.

A researcher choosing what to run reads, per claim, the devices and sizes its parts read in
this config's grid and how long the first stage of those cells takes: from this machine's
own earlier processes where results/raw holds some (their timelines, start to exit), else
from the committed reference of today's method (named), else from a stated model (MODEL),
said as such. A cell two claims read is counted in each.
"""

import argparse
import statistics
from collections.abc import Iterable
from pathlib import Path

from blockbench.judge import claim_rules
from blockbench.judge.claim import Claim
from blockbench.measure import provenance
from blockbench.pipeline import kit_config, kit_estimate
from blockbench.pipeline.kit_estimate import MODEL
from blockbench.pipeline.run_plan import Job, RunPlan
from blockbench.present.front_page import kinds
from blockbench.records.layout import Cell, raw_files
from blockbench.records.store import read_json

Walls = dict[Cell, list[float]]


def walls(roots: Iterable[Path], cpu_model: str | None = None) -> Walls:
    """Each cell's processes' wall seconds, job start to worker exit, from the records under
    `roots` (only those measured on `cpu_model`, where given)."""
    out: Walls = {}
    for root in roots:
        for path in raw_files(root):
            record = read_json(path)
            when = record.get("timeline", {})
            # where provenance.host() keeps it (the schema requires it there)
            if cpu_model and record["provenance"]["host"]["cpu_model"] != cpu_model:
                continue
            if "job_start" in when and "worker_exit" in when:
                cell = Cell.from_dict(record["cell"])
                out.setdefault(cell, []).append(when["worker_exit"] - when["job_start"])
    return out


def cells_read(plan: RunPlan, claim: Claim) -> set[Cell]:
    """The plan's cells a claim's parts read: a part at one size reads its cells there, or at
    the largest size the plan holds all of them (as the judge chooses); a trend or growth
    reads every size the plan holds all of them at."""
    out: set[Cell] = set()
    for part in claim.parts:
        named = {t.cell for t in part.terms}
        sizes = [{c.size for c in plan.cells if (c.device, c.workload, c.impl) == n} for n in named]
        common = set.intersection(*sizes) if sizes else set()
        if not part.fitted and common:
            common = {part.size} if part.size in common else {max(common)}
        out |= {Cell(*n, s) for n in named for s in common}
    return out


def line(claim: Claim, plan: RunPlan, here: Walls, reference: Walls) -> str:
    """One claim: devices, cells, and the first stage's seconds with where they come from."""
    named = claim.devices
    absent = sorted(named - set(plan.config["devices"]))
    head = f"{claim.id} {claim.slug}: devices {', '.join(sorted(named))}"
    head += f" ({', '.join(absent)} not in this config)" if absent else ""
    cells = sorted(cells_read(plan, claim))
    if not cells:
        return f"{head}; no cell in this config's grid"
    sizes: dict[str, list[str]] = {}
    for c in cells:
        sizes.setdefault(f"{c.device}/{c.workload}/{c.impl}", []).append(str(c.size))
    shown = "; ".join(f"{k} at {', '.join(v)}" for k, v in sizes.items())
    seconds, mine, theirs = 0.0, 0, 0
    for cell in cells:
        measured = here.get(cell) or reference.get(cell)
        if measured:
            mine, theirs = (mine + 1, theirs) if cell in here else (mine, theirs + 1)
            seconds += plan.first[cell] * statistics.median(measured)
        else:
            jobs = [Job(cell, r) for r in range(plan.first[cell])]
            seconds += sum(kit_estimate.process_s(MODEL, cell, plan.params(j)) for j in jobs)
    counts = {"measured here": mine, "from the reference": theirs}
    counts[f"from {MODEL['machine']} (never measured)"] = len(cells) - mine - theirs
    where = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
    time = f"first stage ~{seconds:.0f} s (cells: {where})"
    return f"{head}\n    {shown}\n    {time}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="blockbench claims", description=__doc__.splitlines()[0])
    p.add_argument("--configfile", type=Path, default=kit_config.BASE_CONFIG)
    p.add_argument("--raw", type=Path, default=Path("results/raw"), help="earlier runs here")
    p.add_argument("--reference", type=Path, default=kit_config.ROOT / "results/reference")
    args = p.parse_args(argv)
    config = kit_config.load_config(args.configfile)
    plan = kit_config.run_plan(config)
    here = walls(args.raw.glob("*"), provenance.cpu_model()) if args.raw.is_dir() else {}
    today = kinds(args.reference) if args.reference.is_dir() else []
    reference = walls([*(today[0] / "run/raw").glob("*")]) if today else {}
    if today:
        print(f"the reference: {today[0].name} (results/reference/{today[0].name}/README.md)")
    for path in kit_config.claims_files(config):
        listed = claim_rules.read_claims(path)
        shown = path.relative_to(kit_config.ROOT) if path.is_relative_to(kit_config.ROOT) else path
        print(f"\ncatalog {claim_rules.catalog_name(path)} ({shown}): {len(listed)} claims")
        for claim in listed:
            print("  " + line(claim, plan, here, reference))
    return 0
