"""The workflow's stages as functions: what each Snakemake script calls, testable without it."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge import verdicts, wording
from blockbench.judge.aggregate import CELL, cells, processes, speedups, write_table
from blockbench.judge.claim_rules import read_claims
from blockbench.judge.studies import read_studies
from blockbench.present import claims_report

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


def build_tables(raw: list[str], out: Any, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Processes (one row per worker process and phase, raw samples in the Parquet file),
    cells (CSV, Parquet, Markdown) and each cell's speedup over its workload's baseline.
    Claims are judged once, by the claims stage, which writes their parts' table. `labels`:
    the merged runs shown under a label of their own (directory -> label)."""
    proc = processes((Path(p) for p in raw), labels)
    proc.to_parquet(out.processes, index=False)
    write_table(proc.drop(columns=["samples_s", "core_windows"]), Path(out.processes_csv))
    df = cells(proc)
    write_table(df, Path(out.csv))
    df.to_parquet(out.parquet, index=False)
    Path(out.md).write_text(df[READABLE].to_markdown(index=False, floatfmt=".4g") + "\n")
    write_table(speedups(df), Path(out.speedups), Path(out.speedups_md))
    return df


def build_claims(
    measurements_file: str | Path,
    processes_file: str | Path,
    claims_file: str | Path,
    articles_file: str | Path,
    csv: str | Path,
    markdown: str | Path,
    rst: str | Path,
    parts_csv: str | Path,
    parts_parquet: str | Path,
    this_run: str = "",
    study_files: Sequence[str | Path] = (),
) -> pd.DataFrame:
    """The one place claims are judged: verdicts as CSV, as the Markdown report and as the
    table the HTML report opens on, and every part of every claim (each run's own interval,
    the judged one, the pooled one) as the table the figures read."""
    claim_list = read_claims(claims_file, articles_file)
    df, proc = pd.read_parquet(measurements_file), pd.read_parquet(processes_file)
    table, parts = verdicts.judge(df, proc, claim_list, read_studies(study_files))
    write_table(table, Path(csv))
    write_table(parts, Path(parts_csv))
    parts.to_parquet(parts_parquet, index=False)
    Path(markdown).write_text(claims_report.to_markdown(table, parts, claim_list))
    Path(rst).write_text(claims_report.to_rst(table, first=this_run))
    for r in table.itertuples():
        print(
            f"{r.run_label} {r.claim_id}: {r.verdict} "
            f"(measured {wording.value_ci(r.measured, r.ci_low, r.ci_high) or '-'}, "
            f"article {wording.fmt(r.article) or '-'})"
        )
    return table
