"""`blockbench compare`: several runs of the same commit, claim by claim: do the verdicts
agree, does each run's 95% CI cover every other run's estimate, and what do the runs say
pooled? (An A/A check of the whole pipeline.)

    blockbench compare RUN_A/claims.csv RUN_B/claims.csv [...]
    blockbench compare MERGED/claims.csv   # several runs in one

Prints a Markdown table (each run's verdict and value, the pooled headline value with its
CI and I^2 (blockbench.judge.pooling), and the pooled verdict: of every part where the claims
stage pooled the runs, a merged claims.csv, else of the headline part) and summary lines:
verdicts that flip between reproduced and not_reproduced (must be none), and the share of
ordered run pairs (a, b) where a's CI covers b's value.
The CIs compared are the ones each run was judged on (widened by a between-run study where
its machine had one); the pooled value uses each run's own terms (`run_spread`).
"""

import argparse
import itertools
from pathlib import Path

import pandas as pd

from blockbench.judge.claim_rules import decide
from blockbench.judge.pooling import pool_values
from blockbench.judge.scales import on_scale
from blockbench.judge.uncertainty import Spread
from blockbench.judge.verdicts import covers
from blockbench.judge.wording import value_ci

DECISIVE = {"reproduced", "not_reproduced"}


def show(r: pd.Series) -> str:
    return value_ci(r["measured"], r["ci_low"], r["ci_high"]) or "-"


def pooled(rows: list[pd.Series]) -> tuple[str, str, str]:
    """(value [CI], I^2, the headline part's outcome) over the runs with an own interval."""
    if "run_spread" not in rows[0]:
        return "-", "-", "-"
    runs = [
        (Spread.from_text(on_scale(r["measured"], r["scale"]), r["run_spread"]), r["processes"])
        for r in rows
        if isinstance(r["run_spread"], str)
    ]
    got = pool_values(runs, rows[0]["scale"])
    if got is None or got.low is None:
        return "-" if got is None else got.how, "-", "-"
    outcome = decide(rows[0]["condition"], got.low, got.high)
    return value_ci(got.estimate, got.low, got.high), f"{got.i2:.0%}", outcome


def comparison(table: pd.DataFrame) -> list[str]:
    """The Markdown table and the two summary lines for the runs' rows of claims.csv."""
    labels = list(dict.fromkeys(table["run_label"]))
    head = " | ".join(f"run {label}" for label in labels)
    lines = [
        f"| claim | {head} | pooled [95% CI] | I^2 | pooled verdict | covered pairs |",
        "|---|" + "---|" * len(labels) + "---|---|---|---|",
    ]
    flips, pairs, covering = [], 0, 0
    for claim, group in table.groupby("claim_id", sort=True):
        rows = [r for _, r in group.drop_duplicates("run_label").iterrows()]
        if {r["verdict"] for r in rows} >= DECISIVE:
            flips.append(claim)
        held = [h for a, b in itertools.permutations(rows, 2) if (h := covers(a, b)) is not None]
        pairs += len(held)
        covering += sum(held)
        value, i2, outcome = pooled(rows)
        judged = group["pooled_verdict"].dropna() if "pooled_verdict" in group else []
        if len(judged) and judged.iloc[0]:  # the claims stage pooled every part
            outcome = f"{judged.iloc[0]} (all parts)"
        cells = " | ".join(f"{r['verdict']}: {show(r)}" for r in rows)
        cover = f"{sum(held)}/{len(held)}" if held else "-"
        lines.append(f"| {claim} | {cells} | {value} | {i2} | {outcome} | {cover} |")
    share = f" ({covering / pairs:.0%})" if pairs else ""
    return [
        *lines,
        "",
        f"verdicts flipping between reproduced and not_reproduced: {flips or 'none'}",
        f"run pairs (a, b) where a's CI covers b's value: {covering} of {pairs}{share}",
    ]


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
