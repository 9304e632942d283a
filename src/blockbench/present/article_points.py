"""The values an article figure shows: each run's time or ratio for one of the article's
cases, with its 95% CI, or why it has none, and runs of one kind of machine pooled.

Computed with the claims' own lookups and pooling (blockbench.judge.run_view, .pooling),
and drawn by blockbench.present.article_figures, which computes nothing itself.
"""

import math
from dataclasses import dataclass

import pandas as pd

from blockbench.judge.articles import Placed
from blockbench.judge.claim import Term
from blockbench.judge.pooling import pool_groups, pool_values
from blockbench.judge.run_view import Missing, RunView, choose_size, ratio_at
from blockbench.judge.uncertainty import Spread


@dataclass(frozen=True)
class Point:
    """One run's value for one row, with its 95% CI, or why it has none."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    note: str = ""  # "at 2000 (article 5000)", or "not run: no GPU"
    log: Spread | None = None  # the value's uncertainty on the log scale
    processes: float = math.nan  # behind the value


def point(log: Spread, processes: int, note: str) -> Point:
    low, high = log.interval()
    return Point(math.exp(log.estimate), math.exp(low), math.exp(high), note, log, processes)


@dataclass(frozen=True)
class Row:
    label: str
    article: float | None
    article_note: str  # shown where the article printed words, not a number
    points: dict[str, Point]  # run label -> its point


def not_run(view: RunView, term: Term) -> str:
    """The short reason a figure shows for a case this run lacks."""
    device = term.device.upper()
    if term.device not in view.devices:
        return f"not run: no {device} in this run"
    on_device = view.df[view.df["device"] == term.device]
    if not (on_device["status"] == "ok").any() and (on_device["status"] == "unavailable").any():
        return f"not run: no {device}"
    bad = on_device[
        (on_device["workload"] == term.workload)
        & (on_device["impl"] == term.impl)
        & (on_device["status"] != "ok")
    ]
    return f"not run: {bad['status'].iloc[0]}" if not bad.empty else "not run: not in the grid"


def _at(size: int, article_size: int) -> str:
    return "" if size == article_size else f"at {size:,} (article {article_size:,})"


def time_point(view: RunView, cell: Placed) -> Point:
    """A cell's time at the article's size, else at the largest size measured."""
    try:
        size = choose_size(view, [cell.term], cell.size)
    except Missing:
        return Point(note=not_run(view, cell.term))
    log, processes = view.time_of([cell.term], size)
    return point(log, processes, _at(size, cell.size))


def ratio_point(view: RunView, num: Placed, den: Placed) -> Point:
    """num / den at the article's size (else the largest both measured), with its CI."""
    terms = [num.term, den.term]
    try:
        size = choose_size(view, terms, num.size)
        got = ratio_at(view, terms[:1], terms[1:], size)
    except Missing:
        missing = [t for t in terms if not view.sizes_ok(t)] or terms
        return Point(note=not_run(view, missing[-1]))
    return point(got.log, got.processes, _at(size, num.size))


def pooled_point(points: list[Point]) -> Point:
    """Runs' points of one row pooled on the log scale (blockbench.judge.pooling); only
    where the runs measured it at the same size, and enough of them to give an interval."""
    got = [p for p in points if p.log is not None]
    if not got:
        return Point()  # no run measured it: each run's row already says why
    pooled = None
    if len({p.note for p in got}) == 1:
        pooled = pool_values([(p.log, p.processes) for p in got], "log")
    if pooled is None or pooled.low is None:
        return Point(note="not pooled" if pooled is None else "too few runs to pool")
    return Point(pooled.estimate, pooled.low, pooled.high, got[0].note)


def pooled_label(members: list[RunView]) -> str:
    return "pooled: " + ", ".join(v.run_label for v in members)


def add_pooled(rows: list[Row], views: list[RunView]) -> None:
    """Each group of runs on the same hardware as one more series of every row."""
    for members in pool_groups(views):
        for row in rows:
            mine = [row.points[v.run_label] for v in members if v.run_label in row.points]
            row.points[pooled_label(members)] = pooled_point(mine)


def machine(view: RunView) -> str:
    """What a run measured on, in the words of its own provenance."""
    ok = view.df[view.df["status"] == "ok"]
    parts = []
    for device, g in ok.groupby("device"):
        model = str(g["device_model"].iloc[0]).replace("(R)", "").replace("(TM)", "")
        cores = g["cores"].dropna() if "cores" in g else pd.Series(dtype=float)
        if device == "cpu" and not cores.empty:
            model += f", {int(cores.max())} cores"
        parts.append(" ".join(model.split()))
    return f"run {view.run_label}: " + (" + ".join(parts) or "nothing measured")
