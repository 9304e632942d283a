"""How every figure is themed and written: one look for all of them, and files that stay the
same where the data does (no date in them, SVG ids from the figure's name), so that a rerun
of the tables stage leaves git with nothing to show."""

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns


def theme(name: str) -> None:
    """Before a figure is drawn: its fonts and grid, and text that stays text in the SVG
    (searchable, editable in a paper)."""
    sns.set_theme(style="whitegrid", context="paper")
    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = name


def save(fig: plt.Figure, outputs: Sequence[str | Path], dpi: int = 150) -> None:
    """Every file of one figure (PNG, SVG), then the figure closed."""
    for out in outputs:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=dpi, bbox_inches="tight", pad_inches=0.04, metadata={"Date": None})
    plt.close(fig)
