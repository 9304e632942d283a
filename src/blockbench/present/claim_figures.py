"""The claims' figures: each ratio measured against the article's, each part against its rule.

Drawn from the claims' parts as the claims stage judged them.
"""

import math

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from blockbench.judge.claim import region
from blockbench.present.cell_figures import empty_panel

# Okabe-Ito colours (safe for colour-blind readers); indicative outcomes are lighter.
RULE_COLORS = {
    "holds": "#0072B2",
    "fails": "#D55E00",
    "inconclusive": "#E69F00",
    "holds (indicative)": "#8FC1E3",
    "fails (indicative)": "#F0B48A",
    "inconclusive (indicative)": "#F5D38A",
}


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


def claims_figure(parts: pd.DataFrame) -> plt.Figure:
    """Article ratio against measured ratio; on the diagonal the article is matched exactly."""
    parts = parts[parts["measured"].notna() & parts["article"].notna() & (parts["kind"] == "ratio")]
    fig, ax = plt.subplots(figsize=(6.5, 6))
    if parts.empty:
        empty_panel(ax, "no claim ratio measured in this run")
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


def rule_parts(parts: pd.DataFrame, catalog: str | None = None) -> plt.Figure:
    """Every claim part with a measured value (of one `catalog`, or of every one): the
    value and its 95% CI, coloured by outcome, over the band of values its rule accepts,
    beside the published figure (hollow diamond). It is the figure of a catalog with none
    drawn by hand."""
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
        empty_panel(axes[0][0], "no claim part measured in this run")
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
    # the legend's rows take their own inches below the x-axis label, whatever the panels'
    legend_in = 0.08 + 0.17 * -(-len(handles) // 2)
    fig.set_figheight(fig.get_figheight() + legend_in)
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    return fig
