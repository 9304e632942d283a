#!/usr/bin/env python3
"""Where the variance of a cell lives on this machine: within one worker process, or
between processes. The answer sets the default `repeats` (docs/studies.md quotes it).

    .venv/bin/python benchmarks/variance_study.py [--processes 8] [--out DIR]

Measures a few representative cells (microsecond jit call, millisecond BLAS and XLA
products, a multi-second loop) with the default sampling, `--processes` times each,
round-robin across cells so that each cell's processes are spread over the study. For each
cell it prints the typical within-process CI half-width of the median, the spread of the
process medians (relative standard deviation and max/min), and the half-width of the
bootstrap CI of the cell estimate with 1, 2, 3, 5 and all processes: what `repeats` buys.
"""

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from blockbench.judge import uncertainty  # noqa: E402
from blockbench.measure import parent  # noqa: E402
from blockbench.records.spec import per_process  # noqa: E402
from blockbench.records.store import read_json  # noqa: E402

CELLS = [
    ("grad_logistic", "grad_jit", 1000),
    ("selu", "jax_jit", 100000),
    ("matmul", "numpy", 1000),
    ("matmul", "jax", 1000),
    ("stencil", "convolve", 16),
]


def measure(cell: tuple[str, str, int], repeat: int, out: Path, sampling: dict) -> dict:
    workload, impl, size = cell
    args = [f"--{k.replace('_', '-')}={v}" for k, v in sampling.items()]
    argv = [
        "--device", "cpu", "--workload", workload, "--impl", impl, "--size", str(size),
        "--phases", "steady", "--repeat", str(repeat), "--out", str(out), *args,
    ]  # fmt: skip
    # `blockbench measure`, called in this process as the GPU kit calls it: its worker is a
    # process of its own
    if parent.main(argv) != 0:
        sys.exit(f"not measured: cpu/{workload}/{impl}/{size}")
    return read_json(out)


def half_width(processes: list[np.ndarray]) -> float:
    """The cell interval's half-width relative to the estimate (upper bound)."""
    return math.expm1(uncertainty.of_cell(processes).half_width())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", type=int, default=8)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    sampling = per_process(config["sampling"], config["repeats"])  # what one process gets
    out = args.out or Path(tempfile.mkdtemp(prefix="variance-study-"))
    samples: dict[tuple, list[np.ndarray]] = {c: [] for c in CELLS}
    within: dict[tuple, list[float]] = {c: [] for c in CELLS}
    for repeat in range(args.processes):
        for cell in CELLS:
            record = measure(
                cell, repeat, out / f"{'-'.join(map(str, cell))}-{repeat}.json", sampling
            )
            steady = record["phases"]["steady"]
            samples[cell].append(np.asarray(steady["samples_s"]))
            low, high = steady["ci95_s"]
            if low is not None and high is not None:
                within[cell].append((high - low) / 2 / steady["median_s"])
    print(f"{args.processes} processes per cell, sampling {sampling}")
    print("cell | within-process CI | between-process rsd | max/min | cell CI, R = 1, 2, 3, 5, all")
    ratios = []
    for cell in CELLS:
        procs = samples[cell]
        medians = np.array([np.median(x) for x in procs])
        rsd = medians.std(ddof=1) / medians.mean()
        w = statistics.median(within[cell]) if within[cell] else float("nan")
        widths = [half_width(procs[:r]) for r in (1, 2, 3, 5) if r <= len(procs)]
        widths.append(half_width(procs))
        ratios.append(rsd / w if w else float("nan"))
        spread = medians.max() / medians.min()
        name = "/".join(map(str, cell))
        cis = ", ".join(f"+-{x:.1%}" for x in widths)
        print(f"{name} | +-{w:.1%} | {rsd:.1%} | {spread:.3f} | {cis}")
    print(f"between/within spread (median over cells): {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
