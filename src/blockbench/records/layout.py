"""Where a run's results live: its label (one per JAX release), each cell's key and each
cell process's file.

Written once here and read by the workflow's rules, the grid, the tables stage and the GPU
kit, so that the layout of results/raw cannot drift between the writer and its readers. A
cell's key is its folder: `Cell` names a cell for every layer, from a measurement's record to
a round decision's JSON and the tables' columns.
"""

import importlib.metadata
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

# A run of another JAX release than the installed one: `<label>+jax-<version>`.
SEPARATOR = "+jax-"


@dataclass(frozen=True, order=True)
class Cell:
    """One cell of the grid: what one measurement measures, whichever process measures it."""

    device: str
    workload: str
    impl: str
    size: int

    @property
    def key(self) -> str:
        """device/workload/impl/size: the cell in a round decision (blockbench.judge.stopping)
        and its folder in a run."""
        return KEY.format(**asdict(self))

    @classmethod
    def from_key(cls, key: str) -> "Cell":
        device, workload, impl, size = key.split("/")
        return cls(device, workload, impl, int(size))

    @classmethod
    def from_dict(cls, named: Mapping[str, Any]) -> "Cell":
        """The cell a record, a job or the workflow's wildcards name (a wildcard's size is text)."""
        return cls(named["device"], named["workload"], named["impl"], int(named["size"]))

    def in_run(self, repeat: int) -> str:
        """The file of worker process `repeat` of this cell, within its run's folder."""
        return IN_RUN.format(repeat=repeat, **asdict(self))

    def path(self, run_label: str, repeat: int = 0) -> str:
        """Where worker process `repeat` of this cell writes its JSON."""
        return RAW.format(run_label=run_label, repeat=repeat, **asdict(self))


FIELDS = tuple(f.name for f in fields(Cell))
# A cell's key as a pattern, one wildcard a field: {device}/{workload}/{impl}/{size}.
KEY = "/".join(f"{{{name}}}" for name in FIELDS)
# The file of worker process `repeat` of one cell, within its run's folder and in the
# results (the measure rule's output, whose wildcards these are); `raw_files` globs it.
IN_RUN = KEY + "/{repeat}.json"
IN_RUN_GLOB = re.sub(r"\{\w+\}", "*", IN_RUN)  # any process's file in a run's folder
RAW = "results/raw/{run_label}/" + IN_RUN
# The columns that key a cell of a run, and one process of it, in the tables
# (blockbench.judge.aggregate).
CELL = ["run_label", *FIELDS]
PROCESS = [*CELL, "repeat"]


def first_process(path: str | Path) -> Path:
    """The file of process 0 of the cell whose process file is `path`: the process that
    chooses the cell's loops a sample (blockbench.measure.parent.cell_loops)."""
    return Path(path).with_name("0.json")


# After a run's first stage: the rounds each block takes, and why each claim part stopped
# (blockbench.judge.stopping; the workflow's checkpoint `rounds` writes it).
DECISION = "results/raw/{run_label}/rounds.json"
# What the check before a run's first GPU cell read (blockbench.measure.gpu_ready).
GPU_READY = "results/raw/{run_label}/gpu_ready.json"
# In a run the GPU kit measured (blockbench.pipeline.gpu_kit), beside its measurements: its parts,
# the versions it ran, and its final rounds decision.
KIT_MANIFEST = "kit.json"
# Beside a run's measurements: the catalogs it judged, in order (`claims`, `only`), and a
# copy of each one blockbench does not ship, under catalogs/<name>/ (blockbench.pipeline.
# catalog_keep), so that the run rebuilds with nothing else.
CATALOGS = "catalogs.json"
KEPT = "catalogs"


# The lock the bootstrap installs and environment.yml mirrors, in a checkout.
LOCK = Path(__file__).resolve().parents[3] / "requirements.lock"


@cache
def installed_jax() -> str:
    """The JAX release the jobs measure without an environment of their own: this
    environment's, or, where Snakemake parses the workflow in an environment without JAX
    (its jobs then run in the rule's `conda:` environment, `--sdm conda`), the locked one."""
    try:
        return importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        pinned = re.findall(r"^jax==(\S+)$", LOCK.read_text(), re.M) if LOCK.exists() else []
        if not pinned:
            raise
        return pinned[0]


def run_label(label: str, version: str) -> str:
    """The run label of one release's cells: the plain label for the installed release."""
    return label if version == installed_jax() else f"{label}{SEPARATOR}{version}"


def version_of(label: str) -> str:
    """The JAX release a run label was planned for."""
    return label.split(SEPARATOR, 1)[1] if SEPARATOR in label else installed_jax()


def run_dir(entry: str | Path) -> tuple[Path, str | None]:
    """A merged run as `DIR` or `DIR=LABEL`: its directory, and the label its cells are
    shown under (None: the label each file records). Two runs made with the default label
    (`local`) are told apart this way without measuring either again."""
    directory, sep, label = str(entry).rpartition("=")
    if not sep or Path(entry).is_dir():
        return Path(entry), None
    return Path(directory), label


def study_files(directory: str | Path) -> list[str]:
    """Every between-run study in `directory` (none where it does not exist: no kind of
    machine is studied), one YAML per kind (blockbench.judge.studies reads them)."""
    return sorted(str(p) for p in Path(directory).glob("*.yaml"))


def raw_files(directory: str | Path) -> list[Path]:
    """All measurement files of one run directory (device/workload/impl/size/repeat.json)."""
    return sorted(Path(directory).glob(IN_RUN_GLOB))
