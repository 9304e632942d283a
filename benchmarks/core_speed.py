#!/usr/bin/env python3
"""Does each core of this machine keep its speed? (blockbench.measure.core_speed)

    .venv/bin/python benchmarks/core_speed.py [--seconds 30] [--window-s 0.15]

Times a fixed pure-Python loop pinned to each core the process may use, in turn, in short
windows, and prints per core its fast time, the share of windows over 1.5x that, and what
the guest's kernel counted meanwhile (steal, CPU time against wall time); then what handing
work to a thread on another core costs (a round trip, against the same on one core), which
sets microsecond jit calls' times and moves with the host where no core slows. Run it on a quiet
machine before trusting one run's intervals: on the 2-core AMD EPYC VM of 2026-11-23 each
core spent from 3% to 47% of its windows at about half speed (two readings two minutes
apart), which the guest's counters mostly do not show; on the one of 2026-11-24 no window
was slow.
"""

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.measure import core_speed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=30.0, help="probe this long in all")
    p.add_argument("--window-s", type=float, default=core_speed.WINDOW_S)
    p.add_argument(
        "--handoff-s",
        type=float,
        default=3.0,
        help="then time hand-offs between the first two cores this long (0: not)",
    )
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.window_s <= 0 or args.handoff_s < 0:
        p.error(
            f"--seconds and --window-s must be > 0 and --handoff-s >= 0, got {args.seconds}, "
            f"{args.window_s} and {args.handoff_s}"
        )
    cores = sorted(os.sched_getaffinity(0))
    steal0 = core_speed.steal_s()
    windows = core_speed.probe(cores, args.seconds, args.window_s)
    steal1 = core_speed.steal_s()
    steal = None if steal0 is None or steal1 is None else steal1 - steal0
    handoff = None
    if len(cores) > 1 and args.handoff_s > 0:
        handoff = core_speed.handoffs((cores[0], cores[1]), args.handoff_s).describe()
    speeds, host = core_speed.summarize(windows), core_speed.verdict(windows)
    for line in core_speed.describe(speeds, steal, host, handoff):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
