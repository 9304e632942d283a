"""A between-run study made from several runs' tables (`study`), and what is said of it: the
span its runs cover (`too_close`) and how runs made after that span held its mean
(`held_after`). `blockbench study` (blockbench.pipeline.study_cli) writes what this makes.

Runs that cannot make one study (another kind of machine, method, design, BLAS kernel or,
for a study of one host, another host) are refused with an InputError naming what differs:
their spread would not be the spread a later run of one setup meets.
"""

import statistics
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from blockbench.errors import InputError
from blockbench.judge import verdicts
from blockbench.judge.between_runs import StudyPart, judged
from blockbench.judge.run_view import core_speed_of
from blockbench.judge.studies import HOST, Study, blas_of, design_of, host_of, kind_of
from blockbench.judge.uncertainty import Spread, on_scale
from blockbench.measure.core_speed import STEADY, TWO_SPEED, UNKNOWN

# Runs closer together than this share the machine's state: six runs made within one hour on
# the 2-core AMD EPYC VM set C1's term at x1.03, and a run three hours later fell outside it
# (docs/studies.md, method version 9).
MIN_SPAN_H = 4.0
STARTED = "%Y-%m-%dT%H:%M:%SZ"  # how Study.runs records when a run started


def host_speed(proc: pd.DataFrame, given: str | None) -> str:
    """What the runs' own core-speed readings say of the host (two speeds if any run saw
    them), or, for runs made before processes read it, what the user says (`given`)."""
    seen = {core_speed_of(g) for _, g in proc.groupby("run_label")} - {UNKNOWN}
    if not seen:
        if given is None:
            raise InputError(
                "the runs hold no core-speed readings: say what `blockbench core-speed` found "
                "(--core-speed)"
            )
        return given
    return TWO_SPEED if TWO_SPEED in seen else STEADY


def started_at(proc: pd.DataFrame) -> dict[str, str]:
    """When each run (label) started: its first process, in UTC, as Study.runs records it."""
    return {
        str(label): datetime.fromtimestamp(float(g["started_at"].min()), UTC).strftime(STARTED)
        for label, g in proc.groupby("run_label")
    }


def study(
    cells: pd.DataFrame,
    proc: pd.DataFrame,
    claims: list[dict[str, Any]],
    core_speed: str,
    scope: str = HOST,
) -> Study:
    """The study of these runs: each claim part's value in every run that measured it at one
    size, after refusing runs that are not of one setup."""
    kinds = {label: kind_of(g) for label, g in cells.groupby("run_label")}
    if len(kinds) < 2:
        raise InputError(f"a study needs at least 2 runs (run labels), got {sorted(kinds)}")
    if None in kinds.values() or len(set(kinds.values())) > 1:
        seen = {label: k.describe() if k else "unknown" for label, k in kinds.items()}
        raise InputError(f"the runs are not of one kind of machine: {seen}")
    parts = verdicts.judge(cells, proc, claims)[1]
    measured = parts[parts["run_spread"].notna() & parts["measured"].notna()]
    found = {}
    for (claim_id, name), rows in measured.groupby(["claim_id", "part"], sort=True):
        if rows["size"].nunique() != 1 or len(rows) < 2:
            continue  # measured at different sizes, or by one run: nothing to compare
        values = tuple(on_scale(r.measured, r.scale) for r in rows.itertuples())
        processes = float(statistics.median(rows["processes"]))
        found[(claim_id, name)] = StudyPart(values, processes)
    began = started_at(proc)
    runs = [
        {"label": str(label), "started": began[str(label)], "commit": str(g["git_commit"].iloc[0])}
        for label, g in proc.groupby("run_label")
    ]
    methods = sorted({int(m) for m in proc["method_version"]})
    if len(methods) > 1:
        raise InputError(
            f"the runs were measured by several methods (versions {methods}): study one"
        )
    designs = {label: design_of(g) for label, g in proc.groupby("run_label")}
    if len(set(designs.values())) > 1:
        raise InputError(
            "the runs were measured under different stopping rules, so their values are not "
            f"of one design: {designs} (study runs of one config)"
        )
    kernels = {label: blas_of(g) for label, g in proc.groupby("run_label")}
    if len(set(kernels.values())) > 1:
        raise InputError(
            "NumPy's BLAS ran different kernels in the runs, so NumPy's times are not of one "
            f"setup: {kernels} (docs/measuring-traps.md)"
        )
    hosts = {label: host_of(g) for label, g in proc.groupby("run_label")}
    if scope == HOST and (len(set(hosts.values())) > 1 or "" in hosts.values()):
        raise InputError(
            f"a study is of one host, and these runs name {hosts} ('': not recorded): study "
            "one host's runs, or say --scope kind to apply it to every host of the kind"
        )
    return Study(
        next(iter(kinds.values())),
        runs,
        found,
        method=methods[0],
        core_speed=core_speed,
        design=next(iter(designs.values())),
        blas=next(iter(kernels.values())),
        host="; ".join(sorted(set(hosts.values()))),
        scope=scope,
    )


def held_after(found: Study, parts: pd.DataFrame) -> str:
    """'held 73 of 84 parts in 6 runs made after it': how often runs made after the study's
    span, each part judged with the study (between_runs.judged, as the claims stage does),
    held the study's mean of that part: its out-of-sample coverage ('' where none could be
    judged)."""
    measured = parts[parts["run_spread"].notna() & parts["measured"].notna()]
    held = checked = 0
    for row in measured.itertuples():
        stored = found.part(row.claim_id, row.part)
        if stored is None or stored.runs < 2:
            continue
        own = Spread.from_text(on_scale(row.measured, row.scale), row.run_spread)
        low, high = judged(own, row.processes, stored)
        checked += 1
        held += low <= statistics.fmean(stored.values) <= high
    runs = measured["run_label"].nunique()
    return f"held {held} of {checked} parts in {runs} runs made after it" if checked else ""


def too_close(runs: list[dict[str, Any]]) -> str:
    """'' where the runs (as Study.runs records them) span MIN_SPAN_H hours or more, else a
    line saying how long they span: such a study understates the spread a later run meets."""
    started = sorted(datetime.strptime(r["started"], STARTED) for r in runs)
    minutes = (started[-1] - started[0]).total_seconds() / 60
    if minutes >= MIN_SPAN_H * 60:
        return ""
    return (
        f"the runs span {minutes:.0f} minutes: runs closer than {MIN_SPAN_H:g} hours share the "
        "machine's state and understate the spread; add runs made hours or days apart"
    )
