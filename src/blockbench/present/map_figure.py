"""Each claim part on this run's machine beside the references' machines: the verdict map's
values drawn, so that a reader sees where their machine differs, and by how much.

One row per claim part that any machine decided, one colour per machine (this run first, in
black), each value with its 95% interval; ratios on a log axis, exponents on a linear one,
over the band of values the part's rule accepts. Drawn from each machine's claim parts
(present/run_map.py's figure_parts gives them).
"""

import math
import re
from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd

from blockbench.judge.claim import ClaimConfigError, region
from blockbench.present.cell_figures import empty_panel

DECIDED = ("holds", "fails", "inconclusive")
# The values each kind of part has: a ratio (log axis) or an exponent (linear).
AXES = {"ratio": "ratio (x), log scale", "trend": "exponent", "growth": "exponent"}
# This run in black, then the Okabe-Ito colours (safe for colour-blind readers), then more.
COLORS = ["#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]
# How the outcome shows: the marker's shape and fill (hollow: inconclusive)
OUTCOMES = {"holds": ("o", True), "fails": ("X", True), "inconclusive": ("o", False)}
BAND = "#009E73"


def colors(n: int) -> list:
    """`n` colours, the named ones first, then tab20's (alike again only past 27)."""
    every = COLORS + [plt.get_cmap("tab20")(i) for i in range(20)]
    return [every[i % len(every)] for i in range(n)]


def decided(parts: pd.DataFrame) -> pd.DataFrame:
    """The parts a run decided with a value: ratios, trends and growths, never a check."""
    keep = (
        parts["measured"].notna() & parts["kind"].isin(list(AXES)) & parts["outcome"].isin(DECIDED)
    )
    return parts[keep]


def claim_order(claim_id: str) -> tuple[str, int, str]:
    """A1 < A2 < B1 < C10 < J1: a catalog's letter, then its number."""
    m = re.match(r"(\D*)(\d*)(.*)", claim_id)
    assert m is not None  # the pattern matches any text
    return m.group(1), int(m.group(2) or 0), m.group(3)


def rows_of(tables: list[pd.DataFrame], kind: str) -> list[tuple[str, str]]:
    """The (claim, part) rows of one kind of part, claim by claim, a claim's parts in the
    order the first machine with them gives."""
    seen = dict.fromkeys(
        (str(c), str(p))
        for t in tables
        for c, p in t.loc[t["kind"] == kind, ["claim_id", "part"]].itertuples(index=False)
    )
    return sorted(seen, key=lambda row: claim_order(row[0]))


def _band(ax: plt.Axes, y: float, condition: object, log: bool) -> None:
    """The values the part's rule accepts, shaded on row `y` (none for a rule unread)."""
    try:
        r = region(str(condition))
    except ClaimConfigError:
        return
    lo, hi = ax.get_xlim()
    low = lo if log and r.low <= 0 else max(r.low, lo)
    ax.fill_betweenx([y - 0.45, y + 0.45], low, min(r.high, hi), color=BAND, alpha=0.12, lw=0)


def _limits(values: pd.Series, log: bool) -> tuple[float, float]:
    """An axis that holds every value and interval whole, padded a little."""
    values = values[values > 0] if log else values
    lo, hi = float(values.min()), float(values.max())
    if log:
        pad = max((hi / lo) ** 0.06, 1.1)
        return lo / pad, hi * pad
    pad = 0.06 * (hi - lo) or 0.1
    return lo - pad, hi + pad


def _point(ax: plt.Axes, r: pd.Series, y: float, color: object, first: bool) -> None:
    """One machine's value of a part with its 95% interval: its marker says the outcome,
    lighter where the part was indicative (measured off the article's size)."""
    low = r["ci_low"] if pd.notna(r["ci_low"]) else r["measured"]
    high = r["ci_high"] if pd.notna(r["ci_high"]) else r["measured"]
    marker, filled = OUTCOMES[r["outcome"]]
    ax.errorbar(
        r["measured"],
        y,
        xerr=[[r["measured"] - low], [high - r["measured"]]],
        fmt=marker,
        color=color,
        mfc=color if filled else "white",
        alpha=0.45 if str(r.get("indicative", False)) == "True" else 1.0,
        ms=5.5 if first else 4.5,
        elinewidth=1.4 if first else 1.0,
        capsize=1.5,
        zorder=3,
    )


def _panel(ax: plt.Axes, kind: str, tables: dict[str, pd.DataFrame], palette: list) -> None:
    """One kind's rows: each machine's value and interval, stacked within its claim part's
    row (this run on top), over its rule's band."""
    rows = rows_of(list(tables.values()), kind)
    log = kind == "ratio"
    values = [t.loc[t["kind"] == kind, ["measured", "ci_low", "ci_high"]] for t in tables.values()]
    ax.set_xlim(_limits(pd.concat(values).stack(), log))
    if log:
        ax.set_xscale("log")
    step = 0.8 / len(tables)
    for y, (claim, part) in enumerate(rows):
        if y % 2:
            ax.axhspan(y - 0.5, y + 0.5, color="0.95", lw=0, zorder=0)
        hits = [t[(t["claim_id"] == claim) & (t["part"] == part)] for t in tables.values()]
        first = next(h for h in hits if not h.empty).iloc[0]
        _band(ax, y, first["condition"], log)
        for i, (hit, color) in enumerate(zip(hits, palette, strict=True)):
            if not hit.empty:
                _point(ax, hit.iloc[0], y - 0.4 + step * (i + 0.5), color, i == 0)
    ax.set_yticks(range(len(rows)), [f"{c} {p}" for c, p in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"measured {AXES[kind]}", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)


def map_figure(tables: Mapping[str, pd.DataFrame]) -> plt.Figure:
    """Each machine's decided claim parts, by the machine's name in the legend (the first:
    this run; run_map.figure_parts): a row per part, a colour per machine, each value with
    its 95% interval, ratios on a log axis, exponents (trends, growths) on linear ones."""
    shown = {name: decided(t) for name, t in tables.items()}
    kinds = [k for k in AXES if any((t["kind"] == k).any() for t in shown.values())]
    heights = [len(rows_of(list(shown.values()), k)) for k in kinds] or [1]
    per_row = max(0.3, 0.085 * len(shown))
    fig, axes = plt.subplots(
        len(heights), 1, figsize=(8, 1.0 + per_row * sum(heights)), squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )  # fmt: skip
    if not kinds:
        empty_panel(axes[0][0], "no claim part decided by any of the runs")
        return fig
    palette = colors(len(shown))
    for ax, kind in zip(axes[:, 0], kinds, strict=True):
        _panel(ax, kind, shown, palette)
    handles = [
        plt.Line2D([], [], marker="o", ls="-", color=c, ms=5, label=name)
        for name, c in zip(shown, palette, strict=True)
    ]
    handles += [
        plt.Line2D([], [], marker=m, ls="", color="0.3", mfc="0.3" if f else "white", label=o)
        for o, (m, f) in OUTCOMES.items()
    ]
    handles += [
        plt.Rectangle((0, 0), 1, 1, color=BAND, alpha=0.12, label="the rule holds here"),
        plt.Line2D([], [], marker="o", ls="", color="0.3", alpha=0.45, label="indicative"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=7, frameon=False)
    # the legend's rows and the title take their own inches, whatever the figure's height
    legend_in, title_in = 0.08 + 0.17 * math.ceil(len(handles) / 2), 0.35
    fig.set_figheight(fig.get_figheight() + legend_in + title_in)
    height = fig.get_figheight()
    fig.suptitle(
        "Each claim part on this machine and on the references': value and 95% interval",
        fontsize=9,
        y=1 - 0.12 / height,
    )
    fig.tight_layout(rect=(0, legend_in / height, 1, 1 - title_in / height))
    return fig
