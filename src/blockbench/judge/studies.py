"""Between-run studies on disk: which kind of machine a run measured on, and each claim
part's values in the study's runs for that kind (config/between_run/*.yaml).

A study is written by `blockbench study` from several runs of one grid on one
host over a span of time, and is evidence of that host over that span (ISO 5725-3's
intermediate precision of one host, not reproducibility across hosts). The claims stage
applies it to a run of the same host (its `host_id`: the SLURM node's name or a hash of the
machine-id, with the CPU's family, model and stepping), made by the method that judges the
run (METHOD_VERSION), with cores behaving alike, the same design and the same BLAS kernel;
to other hosts of its kind (CPU model, logical CPUs, GPU models) only where the user says so
in the study file (`scope: kind`). Otherwise the run's interval covers its own processes,
with the reason said. How its intervals held runs made after its span is quoted with it.
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
from blockbench.records.machines import GPU_KIND, HOST_KIND, Kind
from blockbench.records.spec import METHOD_VERSION

STUDY_VERSION = 2
# Studies below this many process values (runs x processes) seldom hold a process from a
# rare slow mode (with 20% slow, 0.8^9 = 13% of studies of 3 runs x 3 processes hold none),
# so on a host whose cores change speed they can miss it (docs/statistics.md).
MIN_PROCESS_VALUES = 15
HOST, KIND = "host", "kind"  # a study's scope: its own host, or every host of its kind


class StudyFileError(InputError):
    """A between-run study that cannot be read; the message names the file."""


def kind_of(cells: pd.DataFrame) -> Kind | None:
    """The kind of machine a run's cells were measured on (None: nothing says)."""
    (cpu_model, cpus), (gpu,) = HOST_KIND, GPU_KIND
    ok = cells[cells[cpu_model].notna()]
    if ok.empty or cpus not in ok or ok[cpus].isna().all():
        return None
    gpus = tuple(sorted({str(g) for g in ok.get(gpu, pd.Series()).dropna() if g}))
    return Kind(str(ok[cpu_model].iloc[0]), int(ok[cpus].dropna().iloc[0]), gpus)


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
    # `processes` is the median of the rounds its runs took (`blockbench study`)
    design: str = ""
    # the kernel NumPy's BLAS ran in its runs ('OpenBLAS SkylakeX'; '': not recorded)
    blas: str = ""
    host: str = ""  # the host its runs were made on (`host_of`; '': not recorded)
    scope: str = HOST  # HOST, or KIND where the user applies it to every host of its kind
    # how its judged intervals held runs made after its span ('': none yet)
    out_of_sample: str = ""

    def span(self) -> str:
        """When its first and last runs started: '2026-11-20T10:02:00Z to 2026-11-21T08:40:00Z'."""
        started = sorted(str(r.get("started", "")) for r in self.runs if r.get("started"))
        return f"{started[0]} to {started[-1]}" if started else "unrecorded span"

    def covers(self) -> str:
        """What an interval judged with this study covers, in the words every page uses."""
        host = self.host or "an unrecorded host"
        whose = "this host's runs" if self.scope == HOST else "runs of this kind of machine"
        return (
            f"{whose} over the span its study saw ({len(self.runs)} runs of {host}, "
            f"{self.span()}; out of sample: {self.out_of_sample or 'none yet'})"
        )

    def part(self, claim_id: str, part: str) -> StudyPart | None:
        return self.parts.get((claim_id, part))

    def why_not_applied(self, core_speed: str, design: str, blas: str, host: str = "") -> str:
        """'' where the study applies to a run of its host (or kind, by its `scope`) whose cores
        behaved as `core_speed` says (blockbench.measure.core_speed.classify), whose processes were
        measured under the study's `design` (`design_of`) and whose NumPy ran the study's BLAS
        kernel (`blas_of`; '' on either side: nothing to compare), else why not: runs whose cells
        sample for other times, or start with other rounds, spread otherwise, and NumPy on another
        kernel is another speed (docs/measuring-traps.md)."""
        name = Path(self.source).name or "given"
        if self.method != METHOD_VERSION:
            return (
                f"the study {name} was made by method version {self.method} and this is "
                f"version {METHOD_VERSION}: not applied (re-make it: docs/studies.md)"
            )
        if self.scope == HOST and (not self.host or host != self.host):
            return (
                f"the study {name} is of {self.host or 'an unrecorded host'} over "
                f"{self.span()}, and this run was made on {host or 'an unrecorded host'}: not "
                "applied (a study is evidence of its own host; `scope: kind` in the study "
                "file applies it to every host of its kind)"
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
                "processes": p.processes,
            }
        body = {
            "version": STUDY_VERSION,
            "method": self.method,
            "kind": self.kind.as_dict(),
            "core_speed": self.core_speed,
            "design": self.design,
            "blas": self.blas,
            "host": self.host,
            "scope": self.scope,
            "out_of_sample": self.out_of_sample,
            "runs": self.runs,
            "parts": parts,
        }
        head = (
            "# Each claim part's value in several runs of one host (on the scale the part is\n"
            "# judged on: log of a ratio, or an exponent), with the processes behind each\n"
            "# value; written by\n"
            "# `blockbench study` and read by the claims stage.\n"
        )
        return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def design_of(processes: pd.DataFrame) -> str:
    """The design a run's processes were measured under (blockbench.pipeline.grid.design), the
    designs joined where they differ."""
    return "; ".join(sorted(set(processes["design"].fillna("")))) if "design" in processes else ""


def host_of(processes: pd.DataFrame) -> str:
    """The host a run's processes ran on: its `host_id` and CPU signature (the hosts joined
    where they differ; '' where none recorded one, as in records made before hosts were named)."""
    if "host_id" not in processes or processes["host_id"].isna().all():
        return ""
    named = processes[["host_id", "cpu_signature"]].fillna("?").drop_duplicates()
    return "; ".join(sorted(f"{h}, {c}" for h, c in named.itertuples(index=False)))


def blas_of(processes: pd.DataFrame) -> str:
    """The kernels NumPy's BLAS ran in a run's cells that time it (judge.aggregate.cell_blas),
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
        kind = Kind.from_dict(data["kind"])
        parts = {
            (str(claim_id), str(name)): StudyPart(
                tuple(float(x) for x in v["values"]), float(v["processes"])
            )
            for claim_id, named in (data.get("parts") or {}).items()
            for name, v in named.items()
        }
        method, core_speed = int(data["method"]), str(data.get("core_speed", UNKNOWN))
        design, blas = str(data.get("design") or ""), str(data.get("blas") or "")
        host, scope = str(data.get("host") or ""), str(data.get("scope") or HOST)
        if scope not in (HOST, KIND):
            raise StudyFileError(f"{path}: scope {scope!r}: say {HOST!r} or {KIND!r}")
        later = str(data.get("out_of_sample") or "")
    except StudyFileError:
        raise
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StudyFileError(f"{path}: not a between-run study ({exc})") from exc
    runs = list(data.get("runs") or [])
    return Study(kind, runs, parts, str(path), method, core_speed, design, blas, host, scope, later)


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
