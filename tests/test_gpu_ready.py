"""The check before any GPU job: each cause in its own line, read with fakes where the driver,
the GPU and the CUDA plugin would be; the bootstrap runs nothing after a failed check."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from blockbench.measure import gpu_ready

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bootstrap  # noqa: E402
from fake_gpu import NAME, fake_gpu_env, use_fake_gpu  # noqa: E402
from tiny import TINY, workflow_copy  # noqa: E402

CUDA12 = ("jax-cuda12-plugin 0.10.2", gpu_ready.PLUGINS["jax-cuda12-plugin"])
H100 = "570.86.15, NVIDIA H100 80GB HBM3\n"
# How JAX 0.10.2's CUDA plugin fails to start on a machine without a GPU (its stderr, cut)
CUDA_FAILED = """Jax plugin configuration error: Exception when calling initialize()
Traceback (most recent call last):
RuntimeError: jaxlib/cuda/versions_helpers.cc:135: operation cuInit(0) failed: error 303
Traceback (most recent call last):
AssertionError
"""
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def fake_run(smi: tuple[int, str], jax: tuple[int, str, str] = (0, '["cuda:0"]', "")):
    """nvidia-smi's and the JAX query's answers: (status, stdout[, stderr])."""

    def run(cmd, **kw):
        if cmd[0].endswith("nvidia-smi"):
            return subprocess.CompletedProcess(cmd, smi[0], smi[1], "")
        assert kw["env"]["JAX_PLATFORMS"] == "cuda"  # never a fall-back to the CPU
        return subprocess.CompletedProcess(cmd, *jax)

    return run


@pytest.fixture
def machine(monkeypatch):
    def make(smi_path="/usr/bin/nvidia-smi", plugin=CUDA12):
        monkeypatch.setattr(gpu_ready.shutil, "which", lambda name: smi_path)
        monkeypatch.setattr(gpu_ready, "installed_plugin", lambda: plugin)

    return make


@pytest.mark.parametrize(
    ("smi_path", "plugin", "run", "says"),
    [
        (None, CUDA12, fake_run((0, H100)), "no driver: nvidia-smi is not on PATH"),
        (
            "/usr/bin/nvidia-smi",
            CUDA12,
            fake_run((9, NO_DRIVER)),
            f"no driver: nvidia-smi failed: {NO_DRIVER}",
        ),
        (
            "/usr/bin/nvidia-smi",
            CUDA12,
            fake_run((0, "470.82.01, Tesla T4\n")),
            "driver too old: NVIDIA driver 470.82.01 is older than 525.60.13, which "
            "jax-cuda12-plugin needs",
        ),
        (
            "/usr/bin/nvidia-smi",
            CUDA12,
            fake_run((6, "No devices were found\n")),
            "no GPU visible: nvidia-smi lists no GPU",
        ),
        (
            "/usr/bin/nvidia-smi",
            None,
            fake_run((0, H100)),
            "CPU-only jaxlib: no CUDA plugin is installed",
        ),
        (
            "/usr/bin/nvidia-smi",
            ("jax-cuda13-plugin 0.9.1", gpu_ready.PLUGINS["jax-cuda13-plugin"]),
            fake_run((0, "580.159.04, NVIDIA H100 80GB HBM3\n")),
            "plugin of another release: jax-cuda13-plugin 0.9.1 beside jaxlib ",
        ),
        (
            "/usr/bin/nvidia-smi",
            CUDA12,
            fake_run((0, H100), (1, "", CUDA_FAILED)),
            "no GPU visible to JAX: RuntimeError: jaxlib/cuda/versions_helpers.cc:135: operation "
            "cuInit(0) failed",
        ),
    ],
    ids=[
        "no driver",
        "driver fails",
        "old driver",
        "no device",
        "cpu-only jaxlib",
        "plugin of another release",
        "jax sees none",
    ],
)
def test_each_cause_is_its_own_line(machine, smi_path, plugin, run, says):
    machine(smi_path, plugin)
    _, reason = gpu_ready.check(run)
    assert reason.startswith(says) and "\n" not in reason, reason


def test_with_both_plugins_installed_the_check_reads_the_one_jax_loads(monkeypatch):
    """jaxlib tries the CUDA 13 plugin before the CUDA 12 one: its driver floor applies."""
    installed = {"jax-cuda12-plugin": "0.11.2", "jax-cuda13-plugin": "0.11.2"}
    monkeypatch.setattr(gpu_ready.importlib.metadata, "version", installed.__getitem__)
    assert gpu_ready.installed_plugin() == ("jax-cuda13-plugin 0.11.2", (580, 65, 6))


def test_a_ready_machine_writes_what_it_read(machine, monkeypatch, tmp_path, capsys):
    machine()
    monkeypatch.setattr(gpu_ready.subprocess, "run", fake_run((0, H100)))
    assert gpu_ready.main(["--out", str(tmp_path / "ready.json")]) == 0
    read = json.loads((tmp_path / "ready.json").read_text())
    assert read["ready"] and read["driver"] == "570.86.15" and read["jax_devices"] == ["cuda:0"]
    assert read["gpus"] == ["NVIDIA H100 80GB HBM3"]
    assert "GPU ready: NVIDIA H100 80GB HBM3; driver 570.86.15" in capsys.readouterr().out


def test_this_machine_without_a_gpu_says_so_in_one_line():
    """The real check, with no nvidia-smi on PATH (as on CI's VM, and on a GPU machine too)."""
    done = subprocess.run(
        [sys.executable, "-m", "blockbench.measure.gpu_ready"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(Path(sys.executable).parent)},
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "GPU not ready: no driver: nvidia-smi is not on PATH, so this machine has no NVIDIA "
        "driver (or no GPU)"
    ]


def test_the_fake_gpu_is_ready_through_path_and_pythonpath(tmp_path):
    """nvidia-smi found on PATH, the CUDA plugin's dist-info on PYTHONPATH, JAX asked for
    the device the fake's cells run on (the CPU's); the verdict says it was faked."""
    done = subprocess.run(
        [sys.executable, "-m", "blockbench.measure.gpu_ready", "--out", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        env=fake_gpu_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"GPU ready (faked for tests): {NAME}; driver 580.95.05; jax-cuda13-plugin 0.11.2; "
        "JAX sees cpu"
    )
    read = json.loads((tmp_path / "r.json").read_text())
    assert read["ready"] and read["faked"] and read["gpus"] == [NAME]


def test_a_gpu_cells_worker_starts_cuda_beside_the_cpu_and_the_fakes_the_cpu_alone(monkeypatch):
    """The worker's JAX_PLATFORMS (blockbench.measure.parent): the fake GPU must not start a
    real GPU's backend where the suite runs on a GPU machine."""
    monkeypatch.delenv("BLOCKBENCH_FAKE_GPU", raising=False)
    platforms = {d: gpu_ready.jax_platforms(d) for d in ("cpu", "gpu", "tpu")}
    assert platforms == {"cpu": "cpu", "gpu": "cuda,cpu", "tpu": "tpu,cpu"}
    use_fake_gpu(monkeypatch)
    assert gpu_ready.jax_platforms("gpu") == gpu_ready.jax_platforms("cpu") == "cpu"
    assert gpu_ready.jax_platforms("tpu") == "tpu,cpu"


@pytest.mark.parametrize(
    ("args", "gpu"),
    [
        (["--gpu", "-n"], True),
        (["--config", "devices=[cpu,gpu]", "run_label=box"], True),
        (["--configfile", str(ROOT / "config/gpu.yaml")], True),
        (["--configfile", str(ROOT / "config/config.yaml")], False),  # a GPU command in a comment
        (["--configfile", str(ROOT / "config/paper.yaml"), "--cores", "2"], False),
        (["--config", "devices=[cpu]"], False),
        # the GPU kit's cells, judged at home: nothing to measure on a GPU
        (["--configfile", str(ROOT / "config/gpu.yaml"), "--config", "check_gpu=false"], False),
    ],
)
def test_the_bootstrap_knows_a_run_that_asks_for_a_gpu(args, gpu):
    assert bootstrap.asks_for_gpu(args) == (gpu, [a for a in args if a != "--gpu"])


def test_a_gpu_run_that_fails_the_check_runs_no_snakemake(monkeypatch):
    ran = []
    monkeypatch.setattr(bootstrap, "create_venv", lambda env: ran.append(("venv", env.dir.name)))
    monkeypatch.setattr(bootstrap, "install", lambda env: ran.append(("install", env.lock.name)))

    def run(*cmd, env=None):
        ran.append(tuple(map(str, cmd)))
        return 1 if "blockbench.measure.gpu_ready" in cmd else 0

    monkeypatch.setattr(bootstrap, "run", run)
    assert bootstrap.main(["run", "--config", "devices=[cpu,gpu]"]) == 1
    assert ran[:2] == [("venv", ".venv-cuda12"), ("install", "requirements-cuda12.lock")]
    assert ran[2][-1] == "blockbench.measure.gpu_ready" and len(ran) == 3  # no snakemake
    ran.clear()  # on SLURM the check is the workflow's first GPU job, on a GPU node
    assert bootstrap.main(["run", "--gpu", "--workflow-profile", "profiles/slurm"]) == 0
    assert not [cmd for cmd in ran if "blockbench.measure.gpu_ready" in cmd]
    assert ran[2][0].endswith(".venv-cuda12/bin/snakemake")
    ran.clear()
    assert bootstrap.main(["test", "--gpu", "-x"]) == 0  # the tests always use the CPU lock
    assert ran[0] == ("venv", ".venv") and ran[2][-1] == ran[3][-1] == "-x"
    assert ran[2][-3:-1] == ("-m", "not serial") and ran[3][-3:-1] == ("-m", "serial")


def test_regenerate_hands_every_argument_to_the_installed_command(monkeypatch):
    """`bootstrap.py regenerate` sets up the CPU environment and runs `blockbench regenerate`
    there with its arguments as given: a rebuild measures nothing, so a GPU config in them
    asks for no CUDA environment and no GPU check."""
    ran = []
    monkeypatch.setattr(bootstrap, "create_venv", lambda env: ran.append(("venv", env.dir.name)))
    monkeypatch.setattr(bootstrap, "install", lambda env: ran.append(("install", env.lock.name)))

    def run(*cmd, env=None):
        ran.append(tuple(map(str, cmd)))
        return 3

    monkeypatch.setattr(bootstrap, "run", run)
    args = ["results/reference/x", "--configfile", str(ROOT / "config/gpu.yaml"), "--gpu"]
    assert bootstrap.main(["regenerate", *args]) == 3
    assert ran[:2] == [("venv", ".venv"), ("install", "requirements.lock")]
    assert ran[2:] == [(str(bootstrap.CPU.bin / "blockbench"), "regenerate", *args)]


@pytest.mark.skipif(bool(shutil.which("nvidia-smi")), reason="an NVIDIA driver is here")
def test_in_the_workflow_no_gpu_cell_starts_where_the_check_fails(tmp_path):
    """The job every GPU cell waits for ends with its one line; the cell never starts."""
    wf = workflow_copy(tmp_path, {**TINY, "check_gpu": True})
    cell = "results/raw/tiny/gpu/selu/jax_jit/1000/0.json"
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", cell, "--cores", "2", "--configfile", "tiny.yaml"],
        cwd=wf,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0
    line = "GPU not ready: no driver: nvidia-smi is not on PATH"
    assert line in run.stderr
    assert (wf / "logs/gpu_ready/tiny.log").read_text().startswith(line)
    assert not (wf / "results/raw/tiny/gpu").exists()
    assert "rule measure_accelerator" not in run.stdout + run.stderr


@pytest.mark.skipif(
    not (Path(sys.prefix) / ".blockbench-installed").exists(),
    reason="these tests run outside an environment the bootstrap made",
)
def test_the_bootstrap_left_every_installed_module_compiled():
    """pip installs without compiling and compileall then compiles on every core: a module
    left without its .pyc would be compiled in every worker where PYTHONDONTWRITEBYTECODE is
    set (0.8 s a job for JAX's)."""
    site = Path(sysconfig.get_paths()["purelib"])
    sources = list(site.rglob("*.py"))
    bare = [p for p in sources if not Path(importlib.util.cache_from_source(p)).exists()]
    assert len(sources) > 1000 and not bare, bare[:5]


def test_a_file_that_does_not_byte_compile_fails_no_set_up(tmp_path, monkeypatch, capsys):
    """pip itself leaves such a file to import time; so does the compile after it."""
    env = bootstrap.Env(str(tmp_path / ".venv"), "requirements.lock")
    env.dir.mkdir()
    ran = []

    def run(*cmd, env=None):
        ran.append(tuple(map(str, cmd)))
        return 1 if "compileall" in cmd else 0

    monkeypatch.setattr(bootstrap, "run", run)
    bootstrap.install(env)
    assert [c[2] for c in ran] == ["pip", "pip", "pip", "compileall"]
    assert "--no-compile" in ran[1] and env.stamp.read_text() == env.digest()
    assert "did not byte-compile" in capsys.readouterr().out
