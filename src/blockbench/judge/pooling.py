"""Several runs on the same hardware as one answer per claim part.

Runs of one grid on one kind of machine (and one JAX release) estimate the same thing; each
run's own interval describes its processes only. Pooled (blockbench.judge.between_runs.pool)
they give one estimate, the runs' mean, whose interval holds the spread between runs: taken
from the between-run study of that kind where one exists, and from the pooled runs' own
spread where three or more are pooled. Two runs on an unstudied machine are too few: the
pooled part says so, and each run keeps its own verdict. Runs on different hardware are
never pooled: they stay side by side.
"""

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from blockbench.judge.between_runs import Pooled, StudyPart, pool
from blockbench.judge.claim import FAILS, HOLDS, INCONCLUSIVE, decide
from blockbench.judge.part_result import NOT_RUN, PartResult
from blockbench.judge.run_view import RunView
from blockbench.judge.uncertainty import Spread, from_scale


@dataclass(frozen=True)
class PooledPart:
    result: PartResult  # the part judged on the pooled estimate and interval
    runs: int  # runs that measured it
    i2: float = math.nan
    tau: float = math.nan  # on the part's analysis scale
    too_few: bool = False  # runs too few to give a pooled interval: each run's own stands


def pool_values(
    runs: Sequence[tuple[Spread, float]], scale: str, study: StudyPart | None = None
) -> Pooled | None:
    """Runs' own (Spread on the analysis scale, processes) pooled; the estimate and bounds
    come back on the natural scale. None where fewer than two runs have an interval. The one
    place where runs are pooled: the claims, the article figures and
    `blockbench compare` all call it."""
    usable = [(s, n) for s, n in runs if s is not None and s.terms]
    if len(usable) < 2:
        return None
    owns, processes = [s for s, _ in usable], [n for _, n in usable]
    got = pool([s.estimate for s in owns], owns, processes, study)
    back = {
        k: None if getattr(got, k) is None else from_scale(getattr(got, k), scale)
        for k in ("estimate", "low", "high")
    }
    return replace(got, **back)


def judged(got: Pooled, condition: str) -> str:
    """The outcome of a pooled value on a part's rule: `inconclusive` where the runs were too
    few to give an interval. The claims' pools and `blockbench compare` read it here."""
    return INCONCLUSIVE if got.low is None else decide(condition, got.low, got.high)


def pool_groups(views: list[RunView]) -> list[list[RunView]]:
    """The runs that are pooled together: same kind of machine and JAX release, 2 or more."""
    groups: dict[tuple, list[RunView]] = defaultdict(list)
    for view in views:
        if view.pool_key is not None:
            groups[view.pool_key].append(view)
    return [members for members in groups.values() if len(members) > 1]


def pool_part(parts: list[PartResult]) -> PooledPart:
    """One part as measured by several runs, pooled. A part no run measured stays not_run;
    a part measured by one run, or at sizes that differ between runs, is that run's (or
    the first run's) own result, said so in its detail."""
    measured = [p for p in parts if p.outcome != NOT_RUN]
    if not measured:
        return PooledPart(parts[0], 0)
    first = measured[0]
    if len(measured) == 1:
        return PooledPart(replace(first, detail=f"measured by one run only; {first.detail}"), 1)
    if any(p.size != first.size for p in measured):
        sizes = sorted({p.size for p in measured if p.size is not None})
        note = f"not pooled: the runs measured it at different sizes {sizes}"
        return PooledPart(replace(first, detail=note), len(measured))
    if first.run_low is None:  # a check: every run must pass
        passed = all(p.outcome == HOLDS for p in measured)
        worst = max(p.measured for p in measured if p.measured is not None)
        pooled = replace(
            first,
            outcome=HOLDS if passed else FAILS,
            measured=worst,
            detail=f"worst of {len(measured)} runs",
        )
        return PooledPart(pooled, len(measured))
    if any(p.spread is None or not p.spread.terms for p in measured):
        note = "not pooled: a run has no usable interval"
        return PooledPart(replace(first, detail=note), len(measured))
    study = next((p.study for p in measured if p.study is not None), None)
    runs = [(p.spread, p.processes) for p in measured]
    got = pool_values(runs, first.scale, study)
    assert got is not None  # every run has a usable interval
    detail = f"{got.how}: I^2 = {got.i2:.0%}, tau = {got.tau:.3g} on the {first.scale} scale"
    pooled = replace(
        first,
        measured=got.estimate,
        ci_low=got.low,
        ci_high=got.high,
        run_low=None,
        run_high=None,
        decided_low=None,
        decided_high=None,
        look=None,
        spread=None,
        study=study,
        outcome=judged(got, first.condition),
        detail=detail,
        steps=(),  # each run's own steps; the pooled part reads the exponent alone
        warnings=sorted({w for p in measured for w in p.warnings}),
    )
    return PooledPart(pooled, got.runs, got.i2, got.tau, too_few=got.low is None)
