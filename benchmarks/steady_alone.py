#!/usr/bin/env python3
"""Does a cell's steady time change when its process measures the steady phase alone (after
the correctness check's call) instead of after every other phase? An A/B in fresh worker
processes, the workflow's own measuring function and the default grid's sampling rule.

    .venv/bin/python benchmarks/steady_alone.py [--cell matmul/jax_numpy_input/2000]
        [--pairs 8] [--out /tmp/steady-alone]

Each pair measures one process of each plan, the order flipped from pair to pair, so drift
of the machine falls on both alike. It prints each plan's steady medians (one a process),
their median and range, the seconds a process took, and a two-sided Mann-Whitney p for the
medians. docs/method.md ("Steady time alone") quotes what it found.
"""

import argparse
import json
import statistics
import time
from pathlib import Path

from scipy import stats

from blockbench.measure.parent import measure
from blockbench.records.params import MeasureParams
from blockbench.records.spec import StopRule

# The default grid's rule for a process of a 3-process cell (config/config.yaml's sampling,
# its times and samples shared over the first stage's 3 processes: docs/method.md)
RULE = StopRule(min_samples=3, min_time_s=0.05 / 3, max_time_s=0.1 / 3)
PLANS = {"every": None, "alone": ("steady",)}


def one(cell: dict, plan: str, repeat: int, out: Path) -> tuple[float, float]:
    """The steady median of one fresh process of `plan`, and its wall seconds."""
    path = out / plan / f"{repeat}.json"
    params = MeasureParams(rule=RULE, phases=PLANS[plan])
    started = time.time()
    if measure(cell, repeat, path, "steady-alone", params) != 0:
        raise SystemExit(f"{cell} {plan} {repeat}: not measured")
    record = json.loads(path.read_text())
    return record["phases"]["steady"]["median_s"], time.time() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", default="matmul/jax_numpy_input/2000")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("/tmp/steady-alone"))
    args = ap.parse_args()
    workload, impl, size = args.cell.split("/")
    cell = {"device": "cpu", "workload": workload, "impl": impl, "size": int(size)}
    out = args.out / args.cell.replace("/", "-")
    got: dict[str, list[tuple[float, float]]] = {plan: [] for plan in PLANS}
    for i in range(args.pairs):
        for plan in list(PLANS)[:: 1 if i % 2 == 0 else -1]:
            got[plan].append(one(cell, plan, i, out))
    print(args.cell)
    for plan, runs in got.items():
        medians = [m for m, _ in runs]
        print(
            f"  {plan:5s}: median {statistics.median(medians) * 1e3:.4g} ms, range "
            f"{min(medians) * 1e3:.4g} to {max(medians) * 1e3:.4g} ms; "
            f"{statistics.mean(s for _, s in runs):.2f} s a process; "
            + ", ".join(f"{m * 1e3:.4g}" for m in medians)
        )
    p = stats.mannwhitneyu(*([m for m, _ in got[plan]] for plan in PLANS)).pvalue
    print(f"  Mann-Whitney, two-sided: p = {p:.2g}")


if __name__ == "__main__":
    main()
