"""Each claim's anatomy drawn (`anatomy_<ID>`): for every ratio part in every run, the phases
of each cell it reads, the ones its numerator and denominator read in their colours, then the
two sides' times beside the article's, and beneath them the lines blockbench.present.
claim_anatomy computes (this module lays them out and computes nothing itself).

Every ratio part is drawn, not only the one the verdict rests on: a claim's verdict may rest
on a part that is no ratio (D3's growth), and the parts a claim holds on say as much of where
its time goes as the one it fails on; the headline part is named in its panel's title.
"""

import textwrap
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from blockbench.judge.claim import Claim
from blockbench.judge.verdicts import part_line
from blockbench.present.cell_figures import empty_panel
from blockbench.present.claim_anatomy import DENOMINATOR, NUMERATOR, Anatomy, Side, seconds
from blockbench.records.spec import PHASE_WORDS, PHASES

# Okabe-Ito colours (safe for colour-blind readers), as the claims figures use.
SIDE_COLORS = {NUMERATOR: "#0072B2", DENOMINATOR: "#D55E00"}
CONTEXT = "#BBBBBB"  # a phase the part does not read
WIDTH_IN = 9.0
ROW_IN = 0.2  # each bar's height in the figure
TEXT_IN = 0.16  # each line of title or text beneath a panel
WRAP = 115  # characters a line of text beneath a panel holds at this width


@dataclass(frozen=True)
class Row:
    """One bar of a panel, or a heading (no value)."""

    label: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    color: str = CONTEXT
    article: float | None = None


def _side_row(side: Side) -> Row:
    """A side's time, the sum of its terms' (no interval: the part's own is in the title)."""
    phases = " + ".join(dict.fromkeys(t.phase for t in side.terms))
    label = f"{side.name}: {phases}" + ("" if side.measured else " (not measured)")
    color = SIDE_COLORS[side.name]
    return Row(label, side.total_s, color=color, article=side.article_s)


def phase_label(phase: str) -> str:
    """'steady (blocked call)', 'dispatch (unblocked)': the phase as the tables name it, with
    what it times where its words say more."""
    words, spoken = PHASE_WORDS[phase], phase.replace("_", " ")
    return phase + words.removeprefix(spoken) if words.startswith(spoken) else f"{phase} ({words})"


def rows(a: Anatomy) -> list[Row]:
    """Each cell read, a heading and its phases as measured (the read ones coloured by the
    side that reads them), then the two sides' times with the article's."""
    out = []
    for cell, phases in a.cells.items():
        out.append(Row(cell.key))
        for phase in (p for p in PHASES if p in phases):
            t = phases[phase]
            side = a.side_of(cell, phase)
            color = SIDE_COLORS[side] if side else CONTEXT
            out.append(Row(phase_label(phase), t.median_s, t.low_s, t.high_s, color))
    return [*out, Row("the ratio's two sides"), _side_row(a.num), _side_row(a.den)]


def _limits(shown: list[Row]) -> tuple[float, float]:
    """A log axis that holds every bar, interval and article marker, with room for labels."""
    values = [
        v for r in shown for v in (r.value, r.low, r.high, r.article) if v is not None and v > 0
    ]
    if not values:
        return 1e-6, 1.0
    return min(values) / 3, max(values) * 8


def _title(claim: Claim, a: Anatomy, several: bool) -> str:
    said = f"{claim.id} · {a.part.name}"
    if a.headline:
        said += " · the part its verdict rests on"
    if several:
        said += f" · run {a.run_label}"
    return said + "\n" + textwrap.fill(part_line(a.result), WRAP)


def _text(a: Anatomy) -> list[str]:
    """The lines beneath a panel, wrapped."""
    return [w for line in a.lines() for w in textwrap.wrap(line, WRAP)]


def panel(ax: plt.Axes, claim: Claim, a: Anatomy, several: bool) -> None:
    """One part in one run: its bars on a log time axis, the lines beneath as its label."""
    shown = rows(a)
    title = _title(claim, a, several)
    if not a.cells:
        why = a.result.detail or "none of its cells measured in this run"
        ax.set_title(title, loc="left", fontsize=7)
        empty_panel(ax, textwrap.fill(f"not run: {why}", 80))
        return
    lo, hi = _limits(shown)
    for i, r in enumerate(shown):
        if r.value is None:
            continue
        ax.barh(i, r.value - lo, left=lo, height=0.65, color=r.color)
        if r.low is not None and r.high is not None:
            ax.errorbar(
                r.value,
                i,
                xerr=[[r.value - r.low], [r.high - r.value]],
                fmt="none",
                ecolor="0.25",
                elinewidth=0.8,
                capsize=2,
            )
        if r.article is not None:
            ax.scatter(r.article, i, marker="D", s=22, color="black", zorder=3)
        right = max(v for v in (r.value, r.high, r.article) if v is not None)
        ax.text(right * 1.25, i, seconds(r.value), va="center", fontsize=6.5)
    ax.set_yticks(range(len(shown)), [r.label for r in shown], fontsize=7)
    for tick, r in zip(ax.get_yticklabels(), shown, strict=True):
        if r.value is None:
            tick.set_fontweight("bold")
    ax.set(xscale="log", xlim=(lo, hi), ylim=(len(shown) - 0.4, -0.6))
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(title, loc="left", fontsize=7)
    label = "\n".join(["time (s), log scale: median of the run's processes, 95% CI", *_text(a)])
    ax.set_xlabel(label, loc="left", fontsize=7, linespacing=1.4)


def _height(a: Anatomy) -> float:
    title = 1 + len(textwrap.wrap(part_line(a.result), WRAP))
    if not a.cells:
        return (title + 3) * TEXT_IN
    return len(rows(a)) * ROW_IN + (title + 2 + len(_text(a))) * TEXT_IN + 0.3


LEGEND = [
    Patch(color=SIDE_COLORS[NUMERATOR], label="read by the numerator"),
    Patch(color=SIDE_COLORS[DENOMINATOR], label="read by the denominator"),
    Patch(color=CONTEXT, label="measured, not read by this part"),
    Line2D([], [], marker="D", color="black", ls="none", markersize=4, label="the article's time"),
]


def anatomy_figure(claim: Claim, anatomies: list[Anatomy]) -> plt.Figure:
    """The figure of one claim: a panel per ratio part and run, the legend once on top."""
    several = len({a.run_label for a in anatomies}) > 1
    heights = [_height(a) for a in anatomies] or [1.0]
    fig, axes = plt.subplots(
        len(heights),
        1,
        figsize=(WIDTH_IN, sum(heights) + 0.9),
        height_ratios=heights,
        squeeze=False,
        layout="constrained",
    )
    for ax, a in zip(axes[:, 0], anatomies, strict=False):
        panel(ax, claim, a, several)
    if not anatomies:
        empty_panel(axes[0][0], f"{claim.id}: no ratio part in this run's claims table")
    statement = textwrap.fill(claim.statement, WRAP - 10)
    fig.suptitle(
        f"{claim.id} {claim.slug}: what each side's time is made of\n{statement}",
        x=0.01,
        ha="left",
        fontsize=8.5,
    )
    fig.legend(handles=LEGEND, loc="outside lower center", ncols=4, fontsize=7, frameon=False)
    return fig
