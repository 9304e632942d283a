#!/usr/bin/env python3
"""Coverage of a run's judged interval under a between-run study, by simulation: the
method the claims stage uses (blockbench.judge.between_runs.judged) against the one it
replaced (REML tau^2 added to the run's own variance, Welch-Satterthwaite df) and an oracle
that knows the variances.

    .venv/bin/python benchmarks/interval_coverage.py [--studies 4000] [--out FILE.csv]

A study is k runs of R processes each (or a mixed design), then one new run of R_new
processes is judged. On the log scale a process's value is run effect (normal, sd tau) plus
process noise of sd sigma: normal, Student t on 3 df scaled to sd sigma, or normal with 20%
of processes at twice the time (a host whose cores change speed). The truth is the mean of
a run's value. Every method sees the same simulated studies (common random numbers).
Prints the settings that miss a target and the summary; `--out` writes every setting.
"""

import argparse
import itertools
import math
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from blockbench.judge.uncertainty import half_width, t_quantile

SLOW_SHARE, SLOW_JUMP = 0.2, math.log(2.0)
ARMS = (("normal", 0.02), ("normal", 0.10), ("t3", 0.02), ("t3", 0.10))
ARMS += (("two-speed", 0.03), ("two-speed", 0.10))
TWO_SIDED, ONE_SIDED = 0.94, 0.035  # targets: coverage, and each side's miss


@dataclass(frozen=True)
class Setting:
    runs: int  # k, the study's runs
    design: tuple[int, ...]  # processes of each study run
    new: int  # processes of the judged run
    ratio: float  # tau / (sigma / sqrt(median design))
    arm: str
    sigma: float

    def label(self) -> str:
        design = "mixed" if len(set(self.design)) > 1 else str(self.design[0])
        return (
            f"k={self.runs} R={design} new={self.new} tau/se={self.ratio} {self.arm} {self.sigma}"
        )


def processes(rng: np.random.Generator, s: Setting, shape: tuple[int, ...]) -> np.ndarray:
    if s.arm == "t3":
        return s.sigma * rng.standard_t(3, shape) / math.sqrt(3.0)
    noise = s.sigma * rng.standard_normal(shape)
    if s.arm == "two-speed":
        noise += SLOW_JUMP * (rng.random(shape) < SLOW_SHARE)
    return noise


def run_values(rng: np.random.Generator, s: Setting, tau: float, r: int, n: int) -> tuple:
    """n runs of r processes: (value, own standard error) of each."""
    x = tau * rng.standard_normal((n, 1)) + processes(rng, s, (n, r))
    return x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(r)


@dataclass(frozen=True)
class Tally:
    low_miss: float  # truth below the interval
    high_miss: float  # truth above it
    width: float  # median half-width

    @property
    def coverage(self) -> float:
        return 1 - self.low_miss - self.high_miss


def tally(truth: float, centre: np.ndarray, half: np.ndarray) -> Tally:
    return Tally(
        float(np.mean(truth < centre - half)),
        float(np.mean(truth > centre + half)),
        float(np.median(half)),
    )


def sum_quantile(df1: float, df2: float, ratios: np.ndarray) -> np.ndarray:
    """Quantile of T(df1) + r T(df2) for each r, from the exact one on a grid of r
    (blockbench.judge.uncertainty.half_width), interpolated in log r."""
    grid = np.geomspace(1e-3, 1e3, 49)
    q = np.array([half_width(((1.0, df1), (float(r), df2))) for r in grid]) / (1 + grid)
    r = np.clip(ratios, grid[0], grid[-1])
    out = np.interp(np.log(r), np.log(grid), q) * (1 + ratios)
    small, large = ratios < grid[0], ratios > grid[-1]
    out[small] = t_quantile(df1) + 0 * ratios[small]
    out[large] = ratios[large] * t_quantile(df2)
    return out


def new_method(
    s: Setting, ys: np.ndarray, ses: np.ndarray, y: np.ndarray, se: np.ndarray
) -> np.ndarray:
    """between_runs.judged, vectorised: the widest of the run's own interval, the study's
    S t_{k-1} with c se t_own, and S t_{k-1} with the study's own lacking within term."""
    spread = np.maximum(ys.std(axis=1, ddof=1), 1e-300)
    own = se * t_quantile(s.new - 1.0)
    design = float(np.median(s.design))
    c = math.sqrt(max(0.0, 1 - s.new / design))
    if c == 0:
        return np.maximum(spread * t_quantile(s.runs - 1.0), own)
    with_own = spread * sum_quantile(s.runs - 1.0, s.new - 1.0, c * se / spread)
    lacking = np.sqrt((ses**2).mean(axis=1) * design * (1 / s.new - 1 / design))
    with_study = spread * sum_quantile(s.runs - 1.0, s.runs * (design - 1), lacking / spread)
    return np.maximum(np.maximum(with_own, with_study), own)


def old_method(ys: np.ndarray, ses: np.ndarray, se: np.ndarray, new: int) -> np.ndarray:
    """What the claims stage did before: tau^2 by REML (on a grid), its Satterthwaite df in
    [1, k - 1], added to the run's own variance with Welch-Satterthwaite df, never narrower
    than the run's own interval."""
    n, k = ys.shape
    s2 = ses**2
    top = ys.var(axis=1, ddof=1) * 10 + s2.max(axis=1) + 1e-12
    grid = np.linspace(0, 1, 241)[None, :, None] * top[:, None, None]  # n x g x 1
    v = s2[:, None, :] + grid
    w = 1 / v
    mu = (w * ys[:, None, :]).sum(-1) / w.sum(-1)
    nll = (
        np.log(v).sum(-1) + np.log(w.sum(-1)) + (w * (ys[:, None, :] - mu[..., None]) ** 2).sum(-1)
    )
    tau2 = grid[np.arange(n), nll.argmin(axis=1), 0]
    w = 1 / (s2 + tau2[:, None])
    info = 0.5 * ((w**2).sum(1) - 2 * (w**3).sum(1) / w.sum(1) + ((w**2).sum(1) / w.sum(1)) ** 2)
    tau_df = np.clip(2 * tau2**2 * info, 1.0, k - 1.0)
    total = se**2 + tau2
    parts = se**4 / (new - 1) + np.where(tau2 > 0, tau2**2 / tau_df, 0.0)
    df = np.where(parts > 0, total**2 / np.maximum(parts, 1e-300), np.inf)
    q = stats.t.ppf(0.975, np.minimum(df, 1e6))
    return np.maximum(q * np.sqrt(total), t_quantile(new - 1.0) * se)


def simulate(s: Setting, studies: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    typical = float(np.median(s.design))
    tau = s.ratio * s.sigma / math.sqrt(typical)
    study = [run_values(rng, s, tau, r, studies) for r in s.design]
    ys = np.column_stack([v for v, _ in study])
    ses = np.column_stack([e for _, e in study])
    y, se = run_values(rng, s, tau, s.new, studies)
    truth = SLOW_SHARE * SLOW_JUMP if s.arm == "two-speed" else 0.0
    within = s.sigma**2 + (
        SLOW_SHARE * (1 - SLOW_SHARE) * SLOW_JUMP**2 if s.arm == "two-speed" else 0
    )
    oracle = 1.96 * math.sqrt(tau**2 + within / s.new)
    new, old = (
        tally(truth, y, new_method(s, ys, ses, y, se)),
        tally(truth, y, old_method(ys, ses, se, s.new)),
    )
    return {
        "setting": s.label(),
        "runs": s.runs,
        "design": "mixed" if len(set(s.design)) > 1 else s.design[0],
        "new_run": s.new,
        "tau_ratio": s.ratio,
        "arm": s.arm,
        "sigma": s.sigma,
        "process_values": sum(s.design),
        "studies": studies,
        "coverage": new.coverage,
        "low_miss": new.low_miss,
        "high_miss": new.high_miss,
        "width_vs_oracle": new.width / oracle,
        "old_coverage": old.coverage,
        "old_worst_side": max(old.low_miss, old.high_miss),
        "old_width_vs_oracle": old.width / oracle,
    }


def passes(row: dict[str, object]) -> bool:
    return row["coverage"] >= TWO_SIDED and max(row["low_miss"], row["high_miss"]) <= ONE_SIDED


def near(row: dict[str, object]) -> bool:
    """Within two simulation standard errors of a target: re-run with five times the studies."""
    n = row["studies"]
    se2 = 2 * math.sqrt(0.95 * 0.05 / n)
    side = 2 * math.sqrt(ONE_SIDED * (1 - ONE_SIDED) / n)
    worst = max(row["low_miss"], row["high_miss"])
    return abs(row["coverage"] - TWO_SIDED) < se2 or abs(worst - ONE_SIDED) < side


def settings(
    runs=(3, 4, 5), designs=((3,), (5,), (6,), "mixed"), new=(2, 3, 5, 6, 10),
    ratios=(0, 0.25, 0.5, 1, 2, 4), arms=ARMS,
):  # fmt: skip
    for k, design, r_new, ratio, (arm, sigma) in itertools.product(
        runs, designs, new, ratios, arms
    ):
        each = (
            tuple(itertools.islice(itertools.cycle((3, 5, 6)), k))
            if design == "mixed"
            else design * k
        )
        yield Setting(k, each, r_new, ratio, arm, sigma)


def run(all_settings, studies: int) -> pd.DataFrame:
    rows = []
    for i, s in enumerate(all_settings):
        row = simulate(s, studies, seed=i)
        if not passes(row) and near(row):
            row = simulate(s, 5 * studies, seed=10_000 + i)
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--studies", type=int, default=4000)
    p.add_argument("--out", help="CSV of every setting")
    args = p.parse_args()
    table = run(list(settings()), args.studies)
    if args.out:
        table.to_csv(args.out, index=False)
    table["passes"] = [passes(r) for r in table.to_dict("records")]
    # the exception no method meets from the data alone: a small study on a two-speed host
    rare = (table["arm"] == "two-speed") & (table["sigma"] < 0.05) & (table["process_values"] < 15)
    for name, part in (
        ("every other setting", table[~rare]),
        ("two-speed, small spread, < 15 process values", table[rare]),
    ):
        print(
            f"{name}: {int(part['passes'].sum())} of {len(part)} settings meet coverage >= "
            f"{TWO_SIDED} and each side <= {ONE_SIDED}; coverage min {part['coverage'].min():.3f} "
            f"(before: {part['old_coverage'].min():.3f}); median width / oracle "
            f"{part['width_vs_oracle'].median():.2f} "
            f"(before: {part['old_width_vs_oracle'].median():.2f})"
        )
    failed = table[~table["passes"] & ~rare]
    for row in failed.itertuples():
        print(
            f"  misses: {row.setting}: {row.coverage:.3f} "
            f"({row.low_miss:.3f} / {row.high_miss:.3f})"
        )
    sys.exit(1 if len(failed) else 0)


if __name__ == "__main__":
    main()
