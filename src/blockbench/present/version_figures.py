"""Verdicts by JAX release: each claim's value with its CI against the release, one line per
device model, the verdict at each release, the article's value for reference.

Drawn from the claims table, where each release is a run of its own (blockbench.pipeline.versions);
a claim is never pooled or paired across releases, only set side by side.
"""

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from blockbench.judge.verdicts import fmt, value_ci
from blockbench.present import figure_files
from blockbench.records.layout import SEPARATOR

COLUMNS = [
    "claim_id",
    "slug",
    "jax_version",
    "run",
    "device_model",
    "verdict",
    "measured",
    "ci_low",
    "ci_high",
    "article",
    "metric",
    "run_label",
]
# Filled: decided; hollow: undecided or not judged (a part measured, the claim not run).
MARKERS = {
    "reproduced": ("o", True),
    "not_reproduced": ("X", True),
    "inconclusive": ("o", False),
    "not_run": ("s", False),
}
PANEL_IN = (2.2, 1.75)
# Log axes label 1, 2 and 5 of each decade, plainly (1e+01 and 6x10^0 read badly); linear
# axes plainly too (an offset like 1e-7 above the panel would collide with its title).
TICK = FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "125" else "")
PLAIN = FuncFormatter(lambda v, _: f"{v:.3g}")


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def table(claims: pd.DataFrame) -> pd.DataFrame:
    """One row per claim, release and run that measured a value (long format)."""
    d = claims[claims["measured"].notna()].copy()
    d["run"] = d["run_label"].str.split(SEPARATOR, regex=False).str[0]
    d["release"] = d["jax_version"].map(release_key)
    d = d.sort_values(["claim_id", "run", "device_model", "release"])
    return d[COLUMNS].reset_index(drop=True)


def releases(t: pd.DataFrame) -> list[str]:
    return sorted(set(t["jax_version"]), key=release_key)


def wide(t: pd.DataFrame) -> pd.DataFrame:
    """Claims down, releases across: the verdict and the value with its CI at each."""
    out = t.assign(
        cell=[
            f"**{r.verdict}** {value_ci(r.measured, r.ci_low, r.ci_high)}" for r in t.itertuples()
        ]
    )
    keys = ["claim_id", "slug", "run", "device_model"]
    grid = out.pivot_table(index=keys, columns="jax_version", values="cell", aggfunc="first")
    grid = grid[releases(t)].fillna("")
    article = out.groupby(keys)["article"].first().map(lambda a: fmt(a) or "")
    grid.insert(0, "article", article)
    return grid.reset_index()


def _series(t: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted(set(zip(t["run"], t["device_model"], strict=True)))


def figure(t: pd.DataFrame) -> plt.Figure:
    """Small multiples, one panel per claim: value and CI against the release (evenly
    spaced, oldest left), a line per device model, the marker saying the verdict."""
    claims = list(dict.fromkeys(t["claim_id"]))
    cols = min(3, max(1, len(claims)))
    rows = max(1, -(-len(claims) // cols))
    fig, axes = plt.subplots(
        rows, cols, figsize=(PANEL_IN[0] * cols, PANEL_IN[1] * rows + 0.6), squeeze=False
    )
    order = releases(t)
    x_of = {v: i for i, v in enumerate(order)}
    series = _series(t)
    several_runs = len({run for run, _ in series}) > 1
    colors = dict(zip(series, sns.color_palette("colorblind", len(series)), strict=True))
    for ax, claim in zip(axes.flat, claims, strict=False):
        c = t[t["claim_id"] == claim]
        offsets = np.linspace(-0.08, 0.08, len(series)) if len(series) > 1 else [0.0]
        for (key, g), dx in zip(c.groupby(["run", "device_model"]), offsets, strict=False):
            x = g["jax_version"].map(x_of).to_numpy() + dx
            color = colors[key]
            ax.plot(x, g["measured"], color=color, lw=1, zorder=1)
            ax.errorbar(
                x,
                g["measured"],
                yerr=[g["measured"] - g["ci_low"], g["ci_high"] - g["measured"]],
                fmt="none",
                ecolor=color,
                elinewidth=0.9,
                capsize=2,
                zorder=2,
            )
            for xi, r in zip(x, g.itertuples(), strict=True):
                marker, filled = MARKERS.get(r.verdict, ("o", False))
                ax.plot(
                    xi,
                    r.measured,
                    marker=marker,
                    ms=5,
                    color=color,
                    mfc=color if filled else "white",
                    zorder=3,
                )
        article = c["article"].dropna()
        if not article.empty:
            ax.axhline(article.iloc[0], color="0.35", ls="--", lw=0.9, zorder=0)
        values = pd.concat([c["ci_low"], c["ci_high"], c["measured"], article]).dropna()
        if (values > 0).all() and values.max() / values.min() > 4:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(TICK)
            ax.yaxis.set_minor_formatter(TICK)
        else:
            ax.yaxis.set_major_formatter(PLAIN)
        ax.set_title(f"{claim} {c['slug'].iloc[0]}", fontsize=7.5)
        ax.set_xticks(range(len(order)), order, rotation=30, fontsize=6.5)
        ax.set_xlim(-0.5, len(order) - 0.5)
        ax.tick_params(axis="y", which="both", labelsize=6.5)
        label = c["metric"].iloc[0] if c["metric"].nunique() == 1 else "value"
        ax.set_ylabel(textwrap.fill(label, 28), fontsize=6)
    for ax in axes.flat[len(claims) :]:
        ax.set_axis_off()
    for ax in axes[-1]:
        ax.set_xlabel("JAX release", fontsize=7)
    fig.legend(
        handles=_legend(series, colors, several_runs),
        loc="lower center",
        ncol=3,
        fontsize=6.5,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    fig.suptitle("Claims by JAX release: value with 95% CI, verdict by marker", fontsize=8.5)
    fig.tight_layout(rect=(0, 0.06 + 0.03 * (len(series) > 1), 1, 1))
    return fig


def _legend(series: list[tuple[str, str]], colors: dict, several_runs: bool) -> list[Line2D]:
    handles = [
        Line2D([], [], color=colors[s], lw=1, label=f"{s[1]} ({s[0]})" if several_runs else s[1])
        for s in series
    ]
    handles += [
        Line2D(
            [], [], ls="", marker=m, color="0.3", mfc="0.3" if filled else "white", label=verdict
        )
        for verdict, (m, filled) in MARKERS.items()
    ]
    handles.append(Line2D([], [], color="0.35", ls="--", lw=0.9, label="article"))
    return handles


def build(claims_csv: str | Path, png: str, svg: str, csv: str, markdown: str) -> pd.DataFrame:
    """The table (CSV long, Markdown wide) and the figure (PNG and SVG)."""
    t = table(pd.read_csv(claims_csv, dtype={"jax_version": str}))
    t.to_csv(csv, index=False)
    Path(markdown).write_text(
        "# Claims by JAX release\n\n" + wide(t).to_markdown(index=False) + "\n"
    )
    figure_files.theme("claims_by_version")
    figure_files.save(figure(t), (png, svg), dpi=200)
    return t
