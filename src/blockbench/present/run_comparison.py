"""`blockbench compare`: several runs of the same commit, claim by claim: do the verdicts
agree, does each run's 95% CI cover every other run's estimate, and what do the runs say
pooled? (An A/A check of the whole pipeline.)

    blockbench compare RUN_A/claims.csv RUN_B/claims.csv [...]
    blockbench compare MERGED/claims.csv   # several runs in one

Prints a Markdown table (each run's verdict and value, the pooled headline value with its
CI and I^2 (blockbench.judge.pooling), and the pooled verdict: of every part where the claims
stage pooled the runs, a merged claims.csv, else of the headline part) and summary lines.
A claim's headline is the part its verdict rests on, as the claims table names it (`metric`,
blockbench.judge.verdicts.headline): runs whose headlines are other parts are set side by
side, never pooled or held against each other's values. The summary lines are:
verdicts that flip between reproduced and not_reproduced (must be none), and the share of
ordered run pairs (a, b) where a's CI covers b's value, beside the share expected of runs
that differ in nothing (`expected_capture`: a run's CI holds another run's value less often
than the truth).
The CIs compared are each run's 95% CIs (widened by a between-run study where its machine
had one; a part decided at two looks keeps its 97.5% interval apart, `decided_low`); the
pooled value uses each run's own standard error (`run_spread`). The same
test, run by run, is the claims table's `other_runs` (`with_other_runs`), which claims.md and
the report list under the runs that disagree.
"""

import argparse
import itertools
import math
from pathlib import Path
from typing import Any

import pandas as pd
from scipy import special

from blockbench.judge.pooling import judged, pool_values
from blockbench.judge.uncertainty import Spread, on_scale, t_quantile
from blockbench.judge.verdicts import value_ci

DECISIVE = {"reproduced", "not_reproduced"}


def show(r: pd.Series, named: bool = False) -> str:
    """A run's headline value [CI], with its part's name where `named`."""
    said = value_ci(r["measured"], r["ci_low"], r["ci_high"]) or "-"
    return f"{r['metric']} {said}" if named else said


def same_part(a: Any, b: Any) -> bool:
    """Whether two runs' rows headline one part (older tables name none: taken as one)."""
    return a.get("metric") == b.get("metric")


def pooled(rows: list[pd.Series]) -> tuple[str, str, str]:
    """(value [CI], I^2, the headline part's outcome) over the runs with an own interval,
    where every run's headline is the same part."""
    if "run_spread" not in rows[0]:
        return "-", "-", "-"
    if not all(same_part(rows[0], r) for r in rows):
        return "-: the runs' verdicts rest on different parts", "-", "-"
    runs = [
        (Spread.from_text(on_scale(r["measured"], r["scale"]), r["run_spread"]), r["processes"])
        for r in rows
        if isinstance(r["run_spread"], str)
    ]
    got = pool_values(runs, rows[0]["scale"])
    if got is None or got.low is None:
        return "-" if got is None else got.how, "-", "-"
    return (
        value_ci(got.estimate, got.low, got.high),
        f"{got.i2:.0%}",
        judged(got, rows[0]["condition"]),
    )


def comparison(table: pd.DataFrame) -> list[str]:
    """The Markdown table and the two summary lines for the runs' rows of claims.csv."""
    labels = list(dict.fromkeys(table["run_label"]))
    head = " | ".join(f"run {label}" for label in labels)
    lines = [
        f"| claim | {head} | pooled [95% CI] | I^2 | pooled verdict | covered pairs |",
        "|---|" + "---|" * len(labels) + "---|---|---|---|",
    ]
    flips, held_all, expected = [], [], 0.0
    for claim, group in table.groupby("claim_id", sort=True):
        rows = [r for _, r in group.drop_duplicates("run_label").iterrows()]
        if {r["verdict"] for r in rows} >= DECISIVE:
            flips.append(claim)
        held = []
        for a, b in itertools.permutations(rows, 2):
            if same_part(a, b) and (h := covers(a, b)) is not None:
                held.append(h)
                expected += expected_capture(a.get("processes"), b.get("processes"))
        held_all += held
        value, i2, outcome = pooled(rows)
        judged = group["pooled_verdict"].dropna() if "pooled_verdict" in group else []
        if len(judged) and judged.iloc[0]:  # the claims stage pooled every part
            outcome = f"{judged.iloc[0]} (all parts)"
        named = not all(same_part(rows[0], r) for r in rows)
        cells = " | ".join(f"{r['verdict']}: {show(r, named)}" for r in rows)
        cover = f"{sum(held)}/{len(held)}" if held else "-"
        lines.append(f"| {claim} | {cells} | {value} | {i2} | {outcome} | {cover} |")
    pairs, covering = len(held_all), sum(held_all)
    share = (
        f" ({covering / pairs:.0%}); runs that differ in nothing: about {expected:.1f} "
        f"({expected / pairs:.0%}), as each CI is of its own run's processes"
        if pairs
        else ""
    )
    return [
        *lines,
        "",
        f"verdicts flipping between reproduced and not_reproduced: {flips or 'none'}",
        f"run pairs (a, b) where a's CI covers b's value: {covering} of {pairs}{share}",
    ]


def expected_capture(n_a: Any, n_b: Any) -> float:
    """How often a 95% t interval of `n_a` processes holds another run's value of `n_b`, where
    both runs measure one quantity with one spread between processes: less than 95%, as
    b's value carries its own error (91% for 3 and 3 processes, 83% for many). b's value less
    a's mean, over a's standard error, is a t on n_a - 1 df scaled by sqrt(1 + n_a / n_b).
    A count not recorded counts as many processes: the least capture."""
    n_a, n_b = (math.nan if n is None else float(n) for n in (n_a, n_b))
    if not (n_a >= 2 and n_b >= 1):  # NaN too
        return float(2 * special.ndtr(t_quantile(math.inf) / math.sqrt(2)) - 1)
    df, shrink = n_a - 1, math.sqrt(n_b / (n_a + n_b))
    return float(2 * special.stdtr(df, t_quantile(df) * shrink) - 1)


def covers(a: Any, b: Any) -> bool | None:
    """Whether measurement a's 95% CI holds b's value (None: a has no CI, b no value)."""
    if pd.isna(a.ci_low) or pd.isna(a.ci_high) or pd.isna(b.measured):
        return None
    return bool(a.ci_low <= b.measured <= a.ci_high)


def covers_each_other(a: Any, b: Any) -> bool | None:
    """Whether each of two measurements' 95% CIs holds the other's value (None: a CI is
    missing). Runs that differ in nothing fail this for about one part in six
    (`expected_capture`, both ways); parts that fail it run after run differ by more than
    either run's CI says, so neither CI is the uncertainty of the setup."""
    both = (covers(a, b), covers(b, a))
    return None if None in both else all(both)


def disagreements(table: pd.DataFrame) -> pd.Series:
    """Per row of the claims table: where another run on the same hardware and JAX release
    measured the same claim's headline part outside this run's CI, or reached another
    verdict (its value then named by its part where that is another), say so
    (another release is an axis, not a disagreement). The same hardware is the same kind of
    machine, as pooling defines it (`machine`; older tables: the device models). Where no
    between-run study judges a run's CI, it holds its processes' spread only, not what
    changes between runs, and merged runs are where that shows."""
    notes = pd.Series("", index=table.index, dtype=object)
    key = "machine" if "machine" in table else "device_model"
    measured = table[table[key].fillna("") != ""]
    for _, same in measured.groupby(["claim_id", key, "jax_version"]):
        for i, a in same.iterrows():
            said = []
            for _, b in same.drop(index=i).iterrows():
                differ = same_part(a, b) and covers_each_other(a, b) is False
                if differ or a["verdict"] != b["verdict"]:
                    value = show(b, named=not same_part(a, b))
                    said.append(
                        f"run {b['run_label']} on the same hardware measured {value} "
                        f"({b['verdict']})"
                        + (": one run's value lies outside the other's CI" if differ else "")
                    )
            notes[i] = "; ".join(said)
    return notes


def with_other_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The claims table (blockbench.judge.verdicts.judge) with `other_runs`: where each run
    disagrees with another on the same hardware, as claims.csv, claims.md and the report
    say it."""
    if not table.empty:
        table["other_runs"] = disagreements(table)
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="blockbench compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("runs", type=Path, nargs="+", help="claims.csv of each run, or of several")
    args = p.parse_args(argv)
    table = pd.concat([pd.read_csv(x) for x in args.runs], ignore_index=True)
    print(*comparison(table), sep="\n")
    return 0
