#!/usr/bin/env python3
"""Between-run variance of every claim part, from several runs of one grid on one kind of
machine, written where the workflow reads it (config/between_run/<kind>.yaml).

    .venv/bin/python benchmarks/between_run_study.py RUN_RAW_DIR RUN_RAW_DIR ... [--out DIR]
        [--claims-out DIR]

Each RUN_RAW_DIR holds one run's raw JSON (`results/raw/<label>`, or a committed
`results/reference/<label>/raw`), each run under its own run label. Runs made at different
times (hours or days apart) are what the study is for: runs minutes apart share the
machine's state and understate the variance. Every run must be of the same kind of machine.
`--claims-out DIR` also writes the runs' claims (claims.csv, claims.md) judged with the new
study and pooled into one estimate per claim.
"""

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge import aggregate, verdicts
from blockbench.judge.aggregate import write_table
from blockbench.judge.random_effects import reml
from blockbench.judge.scales import scaled
from blockbench.judge.studies import Study, kind_of, study_path
from blockbench.present.claims_report import to_markdown
from blockbench.records.layout import raw_files
from blockbench.run import stages

ROOT = Path(__file__).resolve().parents[1]


def study(cells: pd.DataFrame, proc: pd.DataFrame, claims: list[dict[str, Any]]) -> Study:
    kinds = {label: kind_of(g) for label, g in cells.groupby("run_label")}
    if len(kinds) < 2:
        sys.exit(f"a study needs at least 2 runs (run labels), got {sorted(kinds)}")
    if None in kinds.values() or len(set(kinds.values())) > 1:
        seen = {label: k.describe() if k else "unknown" for label, k in kinds.items()}
        sys.exit(f"the runs are not of one kind of machine: {seen}")
    parts = verdicts.judge(cells, proc, claims)[1]
    measured = parts[parts["run_ci_low"].notna() & parts["measured"].notna()]
    found = {}
    for (claim_id, name), rows in measured.groupby(["claim_id", "part"], sort=True):
        if rows["size"].nunique() != 1 or len(rows) < 2:
            continue  # measured at different sizes, or by one run: nothing to compare
        points = [
            scaled(r.measured, r.run_ci_low, r.run_ci_high, r.run_df, r.scale)
            for r in rows.itertuples()
        ]
        points = [p for p in points if p is not None and p[1] > 0]
        if len(points) >= 2:
            found[(claim_id, name)] = reml(*zip(*points, strict=True))
    runs = []
    for label, g in proc.groupby("run_label"):  # per process: when each started
        started = datetime.fromtimestamp(float(g["started_at"].min()), UTC)
        runs.append(
            {
                "label": str(label),
                "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "commit": str(g["git_commit"].iloc[0]),
            }
        )
    return Study(next(iter(kinds.values())), runs, found)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("raw", type=Path, nargs="+", help="raw JSON directories, one per run")
    p.add_argument("--out", type=Path, default=ROOT / "config" / "between_run")
    p.add_argument("--claims", type=Path, default=ROOT / "config" / "claims.yaml")
    p.add_argument("--articles", type=Path, default=ROOT / "config" / "articles.yaml")
    p.add_argument("--claims-out", type=Path, help="write the runs' claims, pooled, here")
    args = p.parse_args()
    proc = aggregate.processes(f for d in args.raw for f in raw_files(d))
    cells = aggregate.cells(proc)
    claims = stages.read_claims(args.claims, args.articles)
    found = study(cells, proc, claims)
    path = study_path(args.out, found.kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(found.to_yaml())
    if args.claims_out:
        table, parts = verdicts.judge(cells, proc, claims, {found.kind: found})
        args.claims_out.mkdir(parents=True, exist_ok=True)
        write_table(table, args.claims_out / "claims.csv")
        (args.claims_out / "claims.md").write_text(to_markdown(table, parts, claims))
    runs = len(found.runs)
    print(f"{path}: {len(found.parts)} parts from {runs} runs on {found.kind.describe()}")
    for (claim_id, name), b in sorted(found.parts.items()):
        print(f"  {claim_id} {name}: tau {b.tau:.3g} (df {b.df:.2g})")


if __name__ == "__main__":
    main()
