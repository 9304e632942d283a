"""The words of a judgment: values with their intervals, and why a part or a claim is
undecided, as the claims table, the report and the figures print them."""

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from blockbench.judge.part_result import PartResult
from blockbench.judge.studies import MIN_PROCESS_VALUES

if TYPE_CHECKING:
    from blockbench.judge.run_view import RunView


def part_ci(p: PartResult) -> str:
    return value_ci(p.measured, p.ci_low, p.ci_high)


def undecided(p: PartResult) -> str:
    if p.indicative:
        return f"{p.name} {p.outcome} but was {p.setup}: indicative only"
    return f"{p.name}: its 95% CI {part_ci(p)} straddles the rule {p.condition}"


def fmt(x: float | None) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:.3g}"


def value_ci(value: Any, low: Any, high: Any) -> str:
    """`2.1 [1.44, 3.26]`, the value alone where it has no CI, '' where nothing."""
    if _missing(value):
        return ""
    if _missing(low):
        return fmt(value)
    return f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and pd.isna(x))


# What a run's own interval covers: the spread between its worker processes, on this host in
# this hour; not what another day, host or build would measure (docs/statistics.md).
RUN_ONLY = "covers this run's processes only"


def between_note(view: "RunView", parts: list[PartResult]) -> str:
    """What a run's intervals cover, and which between-run study judged them and why, in the
    words claims.md and the report use ('' where the claim has no interval in this run: a
    check, or nothing measured)."""
    if all(p.run_low is None for p in parts):
        return ""
    if view.kind is None:
        return f"{RUN_ONLY}: its cells do not name their machine"
    if view.study is None:
        why = view.study_note or f"no between-run study of this host ({view.kind.describe()})"
        return f"{RUN_ONLY}: {why}"
    studied = [p.study for p in parts if p.study is not None]
    if not studied:
        return f"{RUN_ONLY}: the study of this host lacks this claim"
    study = view.study
    said = f"covers {study.covers()} (study {Path(study.source).name or 'given'})"
    if study.core_speed != "steady" and any(study.too_small(s) for s in studied):
        said += (
            f"; under {MIN_PROCESS_VALUES} process values (runs x processes): on a host "
            "whose cores change speed the study may hold no slow process"
        )
    return said


def part_line(p: PartResult) -> str:
    return (
        f"{p.name}: {part_ci(p) or '-'} vs article {fmt(p.article) or '-'}"
        f" [{p.condition}] -> {p.outcome}"
        + (f", {p.setup}" if p.setup else "")
        + (f" ({p.detail})" if p.detail else "")
    )
