"""This run beside the committed references: the README's verdict map (front_page) with the
run as its first column, which the claims stage writes as results/verdict_map.md, .csv and
.rst (the report's copy).

A reader's first question after a run is whether their machine agrees with the machines the
README shows, so the map is made by the README's own code from the same committed folders.
The references are results/reference of the checkout blockbench is read from; a package
fetched from git has none, and the map then shows the run alone and says so. A rebuilt
reference is its own records: shown once, as this run (`references`).
"""

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.present import front_page
from blockbench.present.verdict_tables import EMPTY, rst_table
from blockbench.records.layout import FIELDS
from blockbench.records.store import write_bytes_atomic

THIS_RUN = "this run"  # the first column's `kind` in the CSV
JUDGED = "this checkout"  # the claims stage judging the run is this package's code
# Why a run has no references where blockbench's package was fetched from git: the fetch
# takes src/blockbench/ and its lock alone (workflow/rules/package.smk).
FETCHED = (
    "blockbench's package was fetched from git (a module read from a git host), which"
    " brings none of its committed references"
)
INTRO = (
    "The README's verdict map with this run first. Each row is a claim; each column a run:"
    " this one, then each committed reference at one setup. A cell: the verdict and the"
    " value of the part it rests on with its 95% interval (the part named where there are"
    " several); `at 5000` a size not the article's, never decisive. Every part: `claims.md`;"
    " as a table: `verdict_map.csv`."
)


@dataclass(frozen=True, eq=False)
class Run:
    """This run as the map's first column: its label, the facts of its raw records
    (front_page.raw_facts) and the claims stage's claims and parts tables of it."""

    label: str
    facts: dict[str, Any]
    claims: pd.DataFrame
    parts: pd.DataFrame


def raw_of(processes: pd.DataFrame, label: str) -> Path:
    """The raw folder the tables stage read run `label` from: its records' own, whatever
    folder the run was measured or rebuilt in."""
    source = processes.loc[processes["run_label"] == label, "source"].iloc[0]
    return Path(source).parents[len(FIELDS)]


def this_run(
    claims: pd.DataFrame, parts: pd.DataFrame, processes: pd.DataFrame, label: str = ""
) -> Run:
    """The run labelled `label` of the claims stage's tables (a label they lack: their
    first), without the runs merged with it."""
    labels = sorted(claims["run_label"].astype(str).unique())
    label = label if label in labels else labels[0]
    return Run(
        label,
        front_page.raw_facts(raw_of(processes, label)),
        claims[claims["run_label"] == label],
        parts[parts["run_label"] == label],
    )


def machine(facts: dict[str, Any]) -> str:
    """`Intel Xeon Processor, 2 CPUs (...) + NVIDIA H200`: the machine a run measured on."""
    return facts["cpu"] + "".join(f" + {g}" for g in facts["gpus"])


@dataclass(frozen=True)
class Beside:
    """The reference columns a run is set beside, what the page says of them (where they
    come from, what was left out), and the committed runs that are this run."""

    columns: list[front_page.Column]
    said: list[str]
    rebuilt: list[str]


def references(reference: Path | None, facts: dict[str, Any]) -> Beside:
    """The references beside a run of `facts` (front_page.raw_facts). A committed run with
    the run's own records (a reference rebuilt: `blockbench regenerate`) is this run: it
    leaves its column, which keeps its other catalogs' runs; a column left with none goes."""
    if reference is None:
        return Beside([], [f"No references beside this run: {FETCHED}."], [])
    found = front_page.columns(reference) if reference.is_dir() else []
    if not found:
        return Beside([], [f"No references beside this run: `{reference}` holds none."], [])
    kept, said, rebuilt = [], [f"The references: `{reference}`."], []
    for c in found:
        runs = tuple(r for r in c.runs if front_page.run_facts(r) != facts)
        for r in sorted(set(c.runs) - set(runs)):
            rebuilt.append(r.relative_to(reference).as_posix())
            said.append(
                f"This run is the committed `{rebuilt[-1]}` (its records): shown once, as"
                f" this run; the column `{c.kind.name}`, {c.setup},"
                f" {'keeps its other runs' if runs else 'is left out'}."
            )
        if runs:
            kept.append(replace(c, runs=runs))
    return Beside(kept, said, rebuilt)


def run_head(run: Run, beside: Beside) -> str:
    """The run's column head, as a reference's: the run, its machine and JAX release (a
    verdict may change with either), its catalogs with the method, commit and date that
    measured them; the references of the same machine, and
    the committed run it is, if one."""
    f = run.facts
    catalogs = run.claims.get("catalog", pd.Series([front_page.FIRST_CATALOG]))
    same = [f"`{c.kind.name}`" for c in beside.columns if machine(c.facts) == machine(f)]
    return (
        f"{THIS_RUN} `{run.label}`<br>{machine(f)}<br>JAX {f['jax']}"
        f"<br>{', '.join(dict.fromkeys(catalogs))}:"
        f" method {f['method']} · {f['commit']} · {f['date']}"
        + (f"<br>the machine of {', '.join(dict.fromkeys(same))}" if same else "")
        + "".join(f"<br>the committed `{r}`" for r in beside.rebuilt)
    )


def run_map(run: Run, beside: Beside, root: Path) -> tuple[list[list[str]], pd.DataFrame]:
    """The map's cells (links relative to `root`, the page's folder), and one CSV row per
    (column, claim): the README's CSV with each row's machine."""
    cols = beside.columns
    cells = front_page.map_cells(
        [run_head(run, beside), *(front_page.head(c, root) for c in cols)],
        [run.claims, *(front_page.claims_of(c) for c in cols)],
        [run.parts, *(front_page.claims_of(c, "claim_parts.csv") for c in cols)],
    )
    rows = [
        {
            "kind": THIS_RUN,
            "setup": "",
            **front_page.claim_row(r, run.facts, JUDGED),
            "machine": machine(run.facts),
        }
        for r in run.claims.itertuples()
    ]
    rows += [
        {
            "kind": c.kind.name,
            "setup": c.setup,
            **front_page.claim_row(r, front_page.run_facts(p), front_page.judged_by(p)),
            "machine": machine(front_page.run_facts(p)),
        }
        for c in cols
        for p in c.runs
        for r in front_page.claims_table(p).itertuples()
    ]
    return cells, pd.DataFrame(rows)


def markdown(cells: list[list[str]], said: list[str]) -> str:
    """The page: what the map is, where its references come from, the map."""
    head, *body = cells
    rows = [head, ["---"] * len(head), *body]
    table = ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]
    return "\n".join(["# This run beside the references", "", INTRO, "", *said, "", *table, ""])


LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def rst_line(text: str) -> str:
    """One line of a Markdown cell in reStructuredText: a link as its text, code as a
    literal, every other character reStructuredText reads as markup escaped."""
    pieces = LINK.sub(r"\1", text).split("`")
    return "".join(
        f"``{p}``" if i % 2 else re.sub(r"([\\*_|])", r"\\\1", p) for i, p in enumerate(pieces)
    )


def rst_cell(text: str) -> str:
    """A Markdown cell in a reStructuredText list-table: its `<br>` lines as a line block."""
    lines = [rst_line(t) for t in str(text).split("<br>")]
    if len(lines) == 1:
        return lines[0] or EMPTY
    return "\n       ".join(f"| {line}" for line in lines)


def rst(cells: list[list[str]], said: list[str]) -> str:
    """The report's copy (workflow/report/workflow.rst includes it): the notes, the map."""
    notes = [rst_line(s) for s in said]
    return "\n\n".join([*notes, "\n".join(rst_table([[rst_cell(c) for c in r] for r in cells]))])


def write(
    claims: pd.DataFrame,
    parts: pd.DataFrame,
    processes: pd.DataFrame,
    label: str,
    reference: Path | None,
    md: str | Path,
    csv: str | Path,
    rst_file: str | Path,
) -> pd.DataFrame:
    """The claims stage's map of run `label` beside `reference` (None: blockbench was
    fetched from git, and the run is alone): the page, its CSV and the report's copy."""
    run = this_run(claims, parts, processes, label)
    beside = references(reference, run.facts)
    cells, table = run_map(run, beside, Path(os.path.abspath(Path(md).parent)))
    for path, text in (
        (md, markdown(cells, beside.said)),
        (csv, table.to_csv(index=False, float_format="%.6g")),
        (rst_file, rst(cells, beside.said) + "\n"),
    ):
        write_bytes_atomic(Path(path), text.encode())
    return table


def figure_parts(
    parts: pd.DataFrame, processes: pd.DataFrame, reference: Path | None, label: str = ""
) -> dict[str, pd.DataFrame]:
    """What present/map_figure.py draws: each machine's claim parts by its name in the
    legend, this run first, then each reference column the map shows beside it."""
    run = this_run(parts, parts, processes, label)
    cols = references(reference, run.facts).columns
    return {
        f"{THIS_RUN} {run.label}: {machine(run.facts)}": run.parts,
        **{f"{c.kind.name}, {c.setup}": front_page.claims_of(c, "claim_parts.csv") for c in cols},
    }
