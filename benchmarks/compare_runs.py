#!/usr/bin/env python3
"""Two runs of the same commit, claim by claim: do the verdicts agree, and does each run's
95% CI cover the other run's estimate? (An A/A check of the whole pipeline.)

    .venv/bin/python benchmarks/compare_runs.py RUN_A/claims.csv RUN_B/claims.csv

Prints a Markdown table and two summary lines: verdicts that flip between reproduced and
not_reproduced (must be none), and how many measured claims have mutually covering CIs.
"""

import argparse
from pathlib import Path

import pandas as pd

from blockbench.claims import covers_each_other, value_ci

DECISIVE = {"reproduced", "not_reproduced"}


def show(r: pd.Series) -> str:
    return value_ci(r["measured"], r["ci_low"], r["ci_high"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    args = p.parse_args()
    a, b = (pd.read_csv(x).set_index("claim_id") for x in (args.a, args.b))
    print("| claim | verdict A | verdict B | A: value [95% CI] | B: value [95% CI] | cover |")
    print("|---|---|---|---|---|---|")
    flips, checked, covering = [], 0, 0
    for claim in a.index:
        ra, rb = a.loc[claim], b.loc[claim]
        both = covers_each_other(ra, rb)
        if both is not None:
            checked += 1
            covering += both
        if {ra["verdict"], rb["verdict"]} == DECISIVE:
            flips.append(claim)
        mark = "" if both is None else ("yes" if both else "no")
        print(f"| {claim} | {ra['verdict']} | {rb['verdict']} | {show(ra)} | {show(rb)} | {mark} |")
    print(f"\nverdicts flipping between reproduced and not_reproduced: {flips or 'none'}")
    print(f"claims whose CIs cover the other run's estimate: {covering} of {checked}")


if __name__ == "__main__":
    main()
