#!/usr/bin/env python3
"""Does a cell's time change when its process measures only the phases its claims read
(`--alone`, by default the steady phase, after the correctness check's call) instead of every
phase? An A/B in fresh worker processes, the workflow's own measuring function and the
default grid's sampling rule.

    .venv/bin/python benchmarks/steady_alone.py [--cell matmul/jax_numpy_input/2000]
        [--alone steady] [--pairs 8] [--out /tmp/steady-alone]

Each pair measures one process of each plan, the order flipped from pair to pair, so drift
of the machine falls on both alike. For each phase of `--alone` it prints each plan's
medians (one a process), their median and range, and a two-sided Mann-Whitney p; and the
seconds a process took. docs/method.md ("Steady time alone") quotes what it found.
"""

import argparse
import json
import statistics
import time
from pathlib import Path

from scipy import stats

from blockbench.measure.parent import measure
from blockbench.pipeline import grid, kit_config
from blockbench.records.params import MeasureParams
from blockbench.records.spec import StopRule

ROOT = Path(__file__).resolve().parents[1]


def rule_of(cell: dict) -> StopRule:
    """The sampling rule the default grid gives each process of `cell`."""
    config = kit_config.load_config(ROOT / "config/config.yaml")
    settings = grid.settings(config, kit_config.claims(config))
    return StopRule(**settings[grid.Cell(**cell)].per_process())


def one(cell: dict, plan: str, phases: tuple[str, ...] | None, repeat: int, out: Path) -> dict:
    """The medians of `phases` (None: every phase) of one fresh process, and its wall time."""
    path = out / plan / f"{repeat}.json"
    params = MeasureParams(rule=rule_of(cell), phases=phases)
    started = time.time()
    if measure(cell, repeat, path, "steady-alone", params) != 0:
        raise SystemExit(f"{cell} {plan} {repeat}: not measured")
    record = json.loads(path.read_text())
    return {p: r["median_s"] for p, r in record["phases"].items()} | {"wall": time.time() - started}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", default="matmul/jax_numpy_input/2000")
    ap.add_argument("--alone", default="steady", help="comma-separated phases")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("/tmp/steady-alone"))
    args = ap.parse_args()
    workload, impl, size = args.cell.split("/")
    cell = {"device": "cpu", "workload": workload, "impl": impl, "size": int(size)}
    out = args.out / args.cell.replace("/", "-")
    plans = {"every": None, "alone": tuple(args.alone.split(","))}
    got: dict[str, list[dict]] = {plan: [] for plan in plans}
    for i in range(args.pairs):
        for plan in list(plans)[:: 1 if i % 2 == 0 else -1]:
            got[plan].append(one(cell, plan, plans[plan], i, out))
    print(
        args.cell,
        {
            plan: f"{statistics.mean(r['wall'] for r in got[plan]):.2f} s a process"
            for plan in plans
        },
    )
    for phase in plans["alone"]:
        values = {plan: [r[phase] for r in runs] for plan, runs in got.items()}
        for plan, xs in values.items():
            print(
                f"  {phase} {plan:5s}: median {statistics.median(xs) * 1e3:.4g} ms, range "
                f"{min(xs) * 1e3:.4g} to {max(xs) * 1e3:.4g} ms; "
                + ", ".join(f"{x * 1e3:.4g}" for x in xs)
            )
        p = stats.mannwhitneyu(*values.values()).pvalue
        print(f"  {phase}: Mann-Whitney, two-sided: p = {p:.2g}")


if __name__ == "__main__":
    main()
