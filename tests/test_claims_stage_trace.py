"""The claims stage read as a route: the claims file's path goes into the claims parser, and
what comes out (the parsed claims) goes on to the judge and the report. Traced over a
committed run's own records, the route may come back into a module it has left at most
three times (the path's went back nine times when a claim was a dict that each reader
re-read)."""

import sys
from pathlib import Path
from types import FrameType
from typing import Any

from tiny import XEON_RUN as RUN
from tiny import reference_tables

from blockbench.judge.claim import Claim
from blockbench.pipeline import stages

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "config/claims/articles"
PACKAGE = str(ROOT / "src/blockbench")


def _carries(value: Any, paths: set[str]) -> bool:
    """Whether an argument is the claims' path (any spelling of a catalog's file) or claims."""
    if isinstance(value, str | Path):
        return str(value) in paths
    if isinstance(value, Claim):
        return True
    if isinstance(value, list | tuple) and value:
        return all(_carries(v, paths) for v in value)
    return False


def route(claims_file: Path, call: Any) -> list[str]:
    """The package modules, in call order, whose functions took the claims' path or the
    parsed claims as an argument while `call` ran (one entry each time the route moves)."""
    paths = {
        str(p)
        for f in (claims_file, claims_file / "claims.yaml", claims_file / "figures.yaml")
        for p in (f, f.resolve())
    }
    modules: list[str] = []

    def seen(frame: FrameType, event: str, _: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(PACKAGE):
            return
        args = [frame.f_locals.get(n) for n in code.co_varnames[: code.co_argcount]]
        if any(_carries(a, paths) for a in args):
            module = code.co_filename.removeprefix(PACKAGE + "/")
            if not modules or modules[-1] != module:
                modules.append(module)

    sys.setprofile(seen)
    try:
        call()
    finally:
        sys.setprofile(None)
    return modules


def returns(modules: list[str]) -> list[str]:
    """The modules the route comes back into after leaving them."""
    return [m for i, m in enumerate(modules) if m in modules[:i]]


def test_the_claims_stage_comes_back_into_a_module_it_has_left_at_most_three_times(tmp_path):
    out, written = reference_tables(tmp_path)
    modules = route(
        CATALOG,
        lambda: stages.build_claims(
            out.parquet,
            out.processes,
            [str(CATALOG)],
            *written,
            decisions=[RUN / "raw/p3-r1/rounds.json"],
        ),
    )
    assert modules[0] == "pipeline/stages.py" and "judge/claim_rules.py" in modules, modules
    assert len(returns(modules)) <= 3, (returns(modules), modules)
    # the stage judged what it traced: the committed run's verdicts
    assert written[0].read_text() == (RUN / "claims.csv").read_text()
