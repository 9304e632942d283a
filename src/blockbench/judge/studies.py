"""Between-run studies on disk: which kind of machine a run measured on, and each claim
part's values in the study's runs for that kind (config/between_run/*.yaml).

A study is written by benchmarks/between_run_study.py from several runs of one grid on one
kind of machine; the claims stage reads every study and applies the one whose kind matches a
run's, if it was made by the method that judges the run (METHOD_VERSION): a study of another
method measured something else and is treated as absent, with the reason said. The kind is
what a run cannot change about its machine (CPU model, logical CPUs, GPU models), not its
hostname: two nodes of one cluster partition share a study. What decided the study's noise
(whether the cores kept their speed, as benchmarks/core_speed.py tells) is recorded with it.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from blockbench.errors import InputError
from blockbench.judge.between_runs import StudyPart
from blockbench.measure.core_speed import UNKNOWN
from blockbench.records.spec import METHOD_VERSION

STUDY_VERSION = 2
# Studies below this many process values (runs x processes) seldom hold a process from a
# rare slow mode (with 20% slow, 0.8^9 = 13% of studies of 3 runs x 3 processes hold none),
# so on a host whose cores change speed they can miss it (docs/statistics.md).
MIN_PROCESS_VALUES = 15


class StudyFileError(InputError):
    """A between-run study that cannot be read; the message names the file."""


@dataclass(frozen=True)
class Kind:
    """A kind of machine, as the cells of a run record it."""

    cpu_model: str
    cpus: int
    gpus: tuple[str, ...] = ()

    def describe(self) -> str:
        gpu = f" + {', '.join(self.gpus)}" if self.gpus else ""
        return f"{self.cpu_model}, {self.cpus} logical CPUs{gpu}"

    def as_dict(self) -> dict[str, Any]:
        return {"cpu_model": self.cpu_model, "cpus": self.cpus, "gpus": list(self.gpus)}


def kind_of(cells: pd.DataFrame) -> Kind | None:
    """The kind of machine a run's cells were measured on (None: nothing says)."""
    ok = cells[cells["cpu_model"].notna()]
    if ok.empty or "host_cpus" not in ok or ok["host_cpus"].isna().all():
        return None
    gpus = tuple(sorted({str(g) for g in ok.get("gpu_name", pd.Series()).dropna() if g}))
    return Kind(str(ok["cpu_model"].iloc[0]), int(ok["host_cpus"].dropna().iloc[0]), gpus)


@dataclass
class Study:
    """Each claim part's values in several runs on one kind of machine."""

    kind: Kind
    runs: list[dict[str, Any]]  # label, started (UTC), commit of each run studied
    parts: dict[tuple[str, str], StudyPart] = field(default_factory=dict)
    source: str = ""
    method: int = METHOD_VERSION  # the measuring and judging method that made its runs
    core_speed: str = UNKNOWN  # what its runs' readings said of the host (measure.core_speed)
    # the stopping rule its runs were measured under ('' : a fixed design); each part's
    # `processes` is the median of the rounds its runs took (benchmarks/between_run_study.py)
    design: str = ""
    # the kernel NumPy's BLAS ran in its runs ('OpenBLAS SkylakeX'; '': not recorded)
    blas: str = ""

    def part(self, claim_id: str, part: str) -> StudyPart | None:
        return self.parts.get((claim_id, part))

    def why_not_applied(self, core_speed: str, design: str, blas: str) -> str:
        """'' where the study applies to a run of its kind whose cores behaved as
        `core_speed` says (blockbench.measure.core_speed.classify), whose processes were
        measured under the study's `design` (`design_of`) and whose NumPy ran the study's BLAS
        kernel (`blas_of`; '' on either side: nothing to compare), else why it does not: runs
        whose cells sample for other times, or start with other rounds, spread otherwise, and
        NumPy on another kernel is another speed (docs/measuring-traps.md)."""
        name = Path(self.source).name or "given"
        if self.method != METHOD_VERSION:
            return (
                f"the study {name} was made by method version {self.method} and this is "
                f"version {METHOD_VERSION}: not applied (re-make it: docs/studies.md)"
            )
        if UNKNOWN in (self.core_speed, core_speed) or self.core_speed != core_speed:
            return (
                f"the study {name} was made on a host whose cores were {self.core_speed}, "
                f"and this run's readings say {core_speed}: not applied"
            )
        if self.design and design != self.design:
            return (
                f"the study {name} was made of runs of another design ({self.design}) than "
                f"this run's ({design or 'not recorded'}): not applied (re-make it from runs "
                "of this config: docs/studies.md)"
            )
        if self.blas and blas and blas != self.blas:
            return (
                f"the study {name} was made where NumPy's BLAS ran {self.blas}, and this run's "
                f"ran {blas}: not applied"
            )
        return ""

    def too_small(self, part: StudyPart) -> bool:
        """Too few process values to see a rare slow mode of a host whose cores change speed."""
        return part.runs * part.processes < MIN_PROCESS_VALUES

    def to_yaml(self) -> str:
        parts: dict[str, dict[str, Any]] = {}
        for (claim_id, name), p in sorted(self.parts.items()):
            parts.setdefault(claim_id, {})[name] = {
                "values": [round(v, 6) for v in p.values],
                "own_se": [round(v, 6) for v in p.own_se],
                "processes": p.processes,
            }
        body = {
            "version": STUDY_VERSION,
            "method": self.method,
            "kind": self.kind.as_dict(),
            "core_speed": self.core_speed,
            "design": self.design,
            "blas": self.blas,
            "runs": self.runs,
            "parts": parts,
        }
        head = (
            "# Each claim part's value and own standard error in several runs on one kind of\n"
            "# machine (on the scale the part is judged on: log of a ratio, or an exponent),\n"
            "# with the processes behind each value; written by\n"
            "# benchmarks/between_run_study.py and read by the claims stage.\n"
        )
        return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def design_of(processes: pd.DataFrame) -> str:
    """The design a run's processes were measured under (blockbench.run.grid.design), the
    designs joined where they differ."""
    return "; ".join(sorted(set(processes["design"].fillna("")))) if "design" in processes else ""


def blas_of(processes: pd.DataFrame) -> str:
    """The kernels NumPy's BLAS ran in a run's cells that time it (judge.aggregate.blas_kernel),
    joined where they differ; '' where none recorded one."""
    if "blas_kernel" not in processes:
        return ""
    return "; ".join(sorted(set(processes["blas_kernel"].dropna())))


def read_study(path: Path) -> Study:
    try:
        data = yaml.safe_load(Path(path).read_text())
        if data.get("version") != STUDY_VERSION:
            raise StudyFileError(
                f"{path}: study file version {data.get('version')!r}, this blockbench reads "
                f"{STUDY_VERSION}: re-make it (docs/studies.md)"
            )
        k = data["kind"]
        kind = Kind(str(k["cpu_model"]), int(k["cpus"]), tuple(k.get("gpus") or ()))
        parts = {
            (str(claim_id), str(name)): StudyPart(
                tuple(float(x) for x in v["values"]),
                float(v["processes"]),
                tuple(float(x) for x in v["own_se"]),
            )
            for claim_id, named in (data.get("parts") or {}).items()
            for name, v in named.items()
        }
        method, core_speed = int(data["method"]), str(data.get("core_speed", UNKNOWN))
        design, blas = str(data.get("design") or ""), str(data.get("blas") or "")
    except StudyFileError:
        raise
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StudyFileError(f"{path}: not a between-run study ({exc})") from exc
    runs = list(data.get("runs") or [])
    return Study(kind, runs, parts, str(path), method, core_speed, design, blas)


def read_studies(paths: Iterable[str | Path]) -> dict[Kind, Study]:
    studies: dict[Kind, Study] = {}
    for path in paths:
        study = read_study(Path(path))
        if study.kind in studies:
            raise StudyFileError(
                f"{path}: a second study for {study.kind.describe()} "
                f"(first: {studies[study.kind].source})"
            )
        studies[study.kind] = study
    return studies


def study_path(directory: Path, kind: Kind) -> Path:
    """config/between_run/<cpu model>-<cpus>cpu[-<gpu>].yaml"""
    words = [kind.cpu_model, f"{kind.cpus}cpu", *kind.gpus]
    slug = "-".join("".join(c if c.isalnum() else "-" for c in w.lower()) for w in words)
    return Path(directory) / f"{'-'.join(filter(None, slug.split('-')))}.yaml"
