"""The NVIDIA GPU a cell ran on, as CUDA and NVML tell it, and the test suite's fake GPU.

Apart from provenance because only a GPU cell reads it: CUDA's bus id names the GPU this
process uses, NVML its driver, memory and clocks (each read best-effort, as provenance's).
"""

import ctypes
import os
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
    """Driver, memory and clocks of the NVIDIA GPU at `pci_bus_id`, read through NVML now
    (at cell start, and again after the phases: blockbench.measure.cell)."""
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
        }
    finally:
        nv.nvmlShutdown()


def clock_event_reasons(nv: Any, handle: Any) -> int:
    """Why the clocks are below their maximum (a bit mask): newer bindings name the call
    ClocksEventReasons, and may drop the older ClocksThrottleReasons."""
    get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
    return (get or nv.nvmlDeviceGetCurrentClocksThrottleReasons)(handle)
