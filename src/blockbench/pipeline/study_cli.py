"""`blockbench study`: each claim part's value in several runs of one grid on one kind of
machine, written as the between-run study the workflow reads (config/between_run/<kind>.yaml).

    blockbench study RUN_DIR[=LABEL] RUN_DIR[=LABEL] ...
        [--core-speed steady|two-speed] [--scope host|kind] [--later RUN_DIR[=LABEL] ...]
        [--out DIR] [--claims-out DIR]

Each RUN_DIR holds one run's raw JSON (`results/raw/<label>`, or a committed
`results/reference/<label>/raw`); `=LABEL` names a run whose files carry a label another run
shares (every default run is `local`). Runs made at different times (hours or days apart)
are what the study is for: runs minutes apart share the machine's state and understate the
spread (it says so where they span under study_build.MIN_SPAN_H hours). Every run must be
of one kind of machine and measured by one method (METHOD_VERSION). The study records whether the
host's cores kept their speed, from the runs' own readings (blockbench.measure.core_speed),
or from `--core-speed` (what `blockbench core-speed` said) for runs made before processes
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
import sys
from pathlib import Path

import pandas as pd

from blockbench.errors import InputError
from blockbench.judge import aggregate, verdicts
from blockbench.judge.claim import Claim
from blockbench.judge.claim_rules import read_claims
from blockbench.judge.studies import HOST, KIND, MIN_PROCESS_VALUES, Study, host_of, study_path
from blockbench.judge.study_build import (
    held_after,
    host_speed,
    started_at,
    study,
    too_close,
)
from blockbench.measure.core_speed import STEADY, TWO_SPEED
from blockbench.pipeline.stages import write_table
from blockbench.present.claims_report import docs_from, to_markdown
from blockbench.present.run_comparison import with_other_runs
from blockbench.records.layout import raw_files, run_dir

ROOT = Path(__file__).resolve().parents[3]  # the checkout whose config the study joins


def read_runs(entries: list[str]) -> pd.DataFrame:
    """The process table of runs given as DIR or DIR=LABEL."""
    dirs = [run_dir(entry) for entry in entries]
    labels = {str(d): label for d, label in dirs if label}
    return aggregate.processes((f for d, _ in dirs for f in raw_files(d)), labels)


def out_of_sample(found: Study, later: list[str], claims: list[Claim]) -> str:
    """How runs made after the study's span, on its host (or kind), held its mean."""
    after = read_runs(later)
    hosts = {host_of(g) for _, g in after.groupby("run_label")}
    if found.scope == HOST and hosts != {found.host}:
        raise InputError(f"the later runs were made on {hosts}, the study's on {found.host!r}")
    ends = max(r["started"] for r in found.runs)
    early = [label for label, began in started_at(after).items() if began <= ends]
    if early:
        raise InputError(f"runs {early} started within the study's span: not out of sample")
    return held_after(found, verdicts.judge(aggregate.cells(after), after, claims)[1])


def summary(path: Path, found: Study) -> list[str]:
    """What the study holds, and what would make it a better one (runs further apart, more
    runs where its process values are too few to see a rare slow mode)."""
    runs = len(found.runs)
    lines = [
        f"{path}: {len(found.parts)} parts from {runs} runs of {found.host or 'hosts'}",
        f"  span {found.span()}; out of sample: {found.out_of_sample or 'none yet'}",
    ]
    lines += [
        f"  {claim_id} {name}: S = {part.spread:.3g} over {part.runs} runs"
        for (claim_id, name), part in sorted(found.parts.items())
    ]
    if close := too_close(found.runs):
        lines.append(close)
    fewest = min((p.processes for p in found.parts.values()), default=0)
    if fewest and runs * fewest < MIN_PROCESS_VALUES:
        more = math.ceil(MIN_PROCESS_VALUES / fewest) - runs
        lines.append(
            f"{runs} runs x {fewest:g} processes is under {MIN_PROCESS_VALUES} process values: "
            f"on a host whose cores change speed it may hold no slow process; {more} run(s) more"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="blockbench study",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("raw", nargs="+", help="raw JSON directories, one per run: DIR or DIR=LABEL")
    p.add_argument(
        "--core-speed",
        choices=(STEADY, TWO_SPEED),
        help="what `blockbench core-speed` found, for runs without readings of their own",
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
    p.add_argument(
        "--claims",
        nargs="+",
        default=[ROOT / "config" / "claims" / "articles"],
        help="the catalogs (or claims files) the runs are judged on",
    )
    p.add_argument("--claims-out", type=Path, help="write the runs' claims, pooled, here")
    args = p.parse_args(argv)
    try:
        proc = read_runs(args.raw)
        cells = aggregate.cells(proc)
        claims = read_claims(args.claims)
        found = study(cells, proc, claims, host_speed(proc, args.core_speed), args.scope)
        if args.later:
            found.out_of_sample = out_of_sample(found, args.later, claims)
    except InputError as exc:  # a record, a claims entry or runs that make no study
        print(f"blockbench study: {exc}", file=sys.stderr)
        return 1
    path = study_path(args.out, found.kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(found.to_yaml())
    if args.claims_out:
        table, parts = verdicts.judge(cells, proc, claims, {found.kind: found})
        table = with_other_runs(table)
        args.claims_out.mkdir(parents=True, exist_ok=True)
        write_table(table, args.claims_out / "claims.csv")
        markdown = args.claims_out / "claims.md"
        markdown.write_text(to_markdown(table, parts, claims, docs=docs_from(markdown)))
    print(*summary(path, found), sep="\n")
    return 0
