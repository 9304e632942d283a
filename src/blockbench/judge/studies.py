"""Between-run studies on disk: which kind of machine a run measured on, and the stored
between-run variance of each claim part for that kind (config/between_run/*.yaml).

A study is written by benchmarks/between_run_study.py from several runs of one grid on one
kind of machine; the claims stage reads every study and applies the one whose kind matches a
run's. The kind is what a run cannot change about its machine (CPU model, logical CPUs, GPU
models), not its hostname: two nodes of one cluster partition share a study.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from blockbench.errors import InputError
from blockbench.judge.random_effects import Between

STUDY_VERSION = 1


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
    """The between-run variance of every claim part, for one kind of machine."""

    kind: Kind
    runs: list[dict[str, Any]]  # label, started (UTC), commit of each run studied
    parts: dict[tuple[str, str], Between] = field(default_factory=dict)
    source: str = ""

    def between(self, claim_id: str, part: str) -> Between | None:
        return self.parts.get((claim_id, part))

    def to_yaml(self) -> str:
        parts: dict[str, dict[str, Any]] = {}
        for (claim_id, name), b in sorted(self.parts.items()):
            parts.setdefault(claim_id, {})[name] = {
                "tau": round(b.tau, 6),
                "df": round(b.df, 3),
                "runs": b.runs,
            }
        body = {
            "version": STUDY_VERSION,
            "kind": self.kind.as_dict(),
            "runs": self.runs,
            "parts": parts,
        }
        head = (
            "# Between-run variance of each claim part on one kind of machine (tau on the\n"
            "# scale the part is judged on: log of a ratio, or an exponent as it is), written\n"
            "# by benchmarks/between_run_study.py; read by the claims stage.\n"
        )
        return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def read_study(path: Path) -> Study:
    try:
        data = yaml.safe_load(Path(path).read_text())
        if data.get("version") != STUDY_VERSION:
            raise StudyFileError(f"{path}: study version {data.get('version')!r}, reads 1")
        k = data["kind"]
        kind = Kind(str(k["cpu_model"]), int(k["cpus"]), tuple(k.get("gpus") or ()))
        parts = {
            (str(claim_id), str(name)): Between(
                float(v["tau"]) ** 2, float(v["df"]), int(v["runs"])
            )
            for claim_id, named in (data.get("parts") or {}).items()
            for name, v in named.items()
        }
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StudyFileError(f"{path}: not a between-run study ({exc})") from exc
    return Study(kind, list(data.get("runs") or []), parts, str(path))


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


def study_files(directory: str | Path) -> list[str]:
    """Every study in `directory` (none where it does not exist: no kind is studied)."""
    return sorted(str(p) for p in Path(directory).glob("*.yaml"))


def study_path(directory: Path, kind: Kind) -> Path:
    """config/between_run/<cpu model>-<cpus>cpu[-<gpu>].yaml"""
    words = [kind.cpu_model, f"{kind.cpus}cpu", *kind.gpus]
    slug = "-".join("".join(c if c.isalnum() else "-" for c in w.lower()) for w in words)
    return Path(directory) / f"{'-'.join(filter(None, slug.split('-')))}.yaml"
