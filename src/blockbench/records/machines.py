"""A kind of machine: what two hosts must share for their times to be one run's, or to be
pooled by one between-run study. Another CPU model or count of logical CPUs, or for a GPU
cell another GPU model, is another speed.

Checked before a cell measures (blockbench.measure.host_kind), over a run's finished records
(blockbench.judge.aggregate) and when a study is made or applied (blockbench.judge.studies).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The columns of the process and cell tables (blockbench.judge.aggregate) that say a cell's
# kind of machine: its host's CPU model and logical CPUs, and for a GPU cell its GPU's model.
HOST_KIND = ["cpu_model", "host_cpus"]
GPU_KIND = ["gpu_name"]


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
        """As a between-run study's file keeps it."""
        return {"cpu_model": self.cpu_model, "cpus": self.cpus, "gpus": list(self.gpus)}

    @classmethod
    def from_dict(cls, kept: Mapping[str, Any]) -> "Kind":
        return cls(str(kept["cpu_model"]), int(kept["cpus"]), tuple(kept.get("gpus") or ()))
