"""`scripts/bootstrap.py run` stopped and run again (README, "Stopping and resuming"): on
Ctrl-C it leaves the step it runs to stop itself (Snakemake ends its jobs and removes its
lock), says so in one line and exits 130, and the same command then resumes; a dry run makes
no report. bootstrap's `run` is driven in a process of its own: bootstrap itself would make a
venv and run in the checkout."""

import fcntl
import json
import os
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from tiny import TINY, workflow_copy

from blockbench.measure.core_speed import FAKE_CORE_SPEED, STEADY
from blockbench.records import layout
from blockbench.records.store import validate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bootstrap  # noqa: E402

# bootstrap.run(STEP..., cwd=DIR), as `python -c DRIVER SCRIPTS DIR STEP...`
DRIVER = (
    "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import bootstrap; "
    "sys.exit(bootstrap.run(*sys.argv[3:], cwd=Path(sys.argv[2])))"
)
SAID = "[bootstrap] interrupted: run the same command again to resume"
# A step that counts the SIGINTs it gets: one, handled, ends it (a second would come within
# half a second); killed, it never writes its count.
COUNTING = """
import signal, sys, time
from pathlib import Path
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
Path(sys.argv[1]).write_text("started")
end = time.time() + 60
while not got and time.time() < end:
    time.sleep(0.01)
time.sleep(0.5)
Path(sys.argv[1]).write_text(str(len(got)))
"""


def bootstrap_run(cwd: Path, *step: str) -> list[str]:
    return [sys.executable, "-c", DRIVER, str(ROOT / "scripts"), str(cwd), *step]


def take_terminal() -> None:
    """In the child, a session leader: its terminal (stdin) becomes its controlling one."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A command in a pseudo-terminal of its own: Ctrl-C there is the kernel's SIGINT to the
    terminal's foreground process group, the command and every child of it, as a user's is."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.master, child_end = os.openpty()
        self.proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=child_end,
            stdout=child_end,
            stderr=child_end,
            start_new_session=True,
            preexec_fn=take_terminal,
        )
        os.close(child_end)
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        """Drain the terminal, or the command blocks once its buffer is full."""
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: no process holds the terminal any more
                return
            if not data:
                return
            self.chunks.append(data)

    def ctrl_c(self) -> None:
        os.write(self.master, b"\x03")

    def wait(self, timeout: float) -> tuple[int, str]:
        """Exit code and everything the command wrote."""
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        os.close(self.master)
        return code, b"".join(self.chunks).decode(errors="replace")


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"not within {timeout} s: {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["ctrl_c", "kill_bootstrap"])
def test_a_step_gets_one_sigint_and_ends_itself_then_one_line(tmp_path, how):
    """Ctrl-C reached the step already (the terminal signals its whole foreground group);
    `kill -INT` reached bootstrap alone and is passed on. subprocess.call killed the step."""
    count = tmp_path / "count"
    cmd = bootstrap_run(tmp_path, sys.executable, "-c", COUNTING, str(count))
    if how == "ctrl_c":
        term = Terminal(cmd, tmp_path)
        wait_for(count.exists, 30, "the step started")
        term.ctrl_c()
        code, said = term.wait(timeout=30)
    else:  # no terminal: a session of its own
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for(count.exists, 30, "the step started")
        proc.send_signal(signal.SIGINT)
        said = proc.communicate(timeout=30)[0].decode()
        code = proc.returncode
    assert count.read_text() == "1", said  # one SIGINT, and the step ended on its own
    assert code == 130, said
    assert "Traceback" not in said, said
    assert said.count("[bootstrap]") == 1 and SAID in said, said


@pytest.mark.parametrize(
    ("args", "codes", "done"),
    [
        (["-n"], [0], False),
        (["-np"], [0], False),
        (["--dry-run", "--cores", "2"], [0], False),
        (["--unlock"], [0], False),
        ([], [1], False),
        ([], [0, 1], False),
        ([], [0, 0], True),
    ],
)
def test_the_report_follows_a_finished_run_alone_and_done_a_made_report(
    monkeypatch, capsys, args, codes, done
):
    """A dry run's report failed on the tables it never made, and bootstrap said `done`."""
    left = list(codes)  # Snakemake's exit code, then the report's: each step runs once
    monkeypatch.setattr(bootstrap, "create_venv", lambda env: None)
    monkeypatch.setattr(bootstrap, "install", lambda env: None)
    monkeypatch.setattr(bootstrap, "run", lambda *cmd, env=None: left.pop(0))
    assert bootstrap.main(["run", *args]) == codes[-1] and not left
    assert ("[bootstrap] done" in capsys.readouterr().out) == done


# A few cells whose processes each take about a second: Ctrl-C comes while one measures.
GRID = {
    **TINY,
    "devices": ["cpu"],
    "workloads": [{"name": "selu", "impls": ["numpy"], "sizes": [1000, 2000, 4000]}],
    "sampling": {"min_samples": 3, "min_time_s": 0.5, "max_time_s": 0.5},
}
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--cores", "4", "--configfile", "tiny.yaml"]


def records(wf: Path) -> dict[Path, bytes]:
    """Every record of the run, each checked whole (parsed and valid)."""
    found = {p: p.read_bytes() for p in layout.raw_files(wf / "results/raw" / GRID["run_label"])}
    for data in found.values():
        validate(json.loads(data))
    return found


def holding(lock: Path) -> list[list[str]]:
    """The command lines of the processes running with this run's measurement lock in their
    environment."""
    procs = psutil.process_iter(["environ", "cmdline"])
    mine = [p.info for p in procs if (p.info["environ"] or {}).get("BLOCKBENCH_LOCK") == str(lock)]
    return [info["cmdline"] or [] for info in mine]


def kept_while_measuring(wf: Path, lock: Path) -> dict[Path, bytes] | None:
    """The run's records once one is kept and a worker measures afterwards: a parent writes
    its record after its worker ended, and measures one at a time (Snakemake's measure_host),
    so Snakemake had finished the job of each record read before that worker was seen."""
    found = records(wf)
    measuring = any("blockbench.measure.worker" in cmd for cmd in holding(lock))
    return found if found and measuring else None


@pytest.mark.slow
def test_ctrl_c_ends_the_jobs_and_the_lock_and_the_same_command_resumes(tmp_path):
    wf = workflow_copy(tmp_path, GRID)
    lock = wf / "measure.lock"
    env = {**os.environ, "BLOCKBENCH_LOCK": str(lock), FAKE_CORE_SPEED: STEADY}
    term = Terminal(bootstrap_run(wf, *SNAKEMAKE), wf, env)
    end = time.monotonic() + 120
    while (kept := kept_while_measuring(wf, lock)) is None:
        assert time.monotonic() < end, "no record kept and a later cell measuring in 120 s"
        time.sleep(0.05)
    term.ctrl_c()
    code, said = term.wait(timeout=60)
    assert code == 130, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    assert said.count(SAID) == 1, said[-3000:]
    locks = wf / ".snakemake/locks"
    assert not locks.exists() or not any(locks.iterdir()), said[-3000:]
    assert not holding(lock)  # no job, no worker left measuring
    after = records(wf)  # whole, each: the interrupted process left none torn
    assert {p: after.get(p) for p in kept} == kept

    again = subprocess.run(
        bootstrap_run(wf, *SNAKEMAKE), cwd=wf, env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr[-3000:]
    done = records(wf)
    assert {p: done[p] for p in kept} == kept  # finished measurements are kept, not redone
    dry = subprocess.run([*SNAKEMAKE, "-n"], cwd=wf, capture_output=True, text=True, timeout=120)
    assert "Nothing to be done" in dry.stdout, dry.stdout[-3000:]
