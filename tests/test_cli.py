"""The `blockbench` command: every subcommand answers --help through the entry function and
through `python -m blockbench`, its listing names what a user runs, no script repeats a
subcommand but the GPU kit's, a tool loads only what it needs, and two tools run end to end
on committed data."""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from blockbench.pipeline import cli

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bootstrap  # noqa: E402

DATA = ROOT / "tests" / "data"


def python_m(*args: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`python -m blockbench ARGS` from outside the checkout, with src/ on PYTHONPATH as on a
    machine where the package is not installed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, *flags, "-m", "blockbench", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/", timeout=120)


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_every_command_gives_its_help_through_the_entry_function(name, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([name, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: ")


# What runs where nothing is installed (a GPU machine without a registry, a cluster node);
# every command's help is checked through the entry function above.
UNINSTALLED = ("gpu-kit", "measure")
# The tools whose start-up is paid per measurement or on a lent GPU.
LIGHT = ("measure", "host-check", "core-speed", "gpu-kit")


@pytest.mark.parametrize("name", UNINSTALLED)
def test_the_uninstalled_commands_give_their_help_through_python_m_blockbench(name):
    done = python_m(name, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: ")


def test_the_command_lists_what_a_user_runs_without_any_installed_package():
    """`python -S`: not even site-packages; naming the commands imports none of them. The
    verbs the project's jobs and maintainers call (a cell's measurement, the README's first
    screen) are in neither the listing nor the refusal of an unknown name, and run all the
    same (every command's --help, above)."""
    done = python_m("--help", flags=("-S",))
    assert done.returncode == 0, done.stderr
    shown = {name for name in cli.COMMANDS if f"\n  {name} " in done.stdout}
    assert shown == set(cli.listed()) == set(cli.COMMANDS) - {"measure", "front-page"}
    unknown = python_m("no-such-tool", flags=("-S",))
    assert unknown.returncode == 2 and "invalid choice: 'no-such-tool'" in unknown.stderr
    assert "'gpu-kit'" in unknown.stderr and "'front-page'" not in unknown.stderr
    assert python_m(flags=("-S",)).returncode == 2


@pytest.mark.parametrize("name", LIGHT)
def test_a_command_loads_its_tool_and_nothing_more(name):
    """The dispatcher adds no module to what the tool's own imports load (no other tool), so
    a measurement job and the GPU kit start as light as they can; the measuring tools load no
    pandas, and none loads Snakemake."""
    code = f"""import json, sys
import {cli.COMMANDS[name].module}
alone = set(sys.modules)
from blockbench.pipeline import cli
try:
    cli.main([{name!r}, "--help"])
except SystemExit:
    pass
added = sorted(m for m in set(sys.modules) - alone if m.split(".")[0] == "blockbench")
heavy = sorted(m for m in ("pandas", "snakemake") if m in sys.modules)
print(json.dumps([added, heavy]))"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    added, heavy = json.loads(done.stdout.splitlines()[-1])
    assert set(added) <= {"blockbench.pipeline", "blockbench.pipeline.cli"}
    assert "snakemake" not in heavy
    assert "pandas" not in heavy or name not in ("measure", "host-check", "core-speed")


def wrapped_command(script: Path) -> str | None:
    """The subcommand `script` only repeats (it imports that one function of blockbench and
    exits with what it returns), or None."""
    text = script.read_text()
    imported = [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("blockbench")
        for alias in node.names
    ]
    for name, c in cli.COMMANDS.items():
        if imported == [(c.module, c.function)] and f"sys.exit({c.function}())" in text:
            return name
    return None


def test_one_spelling_per_tool_but_for_a_machine_where_nothing_is_installed():
    """A tool is `blockbench X`; the one script that repeats a subcommand is the GPU kit's,
    which a GPU machine without the package runs (scripts/bootstrap.py, which installs it,
    repeats none)."""
    scripts = [*ROOT.glob("scripts/*.py"), *ROOT.glob("benchmarks/*.py")]
    wrappers = {str(p.relative_to(ROOT)): wrapped_command(p) for p in scripts}
    assert {p: name for p, name in wrappers.items() if name} == {"scripts/gpu_run.py": "gpu-kit"}


def test_compare_tables_twenty_runs_claims(capsys):
    """The committed study's twenty runs, judged with it, in one merged claims.csv."""
    assert cli.main(["compare", str(DATA / "studies/zen5-v9/claims.csv.gz")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| claim | run ") and lines[0].count("| run ") == 20
    assert lines[-2].startswith("verdicts flipping between reproduced and not_reproduced: ")
    assert lines[-1].startswith("run pairs (a, b) where a's CI covers b's value: ")
    expected = re.search(r"differ in nothing: about [\d.]+ \((\d+)%\)", lines[-1])
    assert expected and 83 <= int(expected.group(1)) < 95, lines[-1]


def test_study_writes_a_study_and_refuses_runs_of_no_recorded_host(tmp_path, capsys):
    """Two committed runs of method version 8 (tests/data/runs, both labelled `local`, told
    apart by DIR=LABEL) record no host: a study of one host is refused in one line, a study
    of their kind is written with their claims."""
    runs = [f"{DATA / 'runs' / label}={label}" for label in ("v8-0349", "v8-0408")]
    out, claims = tmp_path / "between_run", tmp_path / "claims"
    args = ["study", *runs, "--core-speed", "steady", "--out", str(out)]
    assert cli.main(args) == 1
    said = capsys.readouterr()
    assert said.err.startswith("blockbench study: a study is of one host") and not said.out
    assert not out.exists()
    assert cli.main([*args, "--scope", "kind", "--claims-out", str(claims)]) == 0
    (written,) = out.glob("*.yaml")
    study = yaml.safe_load(written.read_text())
    assert [run["label"] for run in study["runs"]] == ["v8-0349", "v8-0408"]
    assert (claims / "claims.csv").is_file() and (claims / "claims.md").is_file()
    assert capsys.readouterr().out.startswith(f"{written}: ")


def test_host_check_runs_through_the_command(capsys):
    assert cli.main(["host-check"]) in (0, 1)
    assert capsys.readouterr().out.startswith("CPU: ")


def made_by_the_bootstrap_from_this_pyproject() -> bool:
    """This interpreter's environment is one the bootstrap set up from this pyproject.toml
    (an older one it made predates the command, and is made anew on its next run)."""
    stamp = Path(sys.prefix) / ".blockbench-installed"
    return stamp.exists() and stamp.read_text() in (bootstrap.CPU.digest(), bootstrap.CUDA.digest())


@pytest.mark.skipif(
    not made_by_the_bootstrap_from_this_pyproject(),
    reason="these tests run outside an environment the bootstrap made from this pyproject",
)
def test_the_bootstrap_installs_the_command():
    done = subprocess.run(
        [Path(sys.executable).parent / "blockbench", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "  regenerate " in done.stdout, done.stderr


def test_the_test_command_runs_the_timing_tests_alone_after_the_others():
    """Two workers for the tests that do not judge times, then the `serial` ones alone;
    `--fast` leaves the slow ones out of both; a -m or -n of one's own is one pass, as given."""
    assert bootstrap.test_passes(["--fast", "-x"]) == [
        [*bootstrap.WORKERS, "-m", "not serial and not slow", "-x"],
        ["-m", "serial and not slow", "-x"],
    ]
    assert bootstrap.test_passes([])[1] == ["-m", "serial"]
    assert bootstrap.test_passes(["-m", "slurm"]) == [["-m", "slurm"]]
    assert bootstrap.test_passes(["-n0", "tests/test_cli.py"]) == [["-n0", "tests/test_cli.py"]]


@pytest.mark.parametrize(
    ("codes", "code"), [((0, 5), 0), ((5, 0), 0), ((1, 0), 1), ((0, 2), 2), ((5, 5), 5)]
)
def test_the_test_command_fails_where_a_pass_fails_and_a_pass_without_tests_does_not(
    monkeypatch, codes, code
):
    """A pass that selects nothing (5: a path without `serial` tests) is no failure, unless
    neither selects anything (a -k that matches no test)."""
    left = list(codes)
    monkeypatch.setattr(bootstrap, "create_venv", lambda env: None)
    monkeypatch.setattr(bootstrap, "install", lambda env: None)
    monkeypatch.setattr(bootstrap, "run", lambda *cmd, env=None: left.pop(0))
    assert bootstrap.main(["test", "tests/test_cli.py"]) == code and not left
