"""What a GPU record tells of the GPU's software and power (issue 79): the NVIDIA libraries
jaxlib loaded and their versions, the GPU's UUID and power limit, and a warning where a power
or thermal limit slowed it during the phases. On the CPU, with the fake GPU's NVML."""

import _json
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import pytest
from conftest import run_measure
from fake_gpu import THROTTLED, fake_gpu_env, use_fake_gpu
from test_gpu_paths import nvml_binding

from blockbench.measure import nvidia, provenance
from blockbench.measure.safe_read import safe

WHEEL = "/venv/lib/python3.12/site-packages/nvidia/cublas/lib"
MAPS = f"""\
55d0c8a00000-55d0c8a21000 rw-p 00000000 00:00 0                          [heap]
7f10a0000000-7f10a4000000 r-xp 00000000 08:01 101  {WHEEL}/libcublasLt.so.12
7f10a4000000-7f10a4200000 r--p 04000000 08:01 101  {WHEEL}/libcublasLt.so.12
7f10a5000000-7f10a5800000 r-xp 00000000 08:01 102  {WHEEL}/libcublas.so.12
7f10a6000000-7f10a6100000 r-xp 00000000 08:01 103  /usr/local/cuda-12.8/lib64/libcudart.so.12.8.90
7f10a7000000-7f10a7100000 r-xp 00000000 08:01 104  /usr/lib64/libcuda.so.580.95.05
7f10a8000000-7f10a8100000 r-xp 00000000 08:01 105  /usr/lib64/libnvidia-ml.so.580.95.05
7f10a9000000-7f10a9100000 r-xp 00000000 08:01 106  /usr/lib64/libm.so.6
7f10aa000000-7f10aa100000 r-xp 00000000 08:01 107  /opt/cudnn/lib/libcudnn_graph.so.9.8.0 (deleted)
7f10ab000000-7f10ab001000 rw-p 00000000 00:00 0
"""


def test_the_nvidia_libraries_mapped_are_named_with_the_wheel_that_installed_them():
    """A wheel's file is named by its major only (libcublas.so.12): its distribution gives the
    version. A library no distribution installed keeps its real, versioned name; the driver's
    NVML (pynvml's), the C library and anonymous mappings are left out."""
    owners = {f"{WHEEL}/libcublas.so.12": ("nvidia-cublas-cu12", "12.8.4.1")}
    owners[f"{WHEEL}/libcublasLt.so.12"] = owners[f"{WHEEL}/libcublas.so.12"]
    found = nvidia.nvidia_libraries(MAPS, owners)
    assert [(lib["file"], lib["distribution"], lib["version"]) for lib in found] == [
        ("libcublas.so.12", "nvidia-cublas-cu12", "12.8.4.1"),
        ("libcublasLt.so.12", "nvidia-cublas-cu12", "12.8.4.1"),
        ("libcuda.so.580.95.05", None, None),
        ("libcudart.so.12.8.90", None, None),
        ("libcudnn_graph.so.9.8.0", None, None),
    ]
    assert found[3]["path"] == "/usr/local/cuda-12.8/lib64/libcudart.so.12.8.90"
    assert nvidia.nvidia_libraries("", owners) == []


def fake_install(root: Path) -> Path:
    """A site folder with an nvidia-cublas-cu12 wheel's library and its dist-info, and a system
    CUDA runtime behind its soname's symlink: each a copy of a small shared object (one of
    Python's own extension modules, which a dlopen maps without running it)."""
    site, system = root / "site", root / "cuda/lib64"
    lib = site / "nvidia/cublas/lib"
    lib.mkdir(parents=True)
    system.mkdir(parents=True)
    shutil.copy(_json.__file__, lib / "libcublas.so.12")
    shutil.copy(_json.__file__, system / "libcudart.so.12.8.90")
    (system / "libcudart.so.12").symlink_to("libcudart.so.12.8.90")
    info = site / "nvidia_cublas_cu12-12.8.4.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nvidia-cublas-cu12\nVersion: 12.8.4.1\n"
    )
    (info / "RECORD").write_text(
        "nvidia/cublas/lib/libcublas.so.12,,\nnvidia_cublas_cu12-12.8.4.1.dist-info/RECORD,,\n"
    )
    return site


def test_a_process_that_loaded_nvidia_libraries_names_them_and_their_versions(tmp_path):
    """Read from a real process's memory map: a wheel's file with its wheel's version, a
    system library by its real name, loaded through its soname's symlink."""
    site = fake_install(tmp_path)
    script = (
        "import ctypes, json, sys\n"
        f"sys.path.insert(0, {str(site)!r})\n"
        f"ctypes.CDLL({str(site / 'nvidia/cublas/lib/libcublas.so.12')!r})\n"
        f"ctypes.CDLL({str(tmp_path / 'cuda/lib64/libcudart.so.12')!r})\n"
        "from blockbench.measure import nvidia\n"
        "print(json.dumps(nvidia.loaded_nvidia_libraries()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    found = {lib["file"]: lib for lib in json.loads(done.stdout)}
    assert set(found) == {"libcublas.so.12", "libcudart.so.12.8.90"}
    cublas = found["libcublas.so.12"]
    assert (cublas["distribution"], cublas["version"]) == ("nvidia-cublas-cu12", "12.8.4.1")
    assert cublas["path"] == os.path.realpath(site / "nvidia/cublas/lib/libcublas.so.12")
    assert found["libcudart.so.12.8.90"]["distribution"] is None


def test_this_cpu_process_names_only_what_it_has_mapped():
    """On this machine: no NVIDIA library, or only those really mapped."""
    found = nvidia.loaded_nvidia_libraries()
    maps = Path("/proc/self/maps").read_text()
    assert all(lib["path"] in maps for lib in found)


def test_without_a_memory_map_the_libraries_are_unavailable(monkeypatch, tmp_path):
    """Elsewhere than on Linux: said, never a failed cell."""
    monkeypatch.setattr(nvidia, "Path", lambda path: tmp_path / "no-maps")
    assert "Linux only" in safe(nvidia.loaded_nvidia_libraries)["unavailable"]


def test_nvml_names_the_gpus_uuid_power_limit_and_violation_counters(monkeypatch):
    """Through the fake GPU's NVML: in watts and nanoseconds."""
    use_fake_gpu(monkeypatch)
    nvml = nvidia.nvml_gpu(nvidia.FAKE_PCI_BUS_ID)
    assert nvml["uuid"].startswith("GPU-")
    assert nvml["power_limit_w"] == {"enforced": 700.0, "default": 700.0}
    assert nvml["violation_ns"] == {"power": 12_000_000_000, "thermal": 0}


def test_a_binding_without_them_keeps_the_nvml_record(monkeypatch):
    """An older binding, or a GPU that does not report them: each said unavailable."""
    monkeypatch.setitem(sys.modules, "pynvml", nvml_binding())
    nvml = nvidia.nvml_gpu("0000:3B:00.0")
    assert nvml["driver"] == "580.95.05" and "unavailable" in nvml["uuid"]
    assert "unavailable" in nvml["power_limit_w"]["enforced"]
    assert "unavailable" in nvml["violation_ns"]["power"]


def facts(before: dict, after: dict) -> dict:
    """A GPU record's provenance, as far as throttle_warnings reads it."""
    limit = {"enforced": 700.0, "default": 700.0}
    return {
        "device": {"nvml": {**before, "power_limit_w": limit}},
        "device_after": {"nvml": {**after, "power_limit_w": limit}},
    }


def counters(power: int, thermal: int = 0) -> dict:
    return {"violation_ns": {"power": power, "thermal": thermal}}


@pytest.mark.parametrize(
    ("before", "after", "said"),
    [
        (
            {"throttle_reasons": 0},
            {"throttle_reasons": 4},
            "software power cap (NVML clock event reasons 0x0 at the cell's start, 0x4 after",
        ),
        (
            {"throttle_reasons": 1},
            {"throttle_reasons": 0x48},
            "hardware slowdown and hardware thermal slowdown",
        ),
        (counters(10_000_000_000), counters(11_500_000_000), "power violations held its clocks "),
        (counters(0, 0), counters(0, 250_000_000), "thermal violations held its clocks down 0.25"),
    ],
)
def test_a_throttle_during_the_phases_is_warned_in_one_line(before, after, said):
    """The H200's case (0 before, 4 after), a hardware slowdown, and a grown counter."""
    [warning] = nvidia.throttle_warnings(facts(before, after))
    assert said in warning and warning.startswith("GPU throttled during the phases (power limit")


def test_both_a_throttle_and_its_time_are_one_line():
    before = {"throttle_reasons": 0, **counters(10_000_000_000)}
    after = {"throttle_reasons": 4, **counters(11_500_000_000)}
    [warning] = nvidia.throttle_warnings(facts(before, after))
    assert "software power cap" in warning and "held its clocks down 1.5 s" in warning


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"throttle_reasons": 1}, {"throttle_reasons": 0}),  # idle at the start
        ({"throttle_reasons": 0}, {"throttle_reasons": 1}),  # idle again after
        ({"throttle_reasons": 0}, {"throttle_reasons": 2 | 0x10}),  # app clocks, sync boost
        (counters(10_000_000_000, 5), counters(10_000_000_000, 5)),  # unchanged
        ({"throttle_reasons": {"unavailable": "x"}}, {"throttle_reasons": {"unavailable": "x"}}),
    ],
)
def test_no_warning_without_a_throttle(before, after):
    assert nvidia.throttle_warnings(facts(before, after)) == []


def test_no_warning_without_a_second_reading():
    """A cell that failed before its phases, a CPU cell, NVML unavailable."""
    assert nvidia.throttle_warnings({"device": {"nvml": {"throttle_reasons": 4}}}) == []
    assert nvidia.throttle_warnings({"device": {"platform": "cpu"}}) == []
    unread = {"device": {"nvml": {"unavailable": "x"}}, "device_after": {"nvml": {}}}
    assert nvidia.throttle_warnings(unread) == []


def test_the_fake_gpus_power_cap_is_read_and_warned(monkeypatch):
    """The two readings a GPU cell makes, through the stub NVML whose cap engages."""
    use_fake_gpu(monkeypatch)
    monkeypatch.setenv(THROTTLED, "1")
    cpu = jax.devices("cpu")[0]
    read = {"device": provenance.device(cpu, "gpu"), "device_after": provenance.device(cpu, "gpu")}
    [warning] = nvidia.throttle_warnings(read)
    assert "software power cap" in warning and "held its clocks down 1.5 s" in warning


def test_a_fake_gpu_cells_record_has_the_new_fields_and_its_warning(tmp_path):
    """From the command line down (tests/test_gpu_paths.py's end-to-end cell), on a fake GPU
    whose power cap engages as it works."""
    args = ("--device", "gpu", "--workload", "matmul", "--impl", "jax_jit", "--size", "64")
    flags = ("--max-time-s", "0.05", "--min-samples", "3", "--accelerator-warmup-s", "0.05")
    out, env = tmp_path / "cell.json", fake_gpu_env(throttled=True)
    rc, record, err = run_measure(out, *args, *flags, env=env, lock=tmp_path / "lock")
    assert rc == 0 and record["status"] == "ok", (record and record["reason"]) or err
    device, after = record["provenance"]["device"], record["provenance"]["device_after"]
    assert device["nvml"]["uuid"] == after["nvml"]["uuid"]
    assert after["nvml"]["power_limit_w"] == {"enforced": 700.0, "default": 700.0}
    assert after["nvml"]["throttle_reasons"] == 4
    assert isinstance(after["nvidia_libraries"], list)  # none on the CPU
    [warning] = [w for w in record["warnings"] if w.startswith("GPU throttled")]
    assert "software power cap" in warning
