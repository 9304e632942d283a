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
    "asarray",
    "device_to_host",
)
# What each phase times, in words, for figures and reports.
PHASE_WORDS = {
    "host_to_device": "copy to device",
    "trace_lower": "trace and lower",
    "compile": "XLA compile",
    "first_call": "first call",
    "dispatch": "dispatch (unblocked)",
    "steady": "blocked call",
    "asarray": "np.asarray(result)",
    "device_to_host": "copy to host",
}
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
    # The CPUs the worker pins itself to; NumPy's BLAS and XLA's pool get one thread each.
    cores: tuple[int, ...] = ()
    threads: int | None = None  # the `threads` the user asked for (None: every allowed core)
    # Phases to measure (None: every phase that applies to the implementation).
    phases: tuple[str, ...] | None = None
    # Wall-clock time (time.time()) by which sampling stops, so that the cell ends inside its
    # budget with what it has, instead of being killed (None: no deadline).
    deadline: float | None = None
    # JAX cells: the measuring thread on a core outside the cell's, where there is one
    # (cores.separate_measuring_thread)
    isolate: bool = True
    # cores the job may use beyond the cell's (where the measuring thread can go)
    spare_cores: tuple[int, ...] = ()

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
        phases = d.get("phases")
        return cls(
            **{
                **d,
                "rule": StopRule(**d.get("rule", {})),
                "cores": tuple(d.get("cores", ())),
                "spare_cores": tuple(d.get("spare_cores", ())),
                "phases": tuple(phases) if phases is not None else None,
            }
        )
