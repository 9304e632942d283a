#!/usr/bin/env python3
"""Coverage of rounds on demand (blockbench.judge.stopping), by simulation: the intervals
issue's process model (benchmarks/interval_coverage.py: normal, t on 3 df, a two-speed host)
with the two-stage rule added, against the rule it replaced on paper ("add a round while the
interval is wider than the target").

    .venv/bin/python benchmarks/stopping_coverage.py [--runs 4000] [--studies 400]
        [--precision 1.15]   (a claim-sized target, e.g. A1's 1.913; --studies 0: skip 2.)

1. A run's own interval: `first` rounds, then the rounds Stein's rule asks (up to a cap), the
   interval built on the first stage's spread (blockbench.judge.uncertainty.of_processes); the
   sequential rule, whose interval is the ordinary t over every round; and a fixed design of
   `first` processes. On a two-speed host no run's own interval covers a slow mode its
   processes did not meet, whatever the rule: the between-run study (2.) is what covers it.
2. A run judged with a study: k = 5 study runs made under the rule with no study, then a new
   run under the rule with the study's floor (it stops once its own interval is inside the
   study's term), judged by blockbench.judge.between_runs.judged with the study's median
   rounds as its design. The truth is the mean over runs.
3. Rounds that could decide a part (two_looks): the two-look rule shipped for a part of one
   t term, against Stein's and against aiming at the bound, the rule rejected before it.
Prints each setting's coverage and each side's miss; the targets are interval_coverage's.
"""

import argparse
import itertools
import math

import numpy as np
from interval_coverage import ONE_SIDED, SLOW_JUMP, SLOW_SHARE, TWO_SIDED, Setting, processes

from blockbench.judge.between_runs import StudyPart, judged
from blockbench.judge.part_evaluators import LOOK_CONFIDENCE as LOOK
from blockbench.judge.stopping import Need, Unit, allocate
from blockbench.judge.uncertainty import Spread, t_quantile

ARMS = (("normal", 0.05), ("normal", 0.15), ("normal", 0.3), ("t3", 0.15))
ARMS += (("two-speed", 0.03), ("two-speed", 0.1))


def stein_runs(
    rng: np.random.Generator, s: Setting, first: int, most: int, n: int, d: float, floor=0.0
):
    """n runs under the two-stage rule to the target d: (value, own Spread, rounds) of each."""
    unit = {"u": Unit("u", (), first, most)}
    out = []
    x = processes(rng, s, (n, most))
    for row in x:
        head = row[:first]
        scale = float(head.std(ddof=1))
        need = Need("X", "x", ("u",), t_quantile(first - 1) * scale / math.sqrt(first), floor, d)
        rounds = allocate(unit, [need], None)["u"]
        own = Spread(float(row[:rounds].mean()), ((scale / math.sqrt(rounds), first - 1.0),))
        out.append((own.estimate, own, rounds))
    return out


def sequential(
    rng: np.random.Generator, s: Setting, first: int, most: int, n: int, d: float
) -> tuple[np.ndarray, np.ndarray]:
    """(centre, half) of runs that add a round while the ordinary t interval is too wide."""
    x = processes(rng, s, (n, most))
    centre, half = np.empty(n), np.empty(n)
    for i, row in enumerate(x):
        for r in range(first, most + 1):
            h = t_quantile(r - 1) * row[:r].std(ddof=1) / math.sqrt(r)
            if h <= d or r == most:
                centre[i], half[i] = row[:r].mean(), h
                break
    return centre, half


def truth(arm: str) -> float:
    """The mean of a process's value (a two-speed host's slow share shifts it)."""
    return SLOW_SHARE * SLOW_JUMP if arm == "two-speed" else 0.0


def shares(centre, half) -> tuple[float, float, float]:
    low, high = float(np.mean(centre - half > 0)), float(np.mean(centre + half < 0))
    return 1 - low - high, low, high


def verdict(cov: float, low: float, high: float) -> str:
    ok = cov >= TWO_SIDED and max(low, high) <= ONE_SIDED
    return "ok" if ok else "MISS"


def own_intervals(runs: int, d: float) -> None:
    print(f"1. a run's own interval to x{math.exp(d):.3g} (coverage, low miss, high miss; rounds)")
    for (arm, sigma), first in itertools.product(ARMS, (3, 4, 6)):
        s = Setting(1, (first,), first, 0.0, arm, sigma)
        rng = np.random.default_rng(1)
        got = stein_runs(rng, s, first, 12, runs, d)
        centre = np.array([g[0] for g in got])
        half = np.array([g[1].half_width() for g in got])
        mean_shift = truth(arm)
        cov = shares(centre - mean_shift, half)
        seq_centre, seq_half = sequential(rng, s, first, 12, runs, d)
        seq = shares(seq_centre - mean_shift, seq_half)
        fixed_x = processes(rng, s, (runs, first))
        fixed = shares(
            fixed_x.mean(axis=1) - mean_shift,
            t_quantile(first - 1) * fixed_x.std(axis=1, ddof=1) / math.sqrt(first),
        )
        rounds = np.median([g[2] for g in got])
        print(
            f"  {arm:9s} sigma={sigma:<4} first={first}: two-stage {cov[0]:.3f} "
            f"({cov[1]:.3f}, {cov[2]:.3f}) {verdict(*cov)}, {rounds:g} rounds | "
            f"sequential {seq[0]:.3f} ({seq[1]:.3f}, {seq[2]:.3f}) {verdict(*seq)} | "
            f"fixed at {first}: {fixed[0]:.3f} ({fixed[1]:.3f}, {fixed[2]:.3f})"
        )


def with_study(studies: int, d: float) -> None:
    print("2. judged with a study of 5 runs under the same rule (coverage, misses)")
    for (arm, sigma), ratio in itertools.product(ARMS[:3] + ARMS[4:], (0.0, 1.0, 3.0)):
        s = Setting(5, (3,), 3, ratio, arm, sigma)
        rng = np.random.default_rng(2)
        tau = ratio * sigma / math.sqrt(3)
        mean_shift = truth(arm)
        centre, half = np.empty(studies), np.empty(studies)
        for i in range(studies):
            study = stein_runs(rng, s, 3, 12, 5, d)
            values = tuple(v + tau * rng.standard_normal() for v, _, _ in study)
            part = StudyPart(values, float(np.median([r for *_, r in study])))
            floor = t_quantile(part.runs - 1) * part.spread
            ((value, own, rounds),) = stein_runs(rng, s, 3, 12, 1, d, floor)
            own = Spread(value + tau * rng.standard_normal(), own.terms)
            low, high = judged(own, rounds, part)
            centre[i], half[i] = (low + high) / 2, (high - low) / 2
        cov = shares(centre - mean_shift, half)
        print(
            f"  {arm:9s} sigma={sigma:<4} tau/se={ratio}: {cov[0]:.3f} "
            f"({cov[1]:.3f}, {cov[2]:.3f}) {verdict(*cov)}"
        )


def two_looks(runs: int, d: float) -> None:
    """3. Rounds that could decide a part (blockbench.judge.stopping's two looks), against
    Stein's rule and the rule rejected before it. The truth lies k standard errors of the
    first stage above the rule's bound (0). Stein: rounds to the precision target, judged
    at 95%. To the bound (rejected): a part whose first stage straddles aims its rounds at
    the first stage's distance to the bound, Stein's interval at 95%; its rounds read the
    value, so the first stage is looked at twice. Two looks (shipped): the first stage at
    97.5%; where it straddles, every round to the cap, the ordinary t at 97.5% (Bonferroni
    over the two). Printed: coverage, each side's miss, the wrong side (fails where the
    truth holds), the share left undecided and the mean rounds."""
    print(f"3. rounds to decide (target x{math.exp(d):.3g}; coverage (misses) wrong, open, rounds)")
    most = 12
    for (arm, sigma), first, k in itertools.product(ARMS[:4], (3, 5), (0.0, 0.5, 1.0, 2.0, 4.0)):
        rng = np.random.default_rng(3)
        mu = k * sigma / math.sqrt(first)
        x = mu + processes(rng, Setting(1, (first,), first, 0.0, arm, sigma), (runs, most))
        head = x[:, :first]
        m0, s0 = head.mean(axis=1), head.std(axis=1, ddof=1)
        h0 = t_quantile(first - 1) * s0 / math.sqrt(first)
        said = []
        for aim in (np.full(runs, d), np.where(abs(m0) < h0, np.minimum(d, abs(m0)), d)):
            rounds = np.clip(np.ceil(first * (h0 / aim) ** 2 - 1e-9), first, most).astype(int)
            centre = np.cumsum(x, axis=1)[np.arange(runs), rounds - 1] / rounds
            said.append((centre, h0 * math.sqrt(first) / np.sqrt(rounds), rounds))
        h1 = t_quantile(first - 1, LOOK) * s0 / math.sqrt(first)
        h2 = t_quantile(most - 1, LOOK) * x.std(axis=1, ddof=1) / math.sqrt(most)
        decided = abs(m0) > h1
        said.append(
            (
                np.where(decided, m0, x.mean(axis=1)),
                np.where(decided, h1, h2),
                np.where(decided, first, most),
            )
        )
        words = []
        for centre, half, rounds in said:
            cov, low, high = shares(centre - mu, half)
            wrong = float(np.mean(centre + half < 0)) if mu > 0 else 0.0
            open_ = float(np.mean(abs(centre) < half))
            words.append(
                f"{cov:.3f} ({low:.3f}, {high:.3f}) {wrong:.3f}, {open_:.2f}, {rounds.mean():.1f}"
            )
        print(
            f"  {arm:6s} sigma={sigma:<4} first={first} truth {k:g} se: Stein {words[0]} | "
            f"to the bound {words[1]} | two looks {words[2]}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=4000)
    p.add_argument("--studies", type=int, default=400)
    p.add_argument("--precision", type=float, default=1.15, help="the target, a factor")
    args = p.parse_args()
    d = math.log(args.precision)
    own_intervals(args.runs, d)
    two_looks(args.runs, d)
    if args.studies:
        with_study(args.studies, d)


if __name__ == "__main__":
    main()
