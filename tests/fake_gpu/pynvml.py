"""Test-only (tests/fake_gpu.py): NVML as nvidia-ml-py binds it, for the fake GPU.

Plausible numbers for an H100 that idles before the cell's work (the first reading of the
process) and runs at its boost clock after. Only the newer name of the clock-event call is
bound, as bindings that dropped ClocksThrottleReasons do. Where BLOCKBENCH_FAKE_GPU_THROTTLED
is set, its software power cap engages during the work: reasons 0x4 and 1.5 s more of power
violations in the reading after.
"""

import os
from types import SimpleNamespace

NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2
NVML_TEMPERATURE_GPU = 0
NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL = 0, 1
BUS_ID = "00000000:FA:00.0"  # blockbench.measure.nvidia.FAKE_PCI_BUS_ID
_inits = 0


def nvmlInit() -> None:
    global _inits
    _inits += 1


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetHandleByPciBusId(bus_id: bytes) -> str:
    if bus_id.decode() != BUS_ID:
        raise RuntimeError(f"NVML_ERROR_NOT_FOUND: no GPU at {bus_id!r}")
    return "fake-handle"


def nvmlDeviceGetName(handle: str) -> str:
    return os.environ.get("BLOCKBENCH_FAKE_GPU", "Fake H100 (tests)")


def nvmlSystemGetDriverVersion() -> str:
    return "580.95.05"


def nvmlSystemGetCudaDriverVersion() -> int:
    return 13000


def nvmlDeviceGetPciInfo(handle: str) -> SimpleNamespace:
    return SimpleNamespace(busId=BUS_ID.encode())


def nvmlDeviceGetMemoryInfo(handle: str) -> SimpleNamespace:
    return SimpleNamespace(total=85_520_809_984, used=(512 if _inits <= 1 else 4096) << 20)


def nvmlDeviceGetClockInfo(handle: str, kind: int) -> int:
    idle = _inits <= 1
    return {NVML_CLOCK_SM: 345 if idle else 1980, NVML_CLOCK_MEM: 1593 if idle else 2619}[kind]


def nvmlDeviceGetMaxClockInfo(handle: str, kind: int) -> int:
    return {NVML_CLOCK_SM: 1980, NVML_CLOCK_MEM: 2619}[kind]


def nvmlDeviceGetTemperature(handle: str, kind: int) -> int:
    return 31 if _inits <= 1 else 44


def nvmlDeviceGetPowerUsage(handle: str) -> int:
    return 68_000 if _inits <= 1 else 310_000  # milliwatts


def _throttled() -> bool:
    return _inits > 1 and bool(os.environ.get("BLOCKBENCH_FAKE_GPU_THROTTLED"))


def nvmlDeviceGetCurrentClocksEventReasons(handle: str) -> int:
    if _throttled():
        return 0x4  # software power cap
    return 0x1 if _inits <= 1 else 0x0  # GPU idle, then none


def nvmlDeviceGetUUID(handle: str) -> str:
    return "GPU-fa4e0000-0000-4000-8000-0000000000fa"


def nvmlDeviceGetEnforcedPowerLimit(handle: str) -> int:
    return 700_000  # milliwatts


def nvmlDeviceGetPowerManagementDefaultLimit(handle: str) -> int:
    return 700_000


def nvmlDeviceGetViolationStatus(handle: str, policy: int) -> SimpleNamespace:
    """Nanoseconds held down since the driver loaded (and the CPU's time, microseconds)."""
    held = {NVML_PERF_POLICY_POWER: 12_000_000_000, NVML_PERF_POLICY_THERMAL: 0}[policy]
    if policy == NVML_PERF_POLICY_POWER and _throttled():
        held += 1_500_000_000
    return SimpleNamespace(referenceTime=1_790_000_000_000_000 + _inits, violationTime=held)
