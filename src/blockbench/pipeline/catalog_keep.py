"""A run keeps what it judged: beside its measurements, the catalogs its config named, in
order, and a copy of each one blockbench does not ship (its claims, published figures,
workload modules and requirements), so that `regenerate`, the GPU kit's archive and judging
at home need nothing but the run's folder, even after the catalog has moved or gone.

Written once a run's first stage is measured (the rounds decision, blockbench.pipeline.
stages.decide_rounds), which refuses a module changed since that stage measured it: the copy
is of the text that ran. A run older than this keeps no list, and means the catalogs that
ship (`regenerate` rebuilds it as it always has)."""

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from blockbench.judge.claim_rules import CLAIMS_FILE, FIGURES_FILE, catalog_name
from blockbench.records.layout import CATALOGS, KEPT
from blockbench.records.store import read_json, write_json_atomic
from blockbench.workloads.registry import CATALOG_WORKLOADS, REQUIREMENTS

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "config" / "claims"  # blockbench's own catalogs, in a checkout


def shipped(path: Path) -> bool:
    return path.resolve().is_relative_to(SHIPPED)


def _files(claims_file: Path) -> list[Path]:
    """What a catalog is made of: its claims, and for a catalog folder its figures, its
    requirements and its workload modules."""
    if claims_file.name != CLAIMS_FILE:
        return [claims_file]
    folder = claims_file.parent
    modules = sorted(folder.glob(f"{CATALOG_WORKLOADS}/*.py"))
    own = [folder / FIGURES_FILE, folder / REQUIREMENTS, *modules]
    return [claims_file, *(f for f in own if f.is_file())]


def _copy(claims_file: Path, into: Path) -> None:
    """The catalog's files into `into` (a lone claims file becomes its claims.yaml, which
    keeps its catalog's name), swapped in whole: a reader never sees half a copy."""
    folder = claims_file.parent
    tmp = into.with_name(f".{into.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for file in _files(claims_file):
        inside = CLAIMS_FILE if file == claims_file else file.relative_to(folder)
        (tmp / inside).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, tmp / inside)
    shutil.rmtree(into, ignore_errors=True)
    tmp.rename(into)


def keep(claims_files: Sequence[str | Path], only: Sequence[str], run_dir: Path) -> dict[str, Any]:
    """Write the run's catalogs.json and its copies of the catalogs it does not ship."""
    entries = []
    for path in map(Path, claims_files):
        if shipped(path):
            entries.append({"shipped": path.resolve().relative_to(ROOT).as_posix()})
            continue
        into = run_dir / KEPT / catalog_name(path)
        if path.resolve() != (into / CLAIMS_FILE).resolve():  # a rebuild reads its own copy
            _copy(path, into)
        came = path.parent if path.name == CLAIMS_FILE else path  # a folder, or a lone file
        entries.append({"kept": into.relative_to(run_dir).as_posix(), "from": str(came.resolve())})
    said = {"claims": entries, "only": list(only)}
    write_json_atomic(run_dir / CATALOGS, said)
    return said


def kept_catalogs(run_dir: Path) -> list[Path]:
    """The catalogs the run in `run_dir` judged, in order: the shipped ones from this
    checkout, the others from the run's copies; none for a run that kept no list."""
    file = run_dir / CATALOGS
    if not file.is_file():
        return []
    return [
        ROOT / e["shipped"] if "shipped" in e else run_dir / e["kept"]
        for e in read_json(file)["claims"]
    ]


def kept_config(run_dir: Path) -> list[str]:
    """`key=value` config pairs that judge the run in `run_dir` with the catalogs it judged
    and the claims it chose (`only`); none for a run that kept no list."""
    paths = kept_catalogs(run_dir)
    if not paths:
        return []
    only = read_json(run_dir / CATALOGS)["only"]
    pairs = [f"claims=[{','.join(map(str, paths))}]"]
    return pairs + ([f"only=[{','.join(only)}]"] if only else [])
