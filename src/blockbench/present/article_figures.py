"""Each source's own comparison, redrawn: the article's numbers beside every run's.

A reader who knows an article should find its figure here, with this run's value (and 95% CI)
on the same row, so nothing has to be mapped back by hand. Rows are the article's cases;
each run (each machine of a merged run) is its own colour; a case a run could not measure
keeps its row, labelled with the reason ("not run: no GPU"), and is never dropped. Runs on
the same kind of machine are also shown pooled (black squares: blockbench.judge.pooling).
"""

import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.ticker import FormatStrFormatter, NullFormatter
from matplotlib.transforms import blended_transform_factory

from blockbench.judge.articles import Articles, Figure, Placed, Source
from blockbench.judge.claim import Term
from blockbench.judge.part_evaluators import growth_fit
from blockbench.judge.pooling import pool_groups
from blockbench.judge.run_view import Missing, RunView
from blockbench.present.article_points import (
    Point,
    Row,
    add_pooled,
    machine,
    not_run,
    pooled_label,
    ratio_point,
    time_point,
)
from blockbench.records.spec import PHASE_WORDS

ARTICLE_COLOR = "0.2"
POOLED_COLOR = "black"
WIDTH = 3.5  # inches: one column of a two-column paper
FONT = 7
IMPL_WORDS = {
    "numpy": "NumPy",
    "jax": "JAX",
    "jax_jit": "JAX jit",
    "jax_numpy_input": "JAX, NumPy input",
    "loop": "Python double loop",
    "convolve": "column loop + convolve",
    "scan": "lax.scan",
    "loop_jit": "jit(loop)",
}
# Source B's tests, by the article's letters: (device, implementation) of dot(x, x.T).
B_TESTS = {
    "A": ("cpu", "numpy"),
    "B": ("cpu", "jax_numpy_input"),
    "C": ("cpu", "jax"),
    "D": ("gpu", "jax_numpy_input"),
    "E": ("gpu", "jax"),
}
B_WORDS = {"numpy": "np.dot", "jax": "jnp.dot, JAX data", "jax_numpy_input": "jnp.dot, NumPy data"}


def _series_colors(views: list[RunView]) -> dict[str, Any]:
    """A colour per run, then black for each pool of runs."""
    palette = sns.color_palette("colorblind", max(3, len(views)))
    colors = {v.run_label: palette[i] for i, v in enumerate(views)}
    for members in pool_groups(views):
        colors[pooled_label(members)] = POOLED_COLOR
    return colors


def _aside(ax: plt.Axes, y: float, text: str, color: Any) -> None:
    """Words in place of a point (no figure, not run), at the panel's left edge."""
    edge = blended_transform_factory(ax.transAxes, ax.transData)
    ax.text(0.01, y, text, transform=edge, fontsize=5.5, va="center", color=color, style="italic")


def _dot_panel(
    ax: plt.Axes, rows: list[Row], colors: dict[str, Any], xlabel: str, title: str
) -> None:
    """Rows top to bottom; per row the article (hollow diamond) then each run (dot, CI)."""
    series = ["article", *colors]
    step = 0.7 / len(series)
    offsets = {s: (i - (len(series) - 1) / 2) * step for i, s in enumerate(series)}
    values: list[float] = []
    for y, row in enumerate(rows):
        ya = y + offsets["article"]
        if row.article is not None:
            ax.plot(row.article, ya, "D", mfc="white", mec=ARTICLE_COLOR, ms=4.5, mew=1.2)
            values.append(row.article)
        else:
            _aside(ax, ya, row.article_note, ARTICLE_COLOR)
        for run, color in colors.items():
            p, yr = row.points.get(run, Point(note="not run")), y + offsets[run]
            if p.value is None:
                _aside(ax, yr, p.note, color)
                continue
            xerr = [[p.value - p.low], [p.high - p.value]] if p.low is not None else None
            marker = "s" if run.startswith("pooled: ") else "o"
            ax.errorbar(p.value, yr, xerr=xerr, fmt=marker, color=color, ms=3.5, capsize=2, lw=1)
            values += [p.value, p.low or p.value, p.high or p.value]
            if p.note:
                ax.annotate(
                    p.note,
                    (p.high or p.value, yr),
                    xytext=(3, 0),
                    textcoords="offset points",
                    fontsize=5.5,
                    va="center",
                    color=color,
                )
    ax.set_yticks(range(len(rows)), [r.label for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xscale("log")
    if values:
        lo, hi = min(values), max(values)
        ax.set_xlim(lo / 4, hi * 6)  # room on the left for "not run" and right for notes
    ax.set_xlabel(xlabel, fontsize=FONT)
    ax.set_title(title, fontsize=FONT, loc="left")
    ax.tick_params(labelsize=FONT - 0.5)
    ax.grid(axis="y", visible=False)


def _legend(
    fig: plt.Figure,
    source: Source,
    views: list[RunView],
    colors: dict[str, Any],
    extra: list[tuple[Line2D, str]] = (),
    pools: list[list[RunView]] = (),
) -> None:
    """Below the panels, so it hides no data: the article's hardware, each run's, and each
    pool that drew a point (too few runs to pool draw none)."""
    handles = [Line2D([], [], marker="D", ls="", mfc="white", mec=ARTICLE_COLOR, ms=4.5)]
    labels = [f"article ({source.letter}): {source.hardware}"]
    for v in views:
        handles.append(Line2D([], [], marker="o", ls="-", color=colors[v.run_label], ms=3.5))
        labels.append(machine(v) + ", 95% CI")
    for members in pools:
        handles.append(Line2D([], [], marker="s", ls="-", color=POOLED_COLOR, ms=3.5))
        labels.append(
            f"{pooled_label(members)} (same machine kind; the runs' mean, 95% CI from "
            "the spread between runs)"
        )
    for handle, label in extra:
        handles.append(handle)
        labels.append(label)
    wrapped = [textwrap.fill(label, 70) for label in labels]
    fig.legend(
        handles,
        wrapped,
        loc="lower left",
        bbox_to_anchor=(0.0, 0.0),
        fontsize=FONT - 1,
        frameon=False,
    )


def _time_rows(source: Source, views: list[RunView], workload: str) -> list[Row]:
    rows = []
    for fig in source.figures.values():
        if fig.cell is None or fig.unit != "s" or fig.cell.term.workload != workload:
            continue
        term = fig.cell.term
        phase = term.phase
        label = f"{IMPL_WORDS.get(term.impl, term.impl)} · {term.device.upper()}"
        if phase != "steady" or workload == "dot_xx":
            label += f" · {PHASE_WORDS.get(phase, phase)}"
        points = {v.run_label: time_point(v, fig.cell) for v in views}
        rows.append(Row(label, fig.value, fig.says, points))
    return rows


def _figure(rows: list[int], series: int, n_legend: int) -> tuple[plt.Figure, list[plt.Axes]]:
    """One column wide, panels stacked, each as tall as its rows; sizes in inches so that
    titles, tick labels and the legend below never collide, whatever the row count."""
    top, title, xaxis = 0.3, 0.3, 0.5
    per_row = 0.1 + 0.11 * series  # the article and each run, a line of text apart
    legend = 0.15 * n_legend + 0.1
    heights = [max(1.0, per_row * r + 0.2) for r in rows]
    total = top + sum(title + h + xaxis for h in heights) + legend
    fig = plt.figure(figsize=(WIDTH, total))
    axes, y = [], total - top
    for h in heights:
        y -= title + h
        axes.append(fig.add_axes((0.42, y / total, 0.56, h / total)))
        y -= xaxis
    return fig, axes


def _suptitle(fig: plt.Figure, source: Source) -> None:
    top = fig.axes[0].get_position().y1
    fig.text(
        0.0,
        top + 0.3 / fig.get_figheight(),
        f"Source {source.letter}: {source.title}",
        fontsize=FONT + 1,
        weight="bold",
        va="bottom",
    )


@dataclass(frozen=True)
class Panel:
    rows: list[Row]
    xlabel: str
    title: str


def _compose(
    source: Source, views: list[RunView], panels: list[Panel], growth: Figure | None = None
) -> tuple[plt.Figure, list[plt.Axes]]:
    """The source's dot panels stacked (and its compile-growth panel last), its title above,
    and one legend below naming the article's hardware and each run's machine."""
    for panel in panels:
        add_pooled(panel.rows, views)
    colors = _series_colors(views)
    series = len(colors) + 1
    heights = [len(p.rows) for p in panels] + ([8] if growth else [])
    fig, axes = _figure(heights, series, series + (len(views) + 1 if growth else 0))
    for ax, panel in zip(axes, panels, strict=False):
        _dot_panel(ax, panel.rows, colors, panel.xlabel, panel.title)
    extra = _compile_growth(axes[-1], growth, views, colors) if growth else []
    _suptitle(fig, source)
    drawn = [
        members
        for members in pool_groups(views)
        if any(r.points[pooled_label(members)].value is not None for p in panels for r in p.rows)
    ]
    _legend(fig, source, views, colors, extra, drawn)
    return fig, axes


def article_a(articles: Articles, views: list[RunView]) -> plt.Figure:
    source = articles.sources["A"]
    panel = Panel(
        _time_rows(source, views, "dot_xx"),
        "time per call (s)",
        "jnp.dot(x, x), x 1000 × 1000 uniform: what a timer sees",
    )
    return _compose(source, views, [panel])[0]


def _b_article(source: Source, test: tuple[str, str]) -> tuple[float | None, str]:
    """Test / test A as the article gave it (either way round), or its words."""
    ref = B_TESTS["A"]

    def pair(f: Figure) -> tuple[tuple, tuple]:
        assert f.num is not None and f.den is not None
        return (f.num.term.device, f.num.term.impl), (f.den.term.device, f.den.term.impl)

    for fig in source.figures.values():
        if fig.num is None:
            continue
        num, den = pair(fig)
        if (num, den) == (test, ref) and fig.value is not None:
            return float(fig.value), fig.says
        if (num, den) == (ref, test) and fig.value is not None:
            return 1 / float(fig.value), fig.says
    words = [f.says for f in source.figures.values() if f.num and test in pair(f)]
    return None, "article: " + (words[0] if words else "no figure")


def article_b(articles: Articles, views: list[RunView]) -> plt.Figure:
    source = articles.sources["B"]
    size = next(f.num.size for f in source.figures.values() if f.num)
    ref = Placed(Term("cpu", "matmul", "numpy"), size)
    rows = []
    for letter, (device, impl) in B_TESTS.items():
        if letter == "A":
            continue
        value, says = _b_article(source, (device, impl))
        cell = Placed(Term(device, "matmul", impl), size)
        points = {v.run_label: ratio_point(v, cell, ref) for v in views}
        rows.append(Row(f"{letter}: {B_WORDS[impl]} · {device.upper()}", value, says, points))
    panel = Panel(
        rows,
        "time relative to test A (np.dot on the CPU); < 1 is faster",
        f"dot(x, x.T), x {size:,} × {size:,} normal float32",
    )
    fig, (ax,) = _compose(source, views, [panel])
    ax.axvline(1.0, color="0.5", lw=0.8, ls=":")
    return fig


def article_c(articles: Articles, views: list[RunView]) -> plt.Figure:
    source = articles.sources["C"]
    panels = [
        Panel(
            _time_rows(source, views, "matmul"),
            "time (s)",
            "dot(x, x.T), x 5000 × 5000, by device and phase",
        ),
        Panel(_time_rows(source, views, "selu"), "time (s)", "SELU on 1,000,000 values"),
    ]
    return _compose(source, views, panels)[0]


def article_d(articles: Articles, views: list[RunView]) -> plt.Figure:
    source = articles.sources["D"]
    panel = Panel(
        _time_rows(source, views, "stencil"),
        "time per call (s)",
        "the 64 × 32 recurrence, three ways",
    )
    return _compose(source, views, [panel], growth=source.figures["compile_exponent"])[0]


def _compile_growth(
    ax: plt.Axes, exponent: Figure, views: list[RunView], colors: dict[str, Any]
) -> list[tuple[Line2D, str]]:
    """jit(loop)'s compile time against its scalar updates, each run fitted as a power law;
    the article printed words only, drawn as a slope-2 guide through the data."""
    assert exponent.of is not None  # the figure's `of`, which its catalog names
    term = exponent.of.term
    anchors, fits = [], []
    for i, view in enumerate(views):
        color = colors[view.run_label]
        try:
            fit = growth_fit(view, term)
        except Missing as why:
            note = not_run(view, term) if not view.sizes_ok(term) else f"not fitted: {why}"
            ax.text(
                0.02,
                0.95 - 0.08 * i,
                note,
                transform=ax.transAxes,
                fontsize=5.5,
                color=color,
                style="italic",
                va="top",
            )
            continue
        rows = fit.rows
        work = rows["work"].to_numpy(float)
        ci = [view.time_of([term], s)[0].interval() for s in rows["size"]]
        lows, highs = (np.exp(np.array(x)) for x in zip(*ci, strict=True))
        med = rows["median_s"].to_numpy(float)
        ax.errorbar(
            work, med, yerr=[med - lows, highs - med], fmt="o", color=color, ms=3.5, capsize=2, lw=1
        )
        lo, hi = fit.exponent.interval()
        slope = fit.exponent.estimate
        xs = np.geomspace(work.min(), work.max(), 20)
        scale = math.exp(np.mean(np.log(med)) - slope * np.mean(np.log(work)))
        ax.plot(xs, scale * xs**slope, color=color, lw=1)
        fits.append(
            (
                Line2D([], [], color=color, lw=1),
                f"run {view.run_label}: fitted exponent {slope:.2f} [{lo:.2f}, {hi:.2f}]",
            )
        )
        for r in rows.itertuples():
            ax.annotate(
                f"{r.size}",
                (r.work, r.median_s),
                xytext=(3, 3),
                textcoords="offset points",
                fontsize=5,
                color="0.4",
            )
        anchors.append((work, med))
    ax.set(xscale="log", yscale="log")
    measured = sorted({float(x) for w, _ in anchors for x in w})
    if measured:  # less than a decade apart: label the sizes measured, not minor ticks
        ax.set_xticks(measured)
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("scalar updates in the loop (rows of the state labelled)", fontsize=FONT)
    ax.set_ylabel("XLA compile time (s)", fontsize=FONT)
    ax.set_title(
        "jit(loop): compile time against the loop's size", fontsize=FONT, loc="left", wrap=True
    )
    ax.tick_params(labelsize=FONT - 0.5)
    if not anchors:
        return fits
    work, med = anchors[0]
    xs = np.geomspace(work.min(), work.max(), 20)
    mid = math.exp(np.mean(np.log(med)) - exponent.value * np.mean(np.log(work)))
    (line,) = ax.plot(xs, mid * xs**exponent.value, color=ARTICLE_COLOR, lw=1, ls="--")
    return [
        *fits,
        (line, f"article: exponent {exponent.value} ({exponent.says}), drawn through the data"),
    ]


ARTICLE_FIGURES: dict[str, Callable[[Articles, list[RunView]], plt.Figure]] = {
    "article_A": article_a,
    "article_B": article_b,
    "article_C": article_c,
    "article_D": article_d,
}
