"""The figures of the cells table: time and speedup against size, and where a call's time goes.

Times span decades (microsecond dispatches, second-long compiles), so time axes are
logarithmic. `empty_panel` says why a figure's panel has nothing to draw.
"""

import math
from collections.abc import Callable

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import LogFormatter, NullFormatter

from blockbench.judge import aggregate, run_view
from blockbench.records.spec import PHASE_WORDS, PHASES
from blockbench.workloads.registry import WORKLOADS

# One colour per phase in every panel (colour-blind-safe palette).
PHASE_COLORS = dict(
    zip(PHASE_WORDS.values(), sns.color_palette("colorblind", len(PHASES)), strict=True)
)


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


def empty_panel(ax: plt.Axes, message: str) -> None:
    """A panel with nothing to draw says why, in place of empty axes."""
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
        empty_panel(axes[0][0], empty)
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


def time_vs_size(cells: pd.DataFrame) -> plt.Figure:
    return _lines_per_workload(
        aggregate.steady(cells),
        "median_s",
        lambda d: "blocked time per call (s)",
        "no steady measurements",
        _ci_bands,
    )


def speedup_vs_size(cells: pd.DataFrame, processes: pd.DataFrame) -> plt.Figure:
    return _lines_per_workload(
        run_view.speedups(cells, processes),
        "speedup",
        lambda d: f"speedup over CPU {d['baseline'].iloc[0]} (x)",
        "no baseline to compare with",
        _parity_line,
    )


def phases(cells: pd.DataFrame) -> plt.Figure:
    """Where a user's time goes: transfer, compile, first call, steady, readback; for each
    implementation at the largest size that measured all of its phases (the articles' large
    sizes often measure only the phases their claims use)."""
    ok = cells[(cells["status"] == "ok") & cells["phase"].notna()]
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
        empty_panel(axes[0][0], "no measured phases")
    fig.tight_layout()
    return fig
