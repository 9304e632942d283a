"""The NVIDIA GPU a cell ran on, as CUDA and NVML tell it, and the test suite's fake GPU.

Apart from provenance because only a GPU cell reads it: CUDA's bus id names the GPU this
process uses, NVML its driver, memory, clocks and power, the process's memory map the NVIDIA
libraries jaxlib loaded (each read best-effort, as provenance's).
"""

import ctypes
import importlib.metadata
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from blockbench.measure.safe_read import safe

# Tests only: the GPU a cell asked for the GPU runs as, on JAX's CPU device, through every
# GPU code path (tests/fake_gpu.py puts nvidia-smi, pynvml and a CUDA plugin's dist-info
# stubs first on PATH and PYTHONPATH); every record says it was faked (`device.faked`).
FAKE_GPU = "BLOCKBENCH_FAKE_GPU"
FAKE_PCI_BUS_ID = "00000000:FA:00.0"


def fake_gpu(device: str) -> str | None:
    """Test-only: the made-up GPU a `device` cell runs as on the CPU ($BLOCKBENCH_FAKE_GPU);
    None in every real run."""
    return (os.environ.get(FAKE_GPU) or None) if device == "gpu" else None


class FakedGpu:
    """Test-only (FAKE_GPU): JAX's CPU device as `device` reads a CUDA device of the given
    name, compute capability 9.0, the process's first."""

    platform, compute_capability, local_hardware_id = "gpu", "9.0", 0

    def __init__(self, cpu: Any, name: str) -> None:
        self.id, self.client, self.device_kind = cpu.id, cpu.client, name
        self.memory_stats = cpu.memory_stats


def cuda_ordinal(dev: Any) -> int:
    """The device's CUDA ordinal in this process (after CUDA_VISIBLE_DEVICES): JAX's local
    hardware id, which is 0 for the first GPU (so not `or dev.id`)."""
    local = getattr(dev, "local_hardware_id", None)
    return dev.id if local is None else local


def cuda_pci_bus_id(ordinal: int) -> str:
    """The PCI bus id of CUDA device `ordinal`, from the CUDA driver. NVML counts every GPU
    of the node in PCI order and ignores CUDA_VISIBLE_DEVICES, so its index would name
    another GPU on a shared node (or one SLURM's ConstrainDevices forbids): the bus id
    names the one CUDA, and so JAX, uses."""
    if fake_gpu("gpu"):
        return FAKE_PCI_BUS_ID  # no CUDA driver to ask
    cuda = ctypes.CDLL("libcuda.so.1")
    handle, bus_id = ctypes.c_int(), ctypes.create_string_buffer(64)
    for call, args in (
        (cuda.cuInit, (0,)),
        (cuda.cuDeviceGet, (ctypes.byref(handle), ordinal)),
        (cuda.cuDeviceGetPCIBusId, (bus_id, len(bus_id), handle)),
    ):
        if (code := call(*args)) != 0:
            raise OSError(f"CUDA driver error {code} in {call.__name__}")
    return bus_id.value.decode()


def _text(value: Any) -> Any:
    """NVML strings: bytes in older bindings, str in newer ones."""
    return value.decode() if isinstance(value, bytes) else value


def nvml_gpu(pci_bus_id: str) -> dict[str, Any]:
    """Driver, memory, clocks and power of the NVIDIA GPU at `pci_bus_id`, read through NVML
    now (at cell start, and again after the phases: blockbench.measure.cell)."""
    import pynvml as nv

    nv.nvmlInit()
    try:
        h = nv.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        clock = nv.nvmlDeviceGetClockInfo
        max_clock = nv.nvmlDeviceGetMaxClockInfo
        return {
            "name": _text(nv.nvmlDeviceGetName(h)),
            "driver": _text(nv.nvmlSystemGetDriverVersion()),
            "cuda_driver": nv.nvmlSystemGetCudaDriverVersion(),
            "pci_bus_id": _text(nv.nvmlDeviceGetPciInfo(h).busId),
            "matched_by": f"CUDA's PCI bus id {pci_bus_id}",
            "memory_total_bytes": mem.total,
            "memory_used_bytes": mem.used,
            "clocks_mhz": {"sm": clock(h, nv.NVML_CLOCK_SM), "mem": clock(h, nv.NVML_CLOCK_MEM)},
            "max_clocks_mhz": {
                "sm": max_clock(h, nv.NVML_CLOCK_SM),
                "mem": max_clock(h, nv.NVML_CLOCK_MEM),
            },
            "temperature_c": safe(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
            "power_w": safe(lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
            "throttle_reasons": safe(clock_event_reasons, nv, h),
            # which of the node's GPUs it was, whatever its bus or index on another boot
            "uuid": safe(lambda: _text(nv.nvmlDeviceGetUUID(h))),
            # a limit set below the default caps the clocks of every heavy cell
            "power_limit_w": {
                "enforced": safe(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
                "default": safe(lambda: nv.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0),
            },
            "violation_ns": {policy: safe(violation_ns, nv, h, policy) for policy in VIOLATIONS},
        }
    finally:
        nv.nvmlShutdown()


def clock_event_reasons(nv: Any, handle: Any) -> int:
    """Why the clocks are below their maximum (a bit mask): newer bindings name the call
    ClocksEventReasons, and may drop the older ClocksThrottleReasons."""
    get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
    return (get or nv.nvmlDeviceGetCurrentClocksThrottleReasons)(handle)


# NVML's cumulative violation counters (nvmlDeviceGetViolationStatus) kept in a record: how
# long, since the driver loaded, power or heat held the clocks below the applications clocks.
VIOLATIONS = {"power": "NVML_PERF_POLICY_POWER", "thermal": "NVML_PERF_POLICY_THERMAL"}


def violation_ns(nv: Any, handle: Any, policy: str) -> int:
    """Nanoseconds `policy` (a VIOLATIONS key) has held the clocks down since the driver loaded:
    two readings' difference is the throttled time between them, however short, where the
    clock event reasons are a snapshot at each reading."""
    return int(
        nv.nvmlDeviceGetViolationStatus(handle, getattr(nv, VIOLATIONS[policy])).violationTime
    )


# The clock event reasons (nvmlClocksEventReason*) that slow a GPU at work; GPU idle (0x1),
# the applications clocks setting (0x2), sync boost (0x10) and the display clock (0x100) do not.
THROTTLES = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


def throttle_warnings(facts: Mapping[str, Any]) -> list[str]:
    """One line where a power or thermal limit slowed the GPU during a cell's phases, as its
    provenance (`facts`) shows: a throttle among NVML's clock event reasons read after the
    phases (`device_after`), or a violation counter grown since the cell's start (`device`).
    Its times are then of a throttled GPU, which a record's clocks alone do not tell (an H200's
    software power cap engaged unwarned, 0 before and 4 after)."""
    before, after = ((facts.get(key) or {}).get("nvml") for key in ("device", "device_after"))
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    said = []
    reasons = after.get("throttle_reasons")
    if isinstance(reasons, int) and (names := [n for bit, n in THROTTLES.items() if reasons & bit]):
        start = before.get("throttle_reasons")
        shown = f"{start:#x}" if isinstance(start, int) else "unread"
        said.append(
            f"{' and '.join(names)} (NVML clock event reasons {shown} at the cell's start, "
            f"{reasons:#x} after its phases)"
        )
    counters = (before.get("violation_ns") or {}, after.get("violation_ns") or {})
    for policy in VIOLATIONS:
        start, end = (c.get(policy) for c in counters)
        if isinstance(start, int) and isinstance(end, int) and end > start:
            said.append(f"{policy} violations held its clocks down {(end - start) / 1e9:.3g} s")
    if not said:
        return []
    limit = (after.get("power_limit_w") or {}).get("enforced")
    of = f" (power limit {limit:g} W)" if isinstance(limit, float | int) else ""
    return [f"GPU throttled during the phases{of}: {'; '.join(said)}: its times are a slowed GPU's"]


# The NVIDIA libraries a JAX CUDA process may map, by the name of their file (a soname, or
# the real name it links to): CUDA's runtime and driver, cuBLAS(Lt), cuDNN's parts, cuFFT,
# cuRAND, cuSOLVER, cuSPARSE(Lt), NCCL, NVSHMEM, nvJitLink, NVRTC, CUPTI.
NVIDIA_LIBRARY = re.compile(
    r"lib(?:cudart|cuda|cublas(?:Lt)?|cudnn\w*|cufft\w*|curand|cusolver(?:Mg)?|cusparse(?:Lt)?"
    r"|nccl|nvshmem\w*|nvJitLink|nvrtc(?:-builtins)?|cupti)\.so(?:\.[0-9.]+)?"
)


def nvidia_libraries(
    maps: str, owners: Mapping[str, tuple[str, str]]
) -> list[dict[str, str | None]]:
    """The NVIDIA libraries mapped in a process whose /proc/<pid>/maps reads `maps`: each file
    (its path as the kernel resolved it, symlinks followed, so a system install keeps its
    versioned name, libcublas.so.12.8.4.1), and the distribution that installed it and its
    version where `owners` (file path -> (distribution, version)) knows it (a pip wheel's
    file is named by its major version only, libcublas.so.12)."""
    paths = set()
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6:
            path = fields[5].removesuffix(" (deleted)")
            if NVIDIA_LIBRARY.fullmatch(os.path.basename(path)):
                paths.add(path)
    found = []
    for path in sorted(paths, key=os.path.basename):
        distribution, version = owners.get(path, (None, None))
        found.append(
            {
                "file": os.path.basename(path),
                "path": path,
                "distribution": distribution,
                "version": version,
            }
        )
    return found


def wheel_files(entries: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Each file the NVIDIA wheels (nvidia-*: nvidia-cublas-cu12, nvidia-cudnn-cu13, ...) of
    these sys.path entries installed, by its resolved path -> (distribution, version). Only
    their dist-infos are read: parsing every distribution's took 0.2 s (provenance's
    cuda_plugins). A wheel holds no symlinks, so resolving its folder resolves its files."""
    owners: dict[str, tuple[str, str]] = {}
    for entry in entries:
        site = os.path.realpath(entry or ".")
        for info in Path(site).glob("nvidia_*.dist-info"):
            dist = importlib.metadata.Distribution.at(info)
            for file in dist.files or ():
                path = os.path.normpath(os.path.join(site, file))
                owners.setdefault(path, (dist.metadata["Name"], dist.version))
    return owners


def loaded_nvidia_libraries() -> list[dict[str, str | None]]:
    """The NVIDIA libraries this process has mapped now, with their versions. Read after the
    phases too (`device_after`): jaxlib loads cuBLAS, cuDNN and the others when a program
    first needs them."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        raise OSError(f"no {maps} on {sys.platform}: the mapped libraries are read on Linux only")
    return nvidia_libraries(maps.read_text(), wheel_files(sys.path))
