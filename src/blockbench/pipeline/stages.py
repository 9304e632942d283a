"""The workflow's stages as functions: what each Snakemake script calls, testable without it."""

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge import stopping, verdicts
from blockbench.judge.aggregate import cells, processes, unchanged_modules
from blockbench.judge.claim_rules import ClaimsFiles, Precision, claims_files, read_claims
from blockbench.judge.run_view import RunView, speedups
from blockbench.judge.studies import read_studies
from blockbench.pipeline import catalog_keep
from blockbench.present import claims_report, run_comparison, run_map, stops
from blockbench.records.layout import CELL, FIELDS, KIT_MANIFEST, PROCESS, Cell
from blockbench.records.store import read_json, write_json_atomic

READABLE = [
    *CELL,
    "jax_version",
    "device_model",
    "status",
    "phase",
    "median_s",
    "ci95_low_s",
    "ci95_high_s",
    "n",
    "processes",
    "process_spread",
    "loops",
    "stop",
    "cores",
    "blas_threads",
    "xla_threads",
    "reason",
    "warnings",
]


def write_table(df: pd.DataFrame, csv: Path, markdown: Path | None = None) -> None:
    """A table as CSV, and as Markdown where `markdown` is given."""
    csv.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv, index=False)
    if markdown is not None:
        markdown.write_text(df.to_markdown(index=False, floatfmt=".4g") + "\n")


def build_tables(
    raw: list[str],
    out: Any,
    labels: Mapping[str, str] | None = None,
    claims_file: ClaimsFiles = (),
) -> pd.DataFrame:
    """Processes (one row per worker process and phase, raw samples in the Parquet file),
    cells (CSV, Parquet, Markdown) and each cell's speedup over its workload's baseline.
    Claims are judged once, by the claims stage, which writes their parts' table. `labels`:
    the merged runs shown under a label of their own (directory -> label); `claims_file`:
    the run's catalogs, whose own workloads the records may name."""
    claims_files(claims_file)
    proc = processes((Path(p) for p in raw), labels)
    proc.to_parquet(out.processes, index=False)
    write_table(proc.drop(columns=["samples_s", "core_windows"]), Path(out.processes_csv))
    df = cells(proc)
    write_table(df, Path(out.csv))
    df.to_parquet(out.parquet, index=False)
    Path(out.md).write_text(df[READABLE].to_markdown(index=False, floatfmt=".4g") + "\n")
    write_table(speedups(df, proc), Path(out.speedups), Path(out.speedups_md))
    return df


def build_claims(
    measurements_file: str | Path,
    processes_file: str | Path,
    claims_file: ClaimsFiles,
    csv: str | Path,
    markdown: str | Path,
    rst: str | Path,
    parts_csv: str | Path,
    parts_parquet: str | Path,
    this_run: str = "",
    study_files: Sequence[str | Path] = (),
    decisions: Sequence[str | Path] = (),
    labels: Mapping[str, str] | None = None,
    only: Sequence[str] = (),
    map_files: Sequence[str | Path] = (),
    reference: str | Path | None = None,
) -> pd.DataFrame:
    """The one place claims are judged: verdicts as CSV, as the Markdown report and as the
    table the HTML report opens on, and every part of every claim (each run's own interval,
    the judged one, the pooled one) as the table the figures read. `claims_file`: the
    run's claims files, read in order (config `claims`); `decisions`: each run's rounds
    decision (blockbench.judge.stopping), which says why each part stopped; `labels`: the
    label a merged run's decision is shown under (its folder -> label); `only`: the claims
    the run judges (config `only`; none: every one). `map_files` (Markdown, CSV, the
    report's reStructuredText): this run beside the committed references of `reference`
    (blockbench.present.run_map; '' or None: none, blockbench was fetched from git)."""
    claim_list = read_claims(claims_file, only)
    df, proc = pd.read_parquet(measurements_file), pd.read_parquet(processes_file)
    table, parts = verdicts.judge(df, proc, claim_list, read_studies(study_files))
    table = run_comparison.with_other_runs(table)
    table, parts = stops.with_stops(table, parts, read_decisions(decisions, labels))
    write_table(table, Path(csv))
    write_table(parts, Path(parts_csv))
    parts.to_parquet(parts_parquet, index=False)
    docs = claims_report.docs_from(markdown)
    Path(markdown).write_text(claims_report.to_markdown(table, parts, claim_list, proc, docs))
    Path(rst).write_text(claims_report.to_rst(table, parts, first=this_run))
    if map_files:
        where = Path(reference) if reference else None
        run_map.write(table, parts, proc, this_run, where, *map_files)
    for r in table.itertuples():
        print(
            f"{r.run_label} {r.claim_id}: {r.verdict} "
            f"(measured {verdicts.value_ci(r.measured, r.ci_low, r.ci_high) or '-'}, "
            f"article {verdicts.fmt(r.article) or '-'})"
        )
    return table


def read_decisions(
    files: Sequence[str | Path], labels: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Rounds decisions by the run label they are shown under."""
    given = {Path(d).resolve(): label for d, label in (labels or {}).items()}
    out = {}
    for path in map(Path, files):
        decision = read_json(path)
        out[given.get(path.parent.resolve(), decision["run_label"])] = decision
    return out


def processes_of(
    proc: pd.DataFrame, cells: Collection[str] | None = None, since: float | None = None
) -> pd.DataFrame:
    """One row per worker process, of `cells` (Cell.key) only where given, and of those
    started at `since` or later where any was (a GPU kit's command: not the gap between
    two windows)."""
    jobs = proc.drop_duplicates(PROCESS)
    if cells is not None:
        keys = jobs[list(FIELDS)].apply(lambda named: Cell(*named).key, axis=1)
        jobs = jobs[keys.isin(set(cells))]
    if since is not None and (jobs["started_at"] >= since).any():
        jobs = jobs[jobs["started_at"] >= since]
    return jobs


def round_costs(jobs: pd.DataFrame) -> dict[str, float]:
    """Seconds one more process of each cell costs: its first-stage processes' (`jobs`, one
    row each) mean wall time, plus their mean gap between jobs (Snakemake's own job start)."""
    wall = jobs["finished_at"] - jobs["started_at"]
    span = float(jobs["finished_at"].max() - jobs["started_at"].min())
    gap = max(0.0, (span - float(wall.sum())) / len(jobs))
    keys = jobs[list(FIELDS)].apply(lambda named: Cell(*named).key, axis=1)
    return (wall.groupby(keys).mean() + gap).to_dict()


def decide_rounds(
    raw: list[str],
    claims_file: ClaimsFiles,
    study_files: Sequence[str | Path],
    units: Mapping[str, Mapping[str, Any]],
    run_label: str,
    precision: Precision,
    budget_minutes: float | None,
    out: str | Path,
    left_s: float | None = None,
    only: Sequence[str] = (),
    carried: bool = True,
    cost_cells: Collection[str] | None = None,
    cost_since: float | None = None,
) -> dict[str, Any]:
    """After a run's first stage: the rounds each unit takes and why each part stops
    (blockbench.judge.stopping), written atomically as the JSON the workflow reads back.
    `units`: name -> cells (device/workload/impl/size), first (rounds), most (max_rounds);
    `left_s`: the seconds left for added rounds where the caller knows them (the GPU kit's
    part), else `budget_minutes` less the first stage's span.

    A run the GPU kit measured carries the kit's decision, made where its GPU was and cut
    to what was measured: it is final, so judging it elsewhere never asks for GPU rounds
    (`carried`; the kit itself, deciding one part's blocks, passes False, with `cost_cells`
    and `cost_since`: the cells, and the start of the command, whose processes price a
    round). A unit `fixed` (an earlier part's block) is read as it stands, never added to."""
    kit = Path(out).parent / KIT_MANIFEST
    if carried and kit.exists() and "decision" in (final := read_json(kit)):
        write_json_atomic(Path(out), final["decision"])
        print(f"{run_label}: the GPU kit's decision, as measured ({kit})")
        return final["decision"]
    claim_list = read_claims(claims_file, only)  # first: its catalogs' workloads join
    proc = processes(Path(p) for p in raw)
    unchanged_modules(proc)
    catalog_keep.keep(claims_files(claims_file), only, Path(out).parent)
    view = RunView(cells(proc), proc, run_label, read_studies(study_files))
    jobs = processes_of(proc, cost_cells, cost_since)
    cost = round_costs(jobs)
    sized = {
        name: stopping.Unit(
            name,
            tuple(u["cells"]),
            int(u["first"]),
            int(u["most"]),
            sum(cost.get(c, 0.0) for c in u["cells"]),
            tuple(cost.get(c, 0.0) for c in u["cells"]),
            bool(u.get("fixed")),
        )
        for name, u in units.items()
    }
    spent = float(jobs["finished_at"].max() - jobs["started_at"].min())
    if left_s is None and budget_minutes is not None:
        left_s = budget_minutes * 60 - spent
    left = None if left_s is None else max(0.0, left_s)
    decision = stopping.decide(view, claim_list, sized, precision, left)
    decision["first_stage_s"] = spent
    write_json_atomic(Path(out), decision)
    for part in decision["parts"]:
        print(f"{part['claim_id']} {part['part']}: {part['stopped']} ({part['rounds']} rounds)")
    return decision
