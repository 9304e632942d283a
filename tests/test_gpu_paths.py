"""The GPU paths, reviewed without a GPU (docs/gpu.md): each fix, on the CPU,
with fakes where the GPU would be."""

import sys
import types
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml
from conftest import run_measure
from fake_gpu import NAME, fake_gpu_env, use_fake_gpu

from blockbench.judge.claim_rules import read_claims
from blockbench.measure import cell, nvidia, parent, phase_record, provenance, sampling
from blockbench.pipeline import grid
from blockbench.records.params import CellSpec, MeasureParams
from blockbench.records.spec import StopRule
from blockbench.workloads import matmul, registry

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("message", "status"),
    [
        ("INTERNAL: CUBLAS_STATUS_ALLOC_FAILED", "oom"),
        ("CUDA_ERROR_OUT_OF_MEMORY: out of memory", "oom"),
        ("CUDNN_STATUS_ALLOC_FAILED", "oom"),
        ("XLA OOM while compiling", "oom"),
        ("no room left in the shape for axis 2", "error"),
        ("zoom factor must be positive", "error"),
    ],
)
def test_out_of_memory_is_matched_by_whole_words_and_cublas_markers(message, status):
    """Review 7: a loose substring called "room" an out-of-memory; cuBLAS's was missed."""
    assert cell.classify(RuntimeError(message)) == status


def test_the_cuda_plugin_and_its_runtime_are_recorded_with_their_versions(tmp_path, monkeypatch):
    """A GPU record names JAX's CUDA plugin and PJRT runtime, found by their dist-info."""
    for name, version in (("jax_cuda12_plugin", "0.10.2"), ("jax_cuda12_pjrt", "0.10.1")):
        info = tmp_path / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    packages = provenance.software()["packages"]
    assert packages["jax-cuda12-plugin"] == "0.10.2"
    assert packages["jax-cuda12-pjrt"] == "0.10.1"
    assert packages["numpy"] == np.__version__


def test_a_copied_tree_without_git_takes_its_commit_from_the_environment(tmp_path, monkeypatch):
    """Review 8: the device machine gets the working tree without .git."""
    monkeypatch.setenv("BLOCKBENCH_GIT_COMMIT", "0123abcd")
    assert provenance.git_commit(tmp_path) == {
        "commit": "0123abcd",
        "dirty": None,
        "from": "BLOCKBENCH_GIT_COMMIT",
    }
    monkeypatch.delenv("BLOCKBENCH_GIT_COMMIT")
    assert provenance.git_commit(tmp_path)["commit"] is None
    assert provenance.git_commit()["commit"]  # a checkout still asks git


def test_gpu_cells_name_their_backend_and_cpu_cells_ignore_an_inherited_one(monkeypatch):
    """Review 2: JAX_PLATFORMS set outright, so a failed CUDA start is loud, and an exported
    JAX_PLATFORMS=cuda cannot make the NumPy baselines unavailable."""
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    assert parent.worker_env("cpu", 2)["JAX_PLATFORMS"] == "cpu"
    assert parent.worker_env("gpu", 2)["JAX_PLATFORMS"] == "cuda,cpu"


def test_a_backend_that_fails_to_start_is_unavailable_with_its_reason(monkeypatch):
    """Review 2: with the platform named, JAX raises the CUDA error; the cell keeps it."""

    def failing(backend=None):
        raise RuntimeError("Unable to initialize backend 'cuda': CUDA_ERROR_NO_DEVICE")

    monkeypatch.setattr(cell.jax, "devices", failing)
    with pytest.raises(cell.Unavailable, match=r"no gpu device: Unable to initialize.*NO_DEVICE"):
        cell.resolve_device("gpu")


def test_thread_parity_is_flagged_on_cpu_cells_only():
    """Review 10: a GPU cell's XLA CPU threads do not compute what is timed."""
    phase = {"n": 5, "stop": "converged", "iqr_s": 0.0, "median_s": 1.0}
    threads = {"parity": False, "n_cores": 16, "mismatch": "XLA 8"}
    record = {"provenance": {"threads": threads}, "phases": {"steady": phase}}
    assert any("thread parity" in w for w in phase_record.warnings(record, 2, "cpu"))
    assert phase_record.warnings(record, 2, "gpu") == []


@pytest.mark.parametrize(
    ("platform", "capability", "precision", "tf32_override", "computes"),
    [
        ("gpu", "9.0", "default", None, "tensorfloat32"),
        ("gpu", "9.0", "highest", None, "float32"),
        ("gpu", "9.0", "default", "0", "float32 (NVIDIA_TF32_OVERRIDE=0)"),
        ("gpu", "7.5", "default", None, "float32 (no TF32 before compute capability 8.0)"),
        ("cpu", None, "default", None, "float32"),
        ("tpu", None, "default", None, "bfloat16"),
    ],
)
def test_the_effective_float32_matmul_precision_is_recorded(
    monkeypatch, platform, capability, precision, tf32_override, computes
):
    """Review 5: `default` means TF32 on an H100 (NumPy and the articles' T4: float32)."""
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    if tf32_override is not None:
        monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", tf32_override)
    assert provenance.float32_matmul(platform, capability, precision) == computes
    assert ("NVIDIA_TF32_OVERRIDE" in provenance.environment()) == (tf32_override is not None)


def test_a_gpu_device_record_names_its_precision_and_model(monkeypatch):
    """Reviews 5 and 11: the device record of a (fake) H100, NVML left out."""
    monkeypatch.setattr(provenance, "cuda_pci_bus_id", lambda ordinal: "0000:3B:00.0")
    monkeypatch.setattr(provenance, "nvml_gpu", lambda bus_id: {"name": "NVIDIA H100 80GB HBM3"})
    info = provenance.device(FakeGpu())
    assert info["float32_matmul_inferred"] == "tensorfloat32"
    assert info["compute_capability"] == "9.0" and "faked" not in info
    assert info["model"] == "NVIDIA H100 80GB HBM3"  # where aggregate.device_model reads it
    assert info["memory_stats"]["peak_bytes_in_use"] == 7


class FakeGpu:
    """What provenance reads of a JAX CUDA device."""

    platform, id, device_kind, compute_capability = "gpu", 0, "NVIDIA H100 80GB HBM3", "9.0"
    client = None

    def memory_stats(self) -> dict[str, int]:
        return {"bytes_limit": 80, "bytes_in_use": 5, "peak_bytes_in_use": 7}


def test_nvml_reads_the_gpu_cuda_uses_by_its_pci_bus_id(monkeypatch):
    """Review 3: NVML's index ignores CUDA_VISIBLE_DEVICES; the PCI bus id does not."""
    asked = []
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: pytest.fail("NVML index used"),
        nvmlDeviceGetHandleByPciBusId=lambda bus: asked.append(bus) or "h",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=80, used=1),
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",
        nvmlSystemGetDriverVersion=lambda: "580.65",
        nvmlSystemGetCudaDriverVersion=lambda: 13000,
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=b"00000000:3B:00.0"),
        nvmlDeviceGetClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetTemperature=lambda h, kind: 40,
        nvmlDeviceGetPowerUsage=lambda h: 350000,
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0,
        NVML_CLOCK_SM=0,
        NVML_CLOCK_MEM=1,
        NVML_TEMPERATURE_GPU=0,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    ordinals = []
    monkeypatch.setattr(
        provenance, "cuda_pci_bus_id", lambda n: ordinals.append(n) or "0000:3B:00.0"
    )
    gpu = FakeGpu()
    gpu.id, gpu.local_hardware_id = 5, 0  # the first visible GPU of the process
    nvml = provenance.device(gpu)["nvml"]
    assert ordinals == [0] and asked == [b"0000:3B:00.0"]
    assert nvml["name"] == "NVIDIA H100 80GB HBM3" and nvml["pci_bus_id"] == "00000000:3B:00.0"


def test_device_state_is_read_again_after_the_phases(monkeypatch):
    """Review 4: clocks, power and peak memory at cell start are idle values."""
    reads = iter(range(1, 10))
    monkeypatch.setattr(provenance, "device", lambda dev, on: {"read": next(reads), "model": on})
    rule = StopRule(min_samples=2, min_time_s=0.0, max_time_s=0.02)
    record = cell.measure(
        CellSpec("cpu", "selu", "jax_jit", 100, MeasureParams(rule=rule)), lambda p: None
    )
    assert record["status"] == "ok", record["reason"]
    assert record["provenance"]["device"]["read"] == 1
    assert record["provenance"]["device_after"] == {"read": 2, "model": "cpu"}


@pytest.mark.parametrize("impl", ["jax_jit", "jax"])
def test_an_accelerators_first_call_is_one_cold_call_before_any_compile(monkeypatch, impl):
    """Review 1: XLA's autotuning survives jax.clear_caches(), so only the first compile of
    a program in a process is cold; on the CPU the order and sampling stay as they were."""
    monkeypatch.setattr(cell.jax, "device_put", lambda args, dev: args)
    monkeypatch.setattr(cell.harness, "block", lambda tree: tree)
    _, entry = registry.lookup("gpu", "matmul", impl, 8)
    host = (np.ones((8, 8), np.float32),)
    on_gpu = cell.phase_plan(entry, FakeGpu(), host)
    assert on_gpu[1].name == "first_call" and on_gpu[1].once and on_gpu[1].note
    on_cpu = cell.phase_plan(entry, types.SimpleNamespace(platform="cpu"), host)
    names = [p.name for p in on_cpu]
    assert not on_cpu[names.index("first_call")].once
    if impl == "jax_jit":
        assert names.index("compile") < names.index("first_call")


def test_the_copy_b2_adds_up_is_the_two_arrays_test_d_sends(monkeypatch):
    """Review 6: `jnp.dot(x_np, x_np.T)` copies x and its transposed view; timing one copy
    of x would make test D look dearer than E plus its copy."""
    sent = []
    monkeypatch.setattr(cell.harness, "host_to_device", lambda args, dev: sent.append(args))
    _, entry = registry.lookup("gpu", "matmul", "jax_numpy_input", 8)
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    [h2d] = cell.phase_plan(entry, FakeGpu(), (x,), ("host_to_device",))
    h2d.build()
    assert len(sent[0]) == 2 and np.array_equal(sent[0][1], x.T)


def test_a_gpu_run_of_the_default_grid_adds_only_claimed_gpu_cells():
    """Review 9: stencil, grad and Source A's cells stay on the CPU, as no claim part reads
    them on a GPU."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config["devices"] = ["cpu", "gpu"]
    claims = read_claims(ROOT / "config/claims/articles")
    on_gpu = {c.workload for c in grid.plan(config, claims) if c.device == "gpu"}
    assert on_gpu == {"matmul", "selu"}


def nvml_binding(**calls) -> types.SimpleNamespace:
    """An NVML binding as nvml_gpu reads it, less the clock-event call (given in `calls`)."""
    return types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByPciBusId=lambda bus: "h",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=80, used=1),
        nvmlDeviceGetName=lambda h: "NVIDIA H100 80GB HBM3",
        nvmlSystemGetDriverVersion=lambda: "580.95.05",
        nvmlSystemGetCudaDriverVersion=lambda: 13000,
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId="00000000:3B:00.0"),
        nvmlDeviceGetClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetTemperature=lambda h, kind: 40,
        nvmlDeviceGetPowerUsage=lambda h: 350000,
        NVML_CLOCK_SM=0,
        NVML_CLOCK_MEM=1,
        NVML_TEMPERATURE_GPU=0,
        **calls,
    )


def test_a_binding_without_the_old_throttle_call_keeps_the_nvml_record(monkeypatch):
    """Newer NVML bindings name it ClocksEventReasons: looked up outside `safe`, the old
    name's absence lost the whole record (clocks, driver, memory)."""
    newer = nvml_binding(nvmlDeviceGetCurrentClocksEventReasons=lambda h: 4)
    monkeypatch.setitem(sys.modules, "pynvml", newer)
    nvml = nvidia.nvml_gpu("0000:3B:00.0")
    assert nvml["throttle_reasons"] == 4 and nvml["clocks_mhz"]["sm"] == 1980
    monkeypatch.setitem(sys.modules, "pynvml", nvml_binding())  # neither name
    nvml = nvidia.nvml_gpu("0000:3B:00.0")
    assert "unavailable" in nvml["throttle_reasons"] and nvml["driver"] == "580.95.05"


def test_the_environment_keeps_nvidia_and_xla_client_variables(monkeypatch):
    """Where the GPU's memory and visibility are set (XLA_PYTHON_CLIENT_MEM_FRACTION=.9
    leaves another cell less): every record keeps them."""
    for key in ("NVIDIA_VISIBLE_DEVICES", "XLA_PYTHON_CLIENT_PREALLOCATE", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.setenv(key, "0")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".9")
    env = provenance.environment()
    assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == ".9" and env["NVIDIA_VISIBLE_DEVICES"] == "0"
    assert {"XLA_PYTHON_CLIENT_PREALLOCATE", "CUDA_VISIBLE_DEVICES"} <= set(env)


def test_a_gpu_cell_on_the_fake_gpu_goes_through_every_gpu_path(tmp_path):
    """The suite's GPU: JAX's CPU device, run as a GPU cell from the command line down, with
    nvidia-smi, NVML and the CUDA plugin stubbed (tests/fake_gpu.py)."""
    args = ("--device", "gpu", "--workload", "matmul", "--impl", "jax_jit", "--size", "64")
    flags = ("--max-time-s", "0.05", "--min-samples", "3", "--accelerator-warmup-s", "0.05")
    out = tmp_path / "cell.json"
    rc, record, err = run_measure(out, *args, *flags, env=fake_gpu_env(), lock=tmp_path / "lock")
    assert rc == 0 and record["status"] == "ok", (record and record["reason"]) or err
    assert list(record["phases"]) == [
        "host_to_device",
        "first_call",  # one cold call, before any other compile: the GPU plan
        "trace_lower",
        "compile",
        "dispatch",
        "steady",
        "asarray",
        "device_to_host",
    ]
    first = record["phases"]["first_call"]
    assert first["n"] == 1 and first["note"] == cell.COLD_FIRST_CALL
    device, after = record["provenance"]["device"], record["provenance"]["device_after"]
    assert device["platform"] == "gpu" and device["faked"] is True and device["model"] == NAME
    assert device["compute_capability"] == "9.0"
    assert device["nvml"]["name"] == NAME and device["nvml"]["pci_bus_id"] == "00000000:FA:00.0"
    # NVML read at the start (the stub's idle clocks) and again after the phases
    assert device["nvml"]["clocks_mhz"]["sm"] < after["nvml"]["clocks_mhz"]["sm"]
    assert after["faked"] is True and after["nvml"]["throttle_reasons"] == 0
    # what the device is assumed to compute, and what its output shows it computed
    assert device["float32_matmul_inferred"] == "tensorfloat32"
    assert record["check"]["matmul_precision_measured"] == "float32"
    assert record["provenance"]["software"]["packages"]["jax-cuda13-plugin"] == "0.11.2"


def test_the_fake_gpu_is_only_the_test_suites(monkeypatch):
    """Unset, a GPU cell never runs on the CPU; set, a CPU cell stays a CPU cell, and a
    GPU cell's record says it was faked."""
    monkeypatch.delenv(nvidia.FAKE_GPU, raising=False)
    assert nvidia.fake_gpu("gpu") is None
    cpu = jax.devices("cpu")[0]
    use_fake_gpu(monkeypatch)
    assert nvidia.fake_gpu("cpu") is None and nvidia.fake_gpu("gpu") == NAME
    assert cell.resolve_device("gpu") == cpu
    as_cpu = provenance.device(cpu, "cpu")
    assert as_cpu["platform"] == "cpu" and "faked" not in as_cpu and "nvml" not in as_cpu
    assert as_cpu["model"] == provenance.cpu_model()  # the model, whatever the platform
    as_gpu = provenance.device(cpu, "gpu")
    assert as_gpu["faked"] and as_gpu["model"] == NAME and as_gpu["nvml"]["driver"]


def spied_measure(monkeypatch, spec: CellSpec) -> tuple[dict, dict[str, sampling.Sampler]]:
    """A cell's record, and the sampler of each phase (what its warm-up was)."""
    made: list[sampling.Sampler] = []

    class Spy(sampling.Sampler):
        def __init__(self, *args, **options):
            super().__init__(*args, **options)
            made.append(self)

    monkeypatch.setattr(cell, "Sampler", Spy)
    record = cell.measure(spec, lambda partial: None)
    assert record["status"] == "ok", record["reason"]
    return record, dict(zip(record["phases"], made, strict=True))


WARM = StopRule(
    min_samples=3, min_time_s=0.0, max_time_s=0.02, warmup_s=0.02, accelerator_warmup_s=0.08
)


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_gpus_repeated_call_phases_warm_their_own_clocks_up(monkeypatch, device):
    """On a GPU, dispatch, steady and asarray warm up for `accelerator_warmup_s` of their own
    calls, though host_to_device warmed the process before them: its clocks rise only under
    load. On the CPU they take their count alone, as before."""
    use_fake_gpu(monkeypatch)
    spec = CellSpec(device, "selu", "jax_jit", 1000, MeasureParams(rule=WARM))
    _, samplers = spied_measure(monkeypatch, spec)
    assert samplers["host_to_device"].warms_for == WARM.warmup_s
    turns = [samplers[name] for name in ("dispatch", "steady", "asarray")]
    if device == "gpu":
        assert all(s.warms_for == WARM.accelerator_warmup_s for s in turns)
        # their warm-up calls' own time (the loop around them takes the rest)
        assert sum(sum(s.walls) for s in turns) >= 0.75 * WARM.accelerator_warmup_s
    else:
        assert all(s.warms_for == 0 for s in turns)
    assert samplers["device_to_host"].warms_for == 0  # a copy: the count alone


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_gpu_steady_only_cell_is_never_warmed_by_its_check(monkeypatch, device):
    """A GPU's check call is the program's first: a cold compile, after which the device
    idles. On the CPU a check call of `warmup_s` or more (here 0) stays the warm-up."""
    use_fake_gpu(monkeypatch)
    rule = replace(WARM, warmup_s=0.0)
    spec = CellSpec(device, "matmul", "jax_jit", 64, MeasureParams(rule=rule, phases=("steady",)))
    record, samplers = spied_measure(monkeypatch, spec)
    steady = samplers["steady"]
    if device == "gpu":
        assert steady.warms_for == rule.accelerator_warmup_s
        assert sum(steady.walls) >= 0.75 * rule.accelerator_warmup_s
        assert "note" not in record["phases"]["steady"]
    else:
        assert steady.warms_for == 0 and record["phases"]["steady"]["note"] == cell.WARMED_BY_CHECK
    assert cell.warms_fully(1.0, rule, "cpu") and not cell.warms_fully(1.0, rule, "gpu")


def test_only_an_accelerators_repeated_call_phases_ramp():
    """warm_rule: `ramps` overrides a settled process and keeps the count; the CPU's rules
    are as they were."""
    ramped = cell.warm_rule(WARM, warmed_by_check=False, settled=True, ramps=True)
    assert ramped.warmup_s == WARM.accelerator_warmup_s and ramped.warmup == WARM.warmup
    assert cell.warm_rule(WARM, False, True) == replace(WARM, warmup_s=0.0)
    assert cell.warm_rule(WARM, False, False) == WARM


def tf32(x: np.ndarray, truncate: bool = False) -> np.ndarray:
    """x with TF32's 10-bit mantissa: rounded to nearest (even), or its low 13 bits dropped."""
    bits = x.astype(np.float32).view(np.uint32)
    if not truncate:
        bits = bits + (np.uint32(0x0FFF) + ((bits >> np.uint32(13)) & np.uint32(1)))
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


@pytest.mark.parametrize("size", [64, 700])
def test_the_matmul_check_tells_tf32_from_float32_by_its_error(size):
    """The normwise tolerance passes both; the error in units of each entry's products
    tells them apart at any size (the figures: blockbench.workloads.matmul)."""
    workload = registry.WORKLOADS["matmul"]
    inputs = workload.make_inputs(size, np.random.default_rng(1))
    (x,) = inputs
    computed = {
        "float32": np.dot(x, x.T),
        "tf32 rounded": np.dot(tf32(x), tf32(x).T),
        "tf32 truncated": np.dot(tf32(x, True), tf32(x, True).T),
    }
    read = {}
    for name, out in computed.items():
        check = cell.check_record(workload, registry.impls_of("matmul")["numpy"], inputs, out, None)
        assert check["passed"] and check["matmul_unit_err_threshold"] == matmul.PRECISION_THRESHOLD
        read[name] = check["matmul_precision_measured"]
    assert read == {
        "float32": "float32",
        "tf32 rounded": "tensorfloat32 or lower",
        "tf32 truncated": "tensorfloat32 or lower",
    }
    # with a margin: float32 well under the threshold, TF32 well over it
    assert matmul.unit_error(inputs, computed["float32"]) < matmul.PRECISION_THRESHOLD / 10
    assert matmul.unit_error(inputs, computed["tf32 rounded"]) > matmul.PRECISION_THRESHOLD * 10
    assert registry.WORKLOADS["dot_xx"].precision is None  # its sums cannot tell (matmul.py)


def test_a_cpu_matmul_cell_records_its_measured_precision():
    rule = StopRule(min_samples=3, min_time_s=0.0, max_time_s=0.02)
    record = cell.measure(
        CellSpec("cpu", "matmul", "numpy", 64, MeasureParams(rule=rule)), lambda p: None
    )
    assert record["check"]["matmul_precision_measured"] == "float32"
    assert record["provenance"]["device"]["float32_matmul_inferred"] == "float32"
