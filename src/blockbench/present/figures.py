"""Seaborn figures from the measurements table (presenting, apart from measuring).

Each figure is a function of the tables (`FIGURES`, drawn by `cell_figures`, `claim_figures`
and `article_figures`), or of one catalog (its generic figure) or one claim (its anatomy,
`anatomy_figures`); `draw(name, ...)` writes it as PNG and SVG.
"""

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from blockbench.judge.articles import Articles
from blockbench.judge.claim_rules import ClaimsFiles, figures, read_claims
from blockbench.judge.run_view import RunView
from blockbench.present import (
    anatomy_figures,
    article_figures,
    cell_figures,
    claim_anatomy,
    claim_figures,
    figure_files,
    figure_names,
    map_figure,
    run_map,
)


@dataclass(frozen=True)
class Tables:
    """What a figure is drawn from: the cell and process tables, the claims' parts as the
    claims stage judged them, and the articles' numbers."""

    cells: pd.DataFrame
    processes: pd.DataFrame
    claim_parts: pd.DataFrame
    articles: Articles
    # the committed references the run is set beside (None: none to read), and its label
    reference: Path | None = None
    run_label: str = ""


FIGURES: dict[str, Callable[[Tables], plt.Figure]] = {
    **{
        name: lambda t, f=f: f(t.articles, RunView.each(t.cells, t.processes))
        for name, f in article_figures.ARTICLE_FIGURES.items()
    },
    "time_vs_size": lambda t: cell_figures.time_vs_size(t.cells),
    "speedup_vs_size": lambda t: cell_figures.speedup_vs_size(t.cells, t.processes),
    "phases": lambda t: cell_figures.phases(t.cells),
    "claims": lambda t: claim_figures.claims_figure(t.claim_parts),
    "rule_parts": lambda t: claim_figures.rule_parts(t.claim_parts),
    "verdict_map": lambda t: map_figure.map_figure(
        run_map.figure_parts(t.claim_parts, t.processes, t.reference, t.run_label)
    ),
}


def draw(
    name: str,
    measurements: str | Path,
    processes: str | Path,
    claim_parts: str | Path,
    claims_file: ClaimsFiles,
    outputs: Sequence[str | Path],
    reference: str = "",
    run_label: str = "",
) -> None:
    """Draw figure `name`: one of FIGURES, a catalog's generic figure (its claim parts
    alone), or a claim's anatomy (blockbench.present.figure_names). `reference`: the folder
    of committed references the run is set beside ('': none), `run_label` the run's."""
    figure_files.theme(name)
    tables = Tables(
        pd.read_parquet(measurements),
        pd.read_parquet(processes),
        pd.read_parquet(claim_parts),
        figures(claims_file),
        Path(reference) if reference else None,
        run_label,
    )
    catalog, claim = figure_names.catalog_of(name), figure_names.claim_of(name)
    if catalog:
        fig = claim_figures.rule_parts(tables.claim_parts, catalog)
    elif claim:
        fig = anatomy(tables, claims_file, claim)
    else:
        fig = FIGURES[name](tables)
    figure_files.save(fig, outputs)


def anatomy(tables: Tables, claims_file: ClaimsFiles, claim_id: str) -> plt.Figure:
    """Claim `claim_id`'s anatomy: each ratio part's two sides, phase by phase, in each run
    (blockbench.present.claim_anatomy), with the run's claims for what limited its phases."""
    claims = read_claims(claims_file)
    claim = next(c for c in claims if c.id == claim_id)
    found = claim_anatomy.anatomies(
        claim, claims, tables.cells, tables.claim_parts, tables.articles
    )
    return anatomy_figures.anatomy_figure(claim, found)


def draw_all(
    names: Sequence[str],
    measurements: str | Path,
    processes: str | Path,
    claim_parts: str | Path,
    claims_file: ClaimsFiles,
    outputs: Sequence[Sequence[str | Path]],
    workers: int = 1,
    reference: str = "",
    run_label: str = "",
) -> None:
    """Draw every figure `names` lists into its `outputs`, `workers` at a time: one job for a
    run's figures loads the plotting libraries once. On Linux the workers are forked from this
    process, which has read no table yet (no reader's threads to copy), so they start drawing
    at once; elsewhere they start afresh."""
    args = (measurements, processes, claim_parts, claims_file)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = min(workers, len(names), cpus or 1)
    if workers <= 1:
        for name, files in zip(names, outputs, strict=True):
            draw(name, *args, outputs=files, reference=reference, run_label=run_label)
        return
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        drawn = [
            pool.submit(draw, name, *args, files, reference, run_label)
            for name, files in zip(names, outputs, strict=True)
        ]
        for figure in drawn:
            figure.result()  # a figure that failed fails the job, with its error
