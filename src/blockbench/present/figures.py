"""Seaborn figures from the measurements table (presenting, apart from measuring).

Each figure is a function of the tables; `draw(name, ...)` writes it as PNG and SVG. Times
span decades (microsecond dispatches, second-long compiles), so time axes are logarithmic.
"""

import math
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
import seaborn as sns
from matplotlib.ticker import LogFormatter, NullFormatter

from blockbench.judge import aggregate, run_view
from blockbench.judge.articles import Articles
from blockbench.judge.claim_rules import ClaimsFiles, figures, region
from blockbench.judge.run_view import RunView
from blockbench.present import article_figures, figure_files, figure_names
from blockbench.records.spec import PHASE_WORDS, PHASES
from blockbench.workloads.registry import WORKLOADS

# One colour per phase in every panel (colour-blind-safe palette).
PHASE_COLORS = dict(
    zip(PHASE_WORDS.values(), sns.color_palette("colorblind", len(PHASES)), strict=True)
)


@dataclass(frozen=True)
class Tables:
    """What a figure is drawn from: the cell and process tables, the claims' parts as the
    claims stage judged them, and the articles' numbers."""

    cells: pd.DataFrame
    processes: pd.DataFrame
    claim_parts: pd.DataFrame
    articles: Articles


# Okabe-Ito colours (safe for colour-blind readers); indicative outcomes are lighter.
RULE_COLORS = {
    "holds": "#0072B2",
    "fails": "#D55E00",
    "inconclusive": "#E69F00",
    "holds (indicative)": "#8FC1E3",
    "fails (indicative)": "#F0B48A",
    "inconclusive (indicative)": "#F5D38A",
}


class TickValues(LogFormatter):
    """LogFormatter's choice of the ticks to label, each with its value to 3 significant
    digits: LogFormatter itself keeps one, so a panel within one decade read 1e-02 at every
    tick (0.0095, 0.01 and 0.011 alike)."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:.3g}" if super().__call__(x, pos) else ""


def _label(df: pd.DataFrame) -> pd.Series:
    """Implementation and device model on one line, run label where several runs are shown."""
    multi = df["run_label"].nunique() > 1
    suffix = " [" + df["run_label"] + "]" if multi else ""
    return df["device_label"] + suffix


def _impl_label(df: pd.DataFrame) -> pd.Series:
    """The implementation, and for a cell timing NumPy's BLAS the kernel it ran ('numpy,
    OpenBLAS Haswell'): which kernel OpenBLAS ran moved C1 by 1.8x on one VM."""
    kernel = df["blas_kernel"] if "blas_kernel" in df else pd.Series("", index=df.index)
    ran = kernel.fillna("").astype(str)
    return df["impl"].where(ran == "", df["impl"] + ", " + ran)


def _empty(ax: plt.Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, wrap=True)
    ax.set_axis_off()


def _lines_per_workload(
    data: pd.DataFrame,
    y: str,
    ylabel: Callable[[pd.DataFrame], str],
    empty: str,
    extra: Callable[[plt.Axes, pd.DataFrame, dict], None],
) -> plt.Figure:
    """One log-log panel per workload, three to a row: y against size, colour =
    implementation, line style = device (and run); `extra` adds what a figure needs on top
    (CI bands, a reference). Each panel's legend sits below it, clear of the data."""
    data = data.assign(device=_label(data), implementation=_impl_label(data))
    workloads = sorted(data["workload"].unique())
    cols = min(3, max(1, len(workloads)))
    nrows = max(1, -(-len(workloads) // cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(2.9 * cols, 4.2 * nrows), squeeze=False)
    for ax, workload in zip(axes.flat, workloads, strict=False):
        d = data[data["workload"] == workload].sort_values("size")
        impls = sorted(d["implementation"].unique())
        palette = dict(zip(impls, sns.color_palette("colorblind", len(impls)), strict=True))
        sns.lineplot(
            d,
            x="size",
            y=y,
            hue="implementation",
            style="device",
            markers=True,
            palette=palette,
            ax=ax,
            errorbar=None,
        )
        extra(ax, d, palette)
        ax.set(xscale="log", yscale="log", title=workload, ylabel=ylabel(d))
        ax.set_xlabel(WORKLOADS[workload].size_meaning)
        ax.xaxis.set_minor_formatter(NullFormatter())  # 2x10^1, 3x10^1... overlap
        sizes = sorted(d["size"].unique())
        if math.floor(math.log10(sizes[0])) == math.floor(math.log10(sizes[-1])):
            ax.set_xticks(sizes, [str(s) for s in sizes])  # no power of ten inside: its sizes
        # plain numbers (0.5, 1, 2), and minor ticks labelled where a panel spans < 1 decade
        ax.yaxis.set_major_formatter(TickValues())
        ax.yaxis.set_minor_formatter(TickValues(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(
            handles,
            labels,
            fontsize=6,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.25),
            frameon=False,
        )
    for ax in list(axes.flat)[len(workloads) :]:
        ax.set_axis_off()
    if not workloads:
        _empty(axes[0][0], empty)
    fig.tight_layout()
    return fig


def _ci_bands(ax: plt.Axes, d: pd.DataFrame, palette: dict) -> None:
    for (impl, _), g in d.groupby(["implementation", "device"]):
        band = g.dropna(subset=["ci95_low_s", "ci95_high_s"])
        ax.fill_between(
            band["size"],
            band["ci95_low_s"],
            band["ci95_high_s"],
            color=palette[impl],
            alpha=0.2,
            lw=0,
        )


def _parity_line(ax: plt.Axes, d: pd.DataFrame, palette: dict) -> None:
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")


def time_vs_size(t: Tables) -> plt.Figure:
    df = t.cells
    return _lines_per_workload(
        aggregate.steady(df),
        "median_s",
        lambda d: "blocked time per call (s)",
        "no steady measurements",
        _ci_bands,
    )


def speedup_vs_size(t: Tables) -> plt.Figure:
    df = t.cells
    return _lines_per_workload(
        run_view.speedups(df, t.processes),
        "speedup",
        lambda d: f"speedup over CPU {d['baseline'].iloc[0]} (x)",
        "no baseline to compare with",
        _parity_line,
    )


def phases(t: Tables) -> plt.Figure:
    """Where a user's time goes: transfer, compile, first call, steady, readback; for each
    implementation at the largest size that measured all of its phases (the articles' large
    sizes often measure only the phases their claims use)."""
    df = t.cells
    ok = df[(df["status"] == "ok") & df["phase"].notna()]
    key = ["run_label", "workload", "impl", "device"]
    count = ok.groupby([*key, "size"])["phase"].transform("count")
    full = ok[count == count.groupby([ok[k] for k in key]).transform("max")]
    d = full[full["size"] == full.groupby(key)["size"].transform("max")].copy()
    d["implementation"] = d["impl"] + " · " + d["device"] + " · " + d["size"].astype(str)
    d["what is timed"] = d["phase"].map(PHASE_WORDS)
    workloads = sorted(d["workload"].unique())
    fig, axes = plt.subplots(
        len(workloads) or 1, 1, figsize=(10, 3.2 * max(1, len(workloads))), squeeze=False
    )
    for ax, workload in zip(axes[:, 0], workloads, strict=False):
        g = d[d["workload"] == workload]
        sns.barplot(
            g,
            y="implementation",
            x="median_s",
            hue="what is timed",
            ax=ax,
            orient="h",
            hue_order=[PHASE_WORDS[p] for p in PHASES if p in set(g["phase"])],
            palette=PHASE_COLORS,
        )
        ax.set(
            xscale="log",
            xlabel="median time (s)",
            ylabel="",
            title=f"{workload}: phases at the largest size with every phase measured",
        )
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="what is timed")
    if not workloads:
        _empty(axes[0][0], "no measured phases")
    fig.tight_layout()
    return fig


def _label_points(ax: plt.Axes, parts: pd.DataFrame, several: bool) -> None:
    """Each point's claim (and part, where a claim has several) beside it. Labels are laid
    out in decades: one that would fall on an earlier label steps down until it is free and
    keeps a leader line to its point; right of the middle, labels sit on the point's left."""
    per_claim = parts.groupby(["run_label", "claim_id"])["part"].transform("count")
    placed: list[tuple[float, float]] = []  # label anchors (x, y), in decades
    middle = sum(math.log10(v) for v in ax.get_xlim()) / 2
    order = parts.assign(n=per_claim).sort_values("measured", ascending=False)
    for r in order.itertuples():
        text = r.claim_id + (f" {r.part}" if r.n > 1 else "")
        text += f" [{r.run_label}]" if several else ""
        x, y = math.log10(r.article), math.log10(r.measured)
        left = x > middle
        lx, ly = x + (-0.08 if left else 0.08), y + 0.03
        while any(abs(lx - px) < 0.6 and abs(ly - py) < 0.08 for px, py in placed):
            ly -= 0.08
        placed.append((lx, ly))
        ax.annotate(
            text,
            (r.article, r.measured),
            xytext=(10**lx, 10**ly),
            fontsize=7,
            ha="right" if left else "left",
            va="center",
            arrowprops=dict(arrowstyle="-", lw=0.5, color="0.4") if ly < y - 0.03 else None,
        )


def claims_figure(t: Tables) -> plt.Figure:
    """Article ratio against measured ratio; on the diagonal the article is matched exactly."""
    parts = t.claim_parts
    parts = parts[parts["measured"].notna() & parts["article"].notna() & (parts["kind"] == "ratio")]
    fig, ax = plt.subplots(figsize=(6.5, 6))
    if parts.empty:
        _empty(ax, "no claim ratio measured in this run")
        return fig
    parts = parts.assign(
        rule=parts["outcome"].where(
            ~parts["indicative"].astype(bool), parts["outcome"] + " (indicative)"
        )
    )
    ax.errorbar(
        parts["article"],
        parts["measured"],
        yerr=[parts["measured"] - parts["ci_low"], parts["ci_high"] - parts["measured"]],
        fmt="none",
        ecolor="grey",
        elinewidth=1,
        capsize=2,
        label="95% CI",
    )
    several = parts["run_label"].nunique() > 1  # a marker per run only where runs differ
    sns.scatterplot(
        parts.rename(columns={"rule": "claim's rule", "run_label": "run"}),
        x="article",
        y="measured",
        hue="claim's rule",
        style="run" if several else None,
        s=80,
        palette=RULE_COLORS,
        ax=ax,
    )
    # the axes hold every interval whole: a between-run term of x3.7 took A1's upper end
    # (1330) off an axis that stopped at twice the largest value (720)
    shown = parts[["article", "measured", "ci_low", "ci_high"]].stack()
    shown = shown[shown > 0]
    lo, hi = shown.min() / 2, shown.max() * 2
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--", label="measured = article")
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(lo, hi),
        ylim=(lo, hi),
        xlabel="article's ratio (x)",
        ylabel="measured ratio (x)",
        title="Claims: article vs this pipeline",
    )
    _label_points(ax, parts, several)
    ax.legend(
        fontsize=6,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
        title="the claim's rule",
        title_fontsize=6,
    )
    fig.tight_layout()
    return fig


# The measured values each kind of part has: a ratio (log axis) or an exponent (linear).
SCALED = {"ratio": "ratio (x), log scale", "trend": "exponent", "growth": "exponent"}


def _rule_band(ax: plt.Axes, y: float, condition: str, log: bool) -> None:
    """The values that satisfy `condition`, shaded on row `y` (clipped to the axis)."""
    r = region(condition)
    lo, hi = ax.get_xlim()
    low = max(r.low, lo) if not (log and r.low <= 0) else lo
    ax.fill_betweenx([y - 0.4, y + 0.4], low, min(r.high, hi), color="#009E73", alpha=0.15, lw=0)


def rule_parts(t: Tables, catalog: str | None = None) -> plt.Figure:
    """Every claim part with a measured value (of one `catalog`, or of every one): the
    value and its 95% CI, coloured by outcome, over the band of values its rule accepts,
    beside the published figure (hollow diamond). It is the figure of a catalog with none
    drawn by hand."""
    parts = t.claim_parts
    if catalog is not None:
        parts = parts[parts["catalog"] == catalog]
    parts = parts[parts["measured"].notna() & parts["kind"].isin(list(SCALED))]
    panels = [k for k in ("ratio", "trend", "growth") if (parts["kind"] == k).any()]
    rows = [parts[parts["kind"] == k] for k in panels]
    heights = [max(len(r), 1) for r in rows] or [1]
    fig, axes = plt.subplots(
        len(heights), 1, figsize=(7.5, 1.2 + 0.32 * sum(heights)), squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )  # fmt: skip
    if not panels:
        _empty(axes[0][0], "no claim part measured in this run")
        return fig
    several = parts["run_label"].nunique() > 1
    outcomes = parts["outcome"].where(
        ~parts["indicative"].astype(bool), parts["outcome"] + " (indicative)"
    )
    for ax, kind, d in zip(axes[:, 0], panels, rows, strict=True):
        outcome = outcomes[d.index].reset_index(drop=True)
        d = d.reset_index(drop=True)
        log = kind == "ratio"
        values = d[["measured", "ci_low", "ci_high", "article"]].stack()
        values = values[values > 0] if log else values
        lo, hi = values.min(), values.max()
        pad = (hi / lo) ** 0.1 if log else 0.1 * (hi - lo or 1.0)
        ax.set_xlim((lo / pad, hi * pad) if log else (lo - pad, hi + pad))
        if log:
            ax.set_xscale("log")
        for y, r in d.iterrows():
            if isinstance(r["condition"], str) and r["condition"]:
                _rule_band(ax, y, r["condition"], log)
            bar = [[r["measured"] - r["ci_low"]], [r["ci_high"] - r["measured"]]]
            color = RULE_COLORS.get(outcome[y], "grey")
            if pd.notna(r["article"]):
                ax.plot(r["article"], y, "D", mfc="none", mec="0.2", ms=6)
            ax.errorbar(r["measured"], y, xerr=bar, fmt="o", color=color, capsize=2, ms=5, zorder=3)
        labels = [
            f"{r.claim_id} {r.part} ({r.condition})" + (f" [{r.run_label}]" if several else "")
            for r in d.itertuples()
        ]
        ax.set_yticks(range(len(d)), labels, fontsize=7)
        ax.set_ylim(len(d) - 0.5, -0.5)
        ax.set_xlabel(f"measured {SCALED[kind]}", fontsize=8)
    handles = [
        plt.Line2D([], [], marker="D", ls="", mfc="none", mec="0.2", label="published figure"),
        plt.Rectangle((0, 0), 1, 1, color="#009E73", alpha=0.15, label="the rule holds here"),
        *[
            plt.Line2D([], [], marker="o", ls="", color=c, label=f"measured, 95% CI: {name}")
            for name, c in RULE_COLORS.items()
            if name in set(outcomes)
        ],
    ]
    of = f"The {catalog} catalog: each" if catalog else "Each"
    models = sorted(set(parts.get("device_model", pd.Series(dtype=str)).dropna()) - {""})
    where = f"\nrun {', '.join(sorted(set(parts['run_label'])))}" + (
        f" on {'; '.join(models)}" if models else ""
    )
    fig.suptitle(f"{of} claim part against its rule and its published figure{where}", fontsize=9)
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.02 + 0.02 * len(handles), 1, 1))
    return fig


FIGURES: dict[str, Callable[[Tables], plt.Figure]] = {
    **{
        name: lambda t, f=f: f(t.articles, RunView.each(t.cells, t.processes))
        for name, f in article_figures.ARTICLE_FIGURES.items()
    },
    "time_vs_size": time_vs_size,
    "speedup_vs_size": speedup_vs_size,
    "phases": phases,
    "claims": claims_figure,
    "rule_parts": rule_parts,
}


def draw(
    name: str,
    measurements: str | Path,
    processes: str | Path,
    claim_parts: str | Path,
    claims_file: ClaimsFiles,
    outputs: Sequence[str | Path],
) -> None:
    """Draw figure `name`: one of FIGURES, or a catalog's generic figure (its claim parts
    alone; blockbench.present.figure_names)."""
    figure_files.theme(name)
    tables = Tables(
        pd.read_parquet(measurements),
        pd.read_parquet(processes),
        pd.read_parquet(claim_parts),
        figures(claims_file),
    )
    catalog = figure_names.catalog_of(name)
    fig = rule_parts(tables, catalog) if catalog else FIGURES[name](tables)
    figure_files.save(fig, outputs)


def draw_all(
    names: Sequence[str],
    measurements: str | Path,
    processes: str | Path,
    claim_parts: str | Path,
    claims_file: ClaimsFiles,
    outputs: Sequence[Sequence[str | Path]],
    workers: int = 1,
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
            draw(name, *args, outputs=files)
        return
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        drawn = [
            pool.submit(draw, name, *args, outputs=files)
            for name, files in zip(names, outputs, strict=True)
        ]
        for figure in drawn:
            figure.result()  # a figure that failed fails the job, with its error
