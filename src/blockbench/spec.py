"""What the parent tells the worker: the cell and how to sample it (no JAX import here)."""

from dataclasses import asdict, dataclass, field
from typing import Any

from blockbench.sampling import StopRule

DEVICES = ("cpu", "gpu", "tpu")
# Every phase a cell can have, in the order a user meets them (and the harness measures them).
PHASES = (
    "host_to_device",
    "trace_lower",
    "compile",
    "first_call",
    "dispatch",
    "steady",
    "device_to_host",
)
EXIT_BAD_CELL = 64  # EX_USAGE: the request itself is wrong, nothing was measured


@dataclass(frozen=True)
class CellSpec:
    device: str
    workload: str
    impl: str
    size: int
    seed: int = 0
    matmul_precision: str = "default"
    rule: StopRule = field(default_factory=StopRule)

    @property
    def cell(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "workload": self.workload,
            "impl": self.impl,
            "size": self.size,
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CellSpec":
        return cls(**{**d, "rule": StopRule(**d.get("rule", {}))})
