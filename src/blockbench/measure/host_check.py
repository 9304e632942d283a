"""The two checks a user runs on a host before measuring on it: its state on one screen
(`state_check`, `blockbench host-check`) and whether each core keeps its speed
(`speed_check`, `blockbench core-speed`).

A run's intervals describe the host it ran on; these say beforehand what in that host would
slow the cells or NumPy's BLAS, and whether its cores run at one speed. Both print and return
the command's exit status.
"""

import argparse
import os

from blockbench.measure import core_speed, cores, host_power, provenance


def state_check(argv: list[str] | None = None) -> int:
    """What blockbench.measure.host_power reads for every core this process may use and
    which BLAS kernel NumPy will run: 1 where either would slow the cells, else 0."""
    argparse.ArgumentParser(
        prog="blockbench host-check",
        description="The host's state on one screen, before measuring (exit status 1: "
        "something in it would slow the cells or NumPy's BLAS).",
    ).parse_args(argv)
    allowed = cores.allowed()
    state = host_power.read(allowed)
    print(f"CPU: {provenance.cpu_model()}, {len(allowed)} cores this process may use")
    print(*host_power.describe(state), sep="\n")
    # what NumPy's BLAS will run here, and whether the environment chose it
    facts = {"env": provenance.environment(), "blas": provenance.blas()}
    forced = provenance.blas_warnings(facts, blas_cell=True)
    print(*(forced or ["NumPy's BLAS picks its own kernel"]), sep="\n")
    print("whether the cores keep their speed: blockbench core-speed")
    return 1 if host_power.speed_warnings(state) or forced else 0


def speed_check(argv: list[str] | None = None) -> int:
    """Time a fixed pure-Python loop pinned to each core in turn, in short windows, and print
    per core its fast time, the share of windows over 1.5x that and what the guest's kernel
    counted meanwhile; then what handing work to a thread on another core costs against the
    same on one core, which sets microsecond jit calls' times and moves with the host where
    no core slows.

    Run it on a quiet machine before trusting one run's intervals: on the 2-core AMD EPYC VM
    of 2026-11-23 each core spent from 3% to 47% of its windows at about half speed (two
    readings two minutes apart), which the guest's counters mostly do not show; on the one
    of 2026-11-24 no window was slow."""
    p = argparse.ArgumentParser(
        prog="blockbench core-speed",
        description="Does each core of this machine keep its speed? (blockbench.measure."
        "core_speed)",
    )
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
    mine = sorted(os.sched_getaffinity(0))
    steal0 = core_speed.steal_s()
    windows = core_speed.probe(mine, args.seconds, args.window_s)
    steal1 = core_speed.steal_s()
    steal = None if steal0 is None or steal1 is None else steal1 - steal0
    handoff = None
    if len(mine) > 1 and args.handoff_s > 0:
        handoff = core_speed.handoffs((mine[0], mine[1]), args.handoff_s).describe()
    speeds, host = core_speed.summarize(windows), core_speed.verdict(windows)
    for line in core_speed.describe(speeds, steal, host, handoff):
        print(line)
    return 0
