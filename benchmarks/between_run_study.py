#!/usr/bin/env python3
"""Each claim part's value in several runs of one grid on one kind of machine: the
between-run study the workflow reads (config/between_run/<kind>.yaml).

    .venv/bin/python benchmarks/between_run_study.py RUN_DIR[=LABEL] RUN_DIR[=LABEL] ...
        [--core-speed steady|two-speed] [--scope host|kind] [--later RUN_DIR[=LABEL] ...]
        [--out DIR] [--claims-out DIR]

Each RUN_DIR holds one run's raw JSON (`results/raw/<label>`, or a committed
`results/reference/<label>/raw`); `=LABEL` names a run whose files carry a label another run
shares (every default run is `local`). Runs made at different times (hours or days apart)
are what the study is for: runs minutes apart share the machine's state and understate the
spread (it says so where they span under MIN_SPAN_H hours). Every run must be of one kind
of machine and measured by one method (METHOD_VERSION). The study records whether the
host's cores kept their speed, from the runs' own readings (blockbench.measure.core_speed),
or from `--core-speed` (what `benchmarks/core_speed.py` said) for runs made before processes
read it: a study made where cores change speed is not the noise of a host whose cores keep
theirs.
A study is of one host (its `host_id` and CPU signature) over the span its runs cover, and
applies to later runs of that host; `--scope kind` (the user's say, for the nodes of one
cluster partition) applies it to every host of the kind. `--later` judges runs made after
the study's span with it and records how often their intervals held the study's mean: its
out-of-sample coverage, which claims.md quotes beside it ("none yet" until there are some;
leave-one-out inside the study is not out of sample).
A study needs 15 process values per part (runs x processes) to see a rare slow mode; this
says how many runs more it needs. `--claims-out DIR` also writes the runs' claims judged
with the new study and pooled.
"""

import argparse
import math
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.errors import InputError
from blockbench.judge import aggregate, verdicts
from blockbench.judge.aggregate import write_table
from blockbench.judge.between_runs import StudyPart, judged
from blockbench.judge.run_view import core_speed_of
from blockbench.judge.scales import on_scale
from blockbench.judge.studies import (
    HOST,
    KIND,
    MIN_PROCESS_VALUES,
    Study,
    blas_of,
    design_of,
    host_of,
    kind_of,
    study_path,
)
from blockbench.judge.uncertainty import Spread
from blockbench.measure.core_speed import STEADY, TWO_SPEED, UNKNOWN
from blockbench.present.claims_report import to_markdown
from blockbench.records.layout import raw_files, run_dir
from blockbench.run import stages

ROOT = Path(__file__).resolve().parents[1]
# Runs closer together than this share the machine's state: six runs made within one hour on
# the 2-core AMD EPYC VM set C1's term at x1.03, and a run three hours later fell outside it
# (docs/studies.md, method version 9).
MIN_SPAN_H = 4.0


def host_speed(proc: pd.DataFrame, given: str | None) -> str:
    """What the runs' own core-speed readings say of the host (two speeds if any run saw
    them), or, for runs made before processes read it, what `--core-speed` says."""
    seen = {core_speed_of(g) for _, g in proc.groupby("run_label")} - {UNKNOWN}
    if not seen:
        if given is None:
            sys.exit("the runs hold no core-speed readings: say what core_speed.py found")
        return given
    return TWO_SPEED if TWO_SPEED in seen else STEADY


def read_runs(entries: list[str]) -> pd.DataFrame:
    """The process table of runs given as DIR or DIR=LABEL; a clear exit on a bad record."""
    dirs = [run_dir(entry) for entry in entries]
    labels = {str(d): label for d, label in dirs if label}
    try:
        return aggregate.processes((f for d, _ in dirs for f in raw_files(d)), labels)
    except InputError as exc:
        sys.exit(str(exc))


def started_at(proc: pd.DataFrame) -> dict[str, str]:
    """When each run (label) started: its first process, in UTC, as Study.runs records it."""
    return {
        str(label): datetime.fromtimestamp(float(g["started_at"].min()), UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        for label, g in proc.groupby("run_label")
    }


def study(
    cells: pd.DataFrame,
    proc: pd.DataFrame,
    claims: list[dict[str, Any]],
    core_speed: str,
    scope: str = HOST,
) -> Study:
    kinds = {label: kind_of(g) for label, g in cells.groupby("run_label")}
    if len(kinds) < 2:
        sys.exit(f"a study needs at least 2 runs (run labels), got {sorted(kinds)}")
    if None in kinds.values() or len(set(kinds.values())) > 1:
        seen = {label: k.describe() if k else "unknown" for label, k in kinds.items()}
        sys.exit(f"the runs are not of one kind of machine: {seen}")
    parts = verdicts.judge(cells, proc, claims)[1]
    measured = parts[parts["run_spread"].notna() & parts["measured"].notna()]
    found = {}
    for (claim_id, name), rows in measured.groupby(["claim_id", "part"], sort=True):
        if rows["size"].nunique() != 1 or len(rows) < 2:
            continue  # measured at different sizes, or by one run: nothing to compare
        values = tuple(on_scale(r.measured, r.scale) for r in rows.itertuples())
        processes = float(statistics.median(rows["processes"]))
        found[(claim_id, name)] = StudyPart(values, processes)
    began = started_at(proc)
    runs = [
        {"label": str(label), "started": began[str(label)], "commit": str(g["git_commit"].iloc[0])}
        for label, g in proc.groupby("run_label")
    ]
    methods = sorted({int(m) for m in proc["method_version"]})
    if len(methods) > 1:
        sys.exit(f"the runs were measured by several methods (versions {methods}): study one")
    designs = {label: design_of(g) for label, g in proc.groupby("run_label")}
    if len(set(designs.values())) > 1:
        sys.exit(
            "the runs were measured under different stopping rules, so their values are not "
            f"of one design: {designs} (study runs of one config)"
        )
    kernels = {label: blas_of(g) for label, g in proc.groupby("run_label")}
    if len(set(kernels.values())) > 1:
        sys.exit(
            "NumPy's BLAS ran different kernels in the runs, so NumPy's times are not of one "
            f"setup: {kernels} (docs/measuring-traps.md)"
        )
    hosts = {label: host_of(g) for label, g in proc.groupby("run_label")}
    if scope == HOST and (len(set(hosts.values())) > 1 or "" in hosts.values()):
        sys.exit(
            f"a study is of one host, and these runs name {hosts} ('': not recorded): study "
            "one host's runs, or say --scope kind to apply it to every host of the kind"
        )
    kind = next(iter(kinds.values()))
    design, blas = next(iter(designs.values())), next(iter(kernels.values()))
    host = "; ".join(sorted(set(hosts.values())))
    return Study(
        kind,
        runs,
        found,
        method=methods[0],
        core_speed=core_speed,
        design=design,
        blas=blas,
        host=host,
        scope=scope,
    )


def held_after(found: Study, parts: pd.DataFrame) -> str:
    """'held 73 of 84 parts in 6 runs made after it': how often runs made after the study's
    span, each part judged with the study (between_runs.judged, as the claims stage does),
    held the study's mean of that part: its out-of-sample coverage ('' where none could be
    judged)."""
    measured = parts[parts["run_spread"].notna() & parts["measured"].notna()]
    held = checked = 0
    for row in measured.itertuples():
        stored = found.part(row.claim_id, row.part)
        if stored is None or stored.runs < 2:
            continue
        own = Spread.from_text(on_scale(row.measured, row.scale), row.run_spread)
        low, high = judged(own, row.processes, stored)
        checked += 1
        held += low <= statistics.fmean(stored.values) <= high
    runs = measured["run_label"].nunique()
    return f"held {held} of {checked} parts in {runs} runs made after it" if checked else ""


def too_close(runs: list[dict[str, Any]]) -> str:
    """'' where the runs (as Study.runs records them) span MIN_SPAN_H hours or more, else a
    line saying how long they span: such a study understates the spread a later run meets."""
    started = sorted(datetime.strptime(r["started"], "%Y-%m-%dT%H:%M:%SZ") for r in runs)
    minutes = (started[-1] - started[0]).total_seconds() / 60
    if minutes >= MIN_SPAN_H * 60:
        return ""
    return (
        f"the runs span {minutes:.0f} minutes: runs closer than {MIN_SPAN_H:g} hours share the "
        "machine's state and understate the spread; add runs made hours or days apart"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("raw", nargs="+", help="raw JSON directories, one per run: DIR or DIR=LABEL")
    p.add_argument(
        "--core-speed",
        choices=(STEADY, TWO_SPEED),
        help="what benchmarks/core_speed.py found, for runs without readings of their own",
    )
    p.add_argument(
        "--scope",
        choices=(HOST, KIND),
        default=HOST,
        help="apply the study to its own host (default), or to every host of its kind",
    )
    p.add_argument(
        "--later",
        nargs="+",
        default=[],
        help="runs made after the study's span, DIR or DIR=LABEL: its out-of-sample coverage",
    )
    p.add_argument("--out", type=Path, default=ROOT / "config" / "between_run")
    p.add_argument("--claims", type=Path, default=ROOT / "config" / "claims.yaml")
    p.add_argument("--articles", type=Path, default=ROOT / "config" / "articles.yaml")
    p.add_argument("--claims-out", type=Path, help="write the runs' claims, pooled, here")
    args = p.parse_args()
    proc = read_runs(args.raw)
    cells = aggregate.cells(proc)
    claims = stages.read_claims(args.claims, args.articles)
    found = study(cells, proc, claims, host_speed(proc, args.core_speed), args.scope)
    if args.later:
        after = read_runs(args.later)
        hosts = {host_of(g) for _, g in after.groupby("run_label")}
        if args.scope == HOST and hosts != {found.host}:
            sys.exit(f"the later runs were made on {hosts}, the study's on {found.host!r}")
        ends = max(r["started"] for r in found.runs)
        early = [label for label, started in started_at(after).items() if started <= ends]
        if early:
            sys.exit(f"runs {early} started within the study's span: not out of sample")
        later_parts = verdicts.judge(aggregate.cells(after), after, claims)[1]
        found.out_of_sample = held_after(found, later_parts)
    path = study_path(args.out, found.kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(found.to_yaml())
    if args.claims_out:
        table, parts = verdicts.judge(cells, proc, claims, {found.kind: found})
        args.claims_out.mkdir(parents=True, exist_ok=True)
        write_table(table, args.claims_out / "claims.csv")
        (args.claims_out / "claims.md").write_text(to_markdown(table, parts, claims))
    runs = len(found.runs)
    print(f"{path}: {len(found.parts)} parts from {runs} runs of {found.host or 'hosts'}")
    print(f"  span {found.span()}; out of sample: {found.out_of_sample or 'none yet'}")
    for (claim_id, name), part in sorted(found.parts.items()):
        print(f"  {claim_id} {name}: S = {part.spread:.3g} over {part.runs} runs")
    if close := too_close(found.runs):
        print(close)
    fewest = min((p.processes for p in found.parts.values()), default=0)
    if fewest and runs * fewest < MIN_PROCESS_VALUES:
        more = math.ceil(MIN_PROCESS_VALUES / fewest) - runs
        print(
            f"{runs} runs x {fewest:g} processes is under {MIN_PROCESS_VALUES} process values: "
            f"on a host whose cores change speed it may hold no slow process; {more} run(s) more"
        )


if __name__ == "__main__":
    main()
