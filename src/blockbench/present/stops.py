"""Why each part of a run stopped taking rounds, as the claims tables and pages say it: the
decisions of blockbench.judge.stopping joined to the parts, each stop in words."""

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from blockbench.judge.stopping import (
    BETWEEN,
    BUDGET,
    CAP,
    DECIDED,
    INDICATIVE,
    NOT_MEASURED,
    PRECISE,
    UNDECIDED,
)

# Said here, never by the decision: a part it projected precise whose measured interval
# came out wider than its target (`with_stops`)
SHORT = "short of its target"

# What each reason means, for the report's legend.
REASONS = {
    PRECISE: "its own interval is within its precision target",
    SHORT: "it took the rounds its first stage's spread asked for, and its own interval came "
    "out a little wider than the target (a fit over several blocks, whose interval the "
    "decision can only project)",
    BETWEEN: "a between-run study's term is wider than the target and than its own interval: "
    "more rounds would not narrow the judged interval",
    CAP: "its block reached max_rounds first",
    BUDGET: "the run's budget_minutes ran out first",
    NOT_MEASURED: "a cell it needs did not measure fine",
    INDICATIVE: "measured off its article's size, where no number of rounds can decide it: "
    "its first stage alone",
    DECIDED: "its first stage's interval, at 97.5%, already meets or misses its rule",
    UNDECIDED: "its first stage's interval, at 97.5%, straddled its rule: it took every round "
    "up to max_rounds, and was judged on all of them, at 97.5% again",
}


def stops_table(decisions: Mapping[str, dict[str, Any]]) -> pd.DataFrame:
    """Each part's stop in each run, from the decisions by run label (a merged run shown
    under a label of its own is keyed by that label)."""
    columns = ["run_label", "claim_id", "part", "stopped", "rounds", "precision"]
    rows = [
        {"run_label": label, **{c: p.get(c) for c in columns[1:]}}
        for label, decision in decisions.items()
        for p in decision["parts"]
    ]
    return pd.DataFrame(rows, columns=columns)


def _own_half(parts: pd.DataFrame) -> pd.Series:
    """Each part's own half-width on its analysis scale, from its run interval."""
    low, high = parts["run_ci_low"].astype(float), parts["run_ci_high"].astype(float)
    logs = (high / low).where((low > 0) & (parts["scale"] == "log"))
    return (np.log(logs) / 2).where(parts["scale"] == "log", (high - low) / 2)


def said(stopped: Any, rounds: Any, target: Any = "") -> str:
    """'precise after 4 rounds (to x1.15)': one part's stop in words, with its target where
    known ('' : no decision, a fixed design)."""
    if not isinstance(stopped, str) or not stopped:
        return ""
    if stopped == NOT_MEASURED:
        return stopped
    to = f" (to {target})" if isinstance(target, str) and target else ""
    return f"{stopped} after {int(rounds)} rounds{to}"


def target_words(precision: Any, scale: Any) -> str:
    """A part's target as a reader reads it: x1.15 on a ratio, +-0.25 on an exponent."""
    if not isinstance(precision, int | float) or math.isnan(precision):
        return ""
    return f"x{math.exp(precision):.3g}" if scale == "log" else f"+-{precision:.3g}"


def with_stops(
    table: pd.DataFrame, parts: pd.DataFrame, decisions: Mapping[str, dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The claims and parts tables with why each part stopped (`stopped`, `rounds`, and its
    `target` in words), and per claim its parts' stops in words."""
    parts = parts.merge(stops_table(decisions), how="left", on=["run_label", "claim_id", "part"])
    # the decision projected the widths: a part is precise where the measured one is within
    # the target, whatever was projected, and not where it came out wider
    own = _own_half(parts)
    reached = own <= parts["precision"].astype(float) * (1 + 1e-9)
    parts["stopped"] = (
        parts["stopped"]
        .mask(reached & parts["stopped"].notna(), PRECISE)
        .mask(~reached & own.notna() & (parts["stopped"] == PRECISE), SHORT)
    )
    parts["target"] = list(map(target_words, parts.pop("precision"), parts["scale"]))
    words = parts.assign(
        said=[
            f"{r.part}: {s}" if s and r.stopped != NOT_MEASURED else ""  # the verdict says why
            for r, s in zip(
                parts.itertuples(),
                map(said, parts["stopped"], parts["rounds"], parts["target"]),
                strict=True,
            )
        ]
    )
    per_claim = words.groupby(["run_label", "claim_id"])["said"].agg(
        lambda x: "; ".join(s for s in x if s)
    )
    table = table.merge(
        per_claim.rename("stopped").reset_index(), how="left", on=["run_label", "claim_id"]
    )
    return table, parts
