"""Every committed reference is its own records' results: a folder measured by today's method
rebuilds, by `blockbench regenerate`, to the claims.md, claims.csv and claim_parts.csv it
holds; every folder's results name the label of its own raw folder; no two folders share
results. A result copied by hand from another run, or left behind by a judging change, fails
here on its first differing line."""

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from blockbench.pipeline import regenerate
from blockbench.present import front_page
from blockbench.records.layout import raw_files
from blockbench.records.methods import last_commit_of
from blockbench.records.spec import METHOD_VERSION
from blockbench.records.store import read_json

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "reference"
# what the claims stage makes: a rebuild for comparison needs neither figures nor report
CLAIMS_TARGETS = tuple(f"results/{path}" for path in regenerate.PUBLISHED.values())


def folders(reference: Path = REFERENCE) -> list[Path]:
    """Every folder that holds one run's raw records (raw/<label>/) beside its results."""
    return front_page.run_folders(reference)


def label_of(folder: Path) -> str:
    return regenerate.raw_folder(folder).name


def method_of(folder: Path) -> int:
    return read_json(raw_files(regenerate.raw_folder(folder))[0])["method_version"]


def todays(reference: Path = REFERENCE) -> list[Path]:
    return [f for f in folders(reference) if method_of(f) == METHOD_VERSION]


def named(folder: Path) -> str:
    return folder.relative_to(REFERENCE).as_posix()


def label_problems(folder: Path) -> list[str]:
    """Where a folder's results name another run than its raw folder's."""
    label, problems = label_of(folder), []
    for table in ("claims.csv", "claim_parts.csv"):
        said = sorted(set(pd.read_csv(folder / table)["run_label"].astype(str)))
        if said != [label]:
            problems.append(f"{folder.name}/{table} names run {said}, its raw folder is {label}")
    if f"## Run `{label}`" not in (folder / "claims.md").read_text():
        problems.append(f"{folder.name}/claims.md has no section of run {label}")
    return problems


def first_difference(name: str, made: bytes, committed: bytes) -> str:
    """'' where the two are the same, else the first line where they part."""
    if made == committed:
        return ""
    new, old = made.decode().splitlines(), committed.decode().splitlines()
    for i, (a, b) in enumerate(zip(new, old, strict=False), 1):
        if a != b:
            return f"{name}:{i}: committed {b[:160]!r}, rebuilt {a[:160]!r}"
    return f"{name}: {len(old)} lines committed, {len(new)} rebuilt"


def rebuild_differences(folder: Path, out: Path) -> list[str]:
    """Rebuild `folder` from its raw records with this checkout's code, as `regenerate`
    does, and compare what it would publish with what is committed."""
    regenerate.regenerate(folder, out, 2, *regenerate.made_with(folder), targets=CLAIMS_TARGETS)
    made = regenerate.published(out, folder)
    found = (first_difference(n, made[n], (folder / n).read_bytes()) for n in sorted(made))
    return [d for d in found if d]


@pytest.mark.slow  # a Snakemake run of the tables and claims stages each
@pytest.mark.parametrize("folder", todays(), ids=named)
def test_a_reference_of_todays_method_rebuilds_to_what_is_committed(folder, tmp_path):
    assert not rebuild_differences(folder, tmp_path / "out")


@pytest.mark.parametrize("folder", folders(), ids=named)
def test_a_references_results_name_its_own_raw_folder(folder):
    assert not label_problems(folder)


def test_no_two_references_share_results():
    seen: dict[bytes, Path] = {}
    for folder in folders():
        for name in regenerate.PUBLISHED:
            data = (folder / name).read_bytes()
            assert data not in seen, f"{named(folder)}/{name} is {named(seen[data])}/{name}"
            seen[data] = folder


def test_every_kind_has_a_default_run_and_todays_method_is_rebuilt():
    assert todays(), "no reference of today's method: nothing is rebuilt"
    for kind in (p for p in REFERENCE.iterdir() if p.is_dir()):
        assert kind / "run" in folders(), kind.name


@pytest.mark.slow
def test_a_hand_copied_result_fails_the_checks(tmp_path):
    """What e8db074 committed: a repeat holding its run's results over its own raw folder."""
    run = REFERENCE / "xeon-m207-2cpu/run"
    repeat = tmp_path / "reference" / "kind" / "repeat"
    shutil.copytree(REFERENCE / "xeon-m207-2cpu/repeat/raw", repeat / "raw")
    for name in (*regenerate.PUBLISHED, "figures"):
        if (run / name).is_dir():
            shutil.copytree(run / name, repeat / name)
        elif (run / name).exists():
            shutil.copy(run / name, repeat / name)
    assert len(label_problems(repeat)) == 3
    differences = rebuild_differences(repeat, tmp_path / "out")
    assert differences and differences[0].startswith("claim_parts.csv:2: committed")


def test_an_older_method_is_rebuilt_by_its_last_commit_which_has_regenerate(tmp_path):
    """records/methods.py: for each older method a reference keeps, the commit named reads
    that method and has the rebuild command; today's method and a folder without git
    history have none."""
    shallow = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
        capture_output=True,
        text=True,
    )
    if shallow.stdout.strip() != "false":
        pytest.skip("no whole git history here (a shallow clone, or no checkout)")
    assert last_commit_of(METHOD_VERSION) is None
    assert last_commit_of(9, tmp_path) is None
    older = {method_of(f) for f in folders()} - {METHOD_VERSION}
    assert older, "no reference of an older method to rebuild"
    for method in older:
        commit = last_commit_of(method)
        show = ["git", "-C", str(ROOT), "show"]
        spec = subprocess.run(
            [*show, f"{commit}:src/blockbench/records/spec.py"], capture_output=True, text=True
        ).stdout
        assert f"\nMETHOD_VERSION = {method}\n" in spec, commit
        # the workflow layer's folder, `pipeline/`, was `run/` before issue 76
        homes = [f"{commit}:src/blockbench/{layer}/regenerate.py" for layer in ("pipeline", "run")]
        tools = [subprocess.run([*show, home], capture_output=True) for home in homes]
        assert any(t.returncode == 0 for t in tools), f"{commit} has no regenerate"
