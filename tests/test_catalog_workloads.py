"""A catalog's own workload modules (its `workloads/*.py`) and requirements: read once a
process, hashed as run, and every way one can be unusable refused in one line naming the
file, at the workflow's parse, before any job (blockbench.workloads.registry.use_catalog).

The registry is one per process: every test's catalog folder and workload names derive from
the test's own name, so no two tests declare the same one."""

import importlib.metadata
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_measure
from test_workflow import snakemake
from tiny import TINY, workflow_copy

from blockbench.judge.aggregate import ResultFileError, _one_module_per_workload, unchanged_modules
from blockbench.workloads import registry
from blockbench.workloads.registry import CatalogError

ROOT = Path(__file__).resolve().parents[1]

# A complete workload module in the shape docs/adding-a-workload.md gives (NAME is replaced):
# a NumPy doubling, one implementation that computes something else and one that raises.
GOOD = '''"""A catalog's toy workload: doubling a float32 vector."""

from __future__ import annotations

from blockbench.workloads.checks import max_rel_err
from blockbench.workloads.declare import CPU_ONLY, Impl, Workload, deferred

np = deferred("numpy")


def make_inputs(size: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (rng.standard_normal(size, dtype=np.float32),)


def check(inputs: tuple[np.ndarray], out: object) -> float:
    return max_rel_err(out, 2 * inputs[0].astype(np.float64))


def work(size: int) -> float:
    return float(size)


def numpy_double(x: np.ndarray) -> np.ndarray:
    return x + x


def numpy_wrong(x: np.ndarray) -> np.ndarray:
    return 3 * x


def numpy_raises(x: np.ndarray) -> np.ndarray:
    raise RuntimeError("deliberately broken")


WORKLOADS = (
    Workload(
        "NAME",
        "vector length",
        make_inputs,
        check,
        tolerance=1e-6,
        work=work,
        baseline="numpy",
        impls=(
            Impl("numpy", "numpy", numpy_double, CPU_ONLY),
            Impl("wrong", "numpy", numpy_wrong, CPU_ONLY),
            Impl("raises", "numpy", numpy_raises, CPU_ONLY),
        ),
    ),
)
'''


def good(name: str) -> str:
    """The toy module declaring workload `name`."""
    return GOOD.replace('"NAME"', repr(name))


@pytest.fixture
def uid(request: pytest.FixtureRequest) -> str:
    """A name no other test uses: this test's own (parameters included), as an identifier."""
    return re.sub(r"\W+", "_", request.node.name).strip("_").lower()


def write_catalog(
    where: Path, name: str, modules: dict[str, str], requirements: str | None = None
) -> Path:
    """A catalog folder `name` under `where`: no claims, the given `workloads/` modules
    (file name -> text) and, where given, a requirements.txt."""
    folder = where / name
    (folder / registry.CATALOG_WORKLOADS).mkdir(parents=True)
    (folder / "claims.yaml").write_text("[]\n")
    (folder / "figures.yaml").write_text("{}\n")
    for file, text in modules.items():
        (folder / registry.CATALOG_WORKLOADS / file).write_text(text)
    if requirements is not None:
        (folder / registry.REQUIREMENTS).write_text(requirements)
    return folder


def refusal(folder: Path) -> str:
    """The one line use_catalog refuses `folder` with."""
    with pytest.raises(CatalogError) as caught:
        registry.use_catalog(folder)
    text = str(caught.value)
    assert "\n" not in text, text
    return text


def test_a_good_module_joins_the_registry_with_its_source_once(tmp_path: Path, uid: str):
    """The worker, the tables and the rounds checkpoint look the workload up as they do
    blockbench's own, and every record keeps which file, and which text of it, ran."""
    folder = write_catalog(tmp_path, f"cat_{uid}", {"mine.py": good(uid)})
    assert registry.use_catalog(folder) == (uid,)
    assert uid in registry.WORKLOADS
    assert {i.name for i in registry.IMPLS if i.workload == uid} == {"numpy", "wrong", "raises"}
    assert registry.lookup("cpu", uid, "numpy", 16)[0].name == uid
    file = folder / "workloads/mine.py"
    source = registry.source_of(uid)
    assert (source.catalog, source.folder, source.file) == (folder.name, folder, file)
    assert source.sha256 == registry._hash(file.read_bytes()) == registry.current_sha256(uid)
    assert source.as_record() == {
        "catalog": folder.name,
        "module": "mine.py",
        "sha256": source.sha256,
    }
    # read again (the parse reads the config twice; a relative path names the same folder):
    # nothing is run again, and nothing is declared twice
    file.write_text(good(uid) + "\nraise RuntimeError('run twice')\n")
    assert registry.use_catalog(folder) == (uid,)
    assert registry.use_catalog(folder / "workloads" / "..") == (uid,)
    assert registry.source_of(uid) == source


def test_a_module_whose_name_starts_with_an_underscore_is_not_a_workload_module(
    tmp_path: Path, uid: str
):
    """Helpers a catalog's modules share (`_common.py`) are not read on their own."""
    folder = write_catalog(
        tmp_path, f"cat_{uid}", {"_helpers.py": "raise ImportError('not run')\n", "a.py": good(uid)}
    )
    assert registry.use_catalog(folder) == (uid,)


BAD_MODULES = {
    "syntax": ("x = 1\ndef broken(:\n    pass\n", r"mine\.py:2: invalid syntax"),
    "import_error": (
        "import blockbench_no_such_module_anywhere\n",
        r"mine\.py: importing it failed: ModuleNotFoundError: No module named "
        r"'blockbench_no_such_module_anywhere'",
    ),
    # a message of several lines still makes one line
    "import_error_lines": (
        "raise ImportError('needs the GPU kit\\n  (see its README)')\n",
        r"mine\.py: importing it failed: ImportError: needs the GPU kit \(see its README\)$",
    ),
    "no_workloads": ("ANSWER = 42\n", r"mine\.py: declares no WORKLOADS"),
    "not_declarations": (
        "WORKLOADS = ('softmax',)\n",
        r"mine\.py: WORKLOADS is not a tuple of Workload\(\.\.\.\) declarations",
    ),
    "blockbenchs_own": (
        good("matmul"),
        r"mine\.py: workload 'matmul' is already declared in .*blockbench/workloads/matmul\.py",
    ),
}


@pytest.mark.parametrize("case", BAD_MODULES)
def test_a_bad_module_is_refused_in_one_line_naming_its_file(tmp_path: Path, uid: str, case: str):
    text, says = BAD_MODULES[case]
    folder = write_catalog(tmp_path, f"cat_{uid}", {"mine.py": text})
    line = refusal(folder)
    assert str(folder / "workloads/mine.py") in line
    assert re.search(says, line), line


def test_a_name_another_catalog_declared_is_refused_naming_both_files(tmp_path: Path, uid: str):
    """Two catalogs' workloads of one name would pool two programs under one name."""
    first = write_catalog(tmp_path, f"first_{uid}", {"a.py": good(uid)})
    second = write_catalog(tmp_path, f"second_{uid}", {"b.py": good(uid)})
    registry.use_catalog(first)
    line = refusal(second)
    assert line.startswith(f"{second / 'workloads/b.py'}: workload {uid!r} is already declared")
    assert line.endswith(str(first / "workloads/a.py"))
    assert registry.source_of(uid).folder == first


def test_a_name_declared_twice_in_one_catalog_is_refused(tmp_path: Path, uid: str):
    """Twice in one module or in two modules of one catalog: the second would silently stand
    in for the first."""
    twice = good(uid).replace("WORKLOADS = (", "WORKLOADS = 2 * (")
    line = refusal(write_catalog(tmp_path, f"one_{uid}", {"mine.py": twice}))
    assert re.search(rf"mine\.py: workload '{uid}' is already declared in .*mine\.py$", line)
    line = refusal(write_catalog(tmp_path, f"two_{uid}", {"a.py": good(uid), "b.py": good(uid)}))
    assert re.search(rf"b\.py: workload '{uid}' is already declared in .*a\.py$", line)


def test_a_refused_catalog_adds_none_of_its_workloads(tmp_path: Path, uid: str):
    """A catalog is used whole or not at all: one bad module leaves the registry as it was,
    and the folder, fixed, is read afresh."""
    folder = write_catalog(tmp_path, f"cat_{uid}", {"a.py": good(uid), "b.py": "X = 1\n"})
    impls = registry.IMPLS
    assert "b.py: declares no WORKLOADS" in refusal(folder)
    assert uid not in registry.WORKLOADS and uid not in registry.SOURCES
    assert impls == registry.IMPLS
    (folder / "workloads/b.py").unlink()
    assert registry.use_catalog(folder) == (uid,)


NUMPY = importlib.metadata.version("numpy")
BAD_REQUIREMENTS = {
    "missing": (
        "# what my workloads need\n\nblockbench-no-such-package-anywhere>=1\n",
        r"requirements\.txt:3: the catalog's workloads need blockbench-no-such-package-anywhere"
        r">=1, which is not installed",
    ),
    "wrong_version": ("numpy<1  # the old API\n", rf"requirements\.txt:1: .*numpy<1; {NUMPY} is"),
    "unparsable": ("numpy >= = 1\n", r"requirements\.txt:1: not a requirement \(Expected"),
}


@pytest.mark.parametrize("case", BAD_REQUIREMENTS)
def test_a_requirement_not_met_is_refused_in_one_line_naming_the_file(
    tmp_path: Path, uid: str, case: str
):
    """At planning, not in a worker mid-run; and before any of the catalog's modules runs."""
    text, says = BAD_REQUIREMENTS[case]
    folder = write_catalog(tmp_path, f"cat_{uid}", {"mine.py": good(uid)}, requirements=text)
    line = refusal(folder)
    assert line.startswith(str(folder / "requirements.txt")), line
    assert re.search(says, line), line
    assert uid not in registry.WORKLOADS


def test_requirements_that_are_met_pass(tmp_path: Path, uid: str):
    reqs = f"numpy>={NUMPY}\nPyYAML  # any version\n"
    folder = write_catalog(tmp_path, f"cat_{uid}", {"mine.py": good(uid)}, requirements=reqs)
    assert registry.use_catalog(folder) == (uid,)


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        ("import numpy", "numpy"),
        ("from jax import numpy as jnp", "jax"),
        ("import pandas.api", "pandas"),
        ("try:\n    import numpy\nexcept ImportError:\n    pass", "numpy"),
        ("if TYPE_CHECKING:\n    import numpy", None),  # annotations only: never run
        ("def helper():\n    import numpy", None),  # runs when the function does
    ],
)
def test_a_module_importing_numpy_jax_or_pandas_as_it_is_read_is_refused(
    tmp_path: Path, uid: str, line: str, refused: str | None
):
    """The workflow's parse needs Snakemake alone (docs/module.md): a module that imports
    NumPy at its top breaks it, even where this process (or Snakemake) has NumPy loaded, so
    the module's text is read for it before it runs."""
    text = good(uid).replace(
        "from blockbench", f"from typing import TYPE_CHECKING\n{line}\nfrom blockbench", 1
    )
    folder = write_catalog(tmp_path, uid, {"mine.py": text})
    if refused is None:
        assert registry.use_catalog(folder) == (uid,)
        return
    with pytest.raises(registry.CatalogError) as exc:
        registry.use_catalog(folder)
    said = str(exc.value)
    assert said.startswith(f"{folder / 'workloads/mine.py'}:") and "\n" not in said, said
    assert f"imports {refused} at its top" in said, said
    assert uid not in registry.WORKLOADS


@pytest.mark.slow
def test_a_bad_module_stops_snakemakes_parse_before_any_job(tmp_path: Path, uid: str):
    """`snakemake -n` with the catalog named after blockbench's: one line, prefixed with
    the config key that names the catalog, and no job planned."""
    wf = workflow_copy(tmp_path / "wf", TINY)
    folder = write_catalog(tmp_path, f"cat_{uid}", {"mine.py": "x = 1\ndef broken(:\n"})
    run = snakemake(
        wf, "-n", "--cores", "1", "--configfile", "tiny.yaml",
        "--config", f"claims=[config/claims/articles,{folder}]",
        timeout=300,
    )  # fmt: skip
    assert run.returncode != 0
    ours = [line for line in run.stderr.splitlines() if line.startswith("blockbench:")]
    assert ours == [
        f"blockbench: config key claims[1]: {folder / 'workloads/mine.py'}:2: invalid syntax"
    ], run.stderr[-3000:]
    assert "measure" not in run.stdout


def test_the_rounds_checkpoint_refuses_a_module_edited_since_the_first_stage(
    tmp_path: Path, uid: str
):
    """Rounds added on demand must run the program the first stage ran."""
    folder = write_catalog(tmp_path, f"cat_{uid}", {"mine.py": good(uid)})
    registry.use_catalog(folder)
    first = registry.source_of(uid).sha256
    proc = pd.DataFrame(
        {
            "workload": [uid, uid, "selu", "matmul"],
            "module_sha256": [first, first, registry.source_of("selu").sha256, None],
        }
    )
    unchanged_modules(proc)  # nothing edited: passes
    file = folder / "workloads/mine.py"
    file.write_text(good(uid).replace("x + x", "2 * x"))
    with pytest.raises(ResultFileError) as caught:
        unchanged_modules(proc)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"{file}: changed since the run's first stage measured it"), line
    assert first[:12] in line and registry.current_sha256(uid)[:12] in line
    file.write_text(good(uid))  # restored: passes again
    unchanged_modules(proc)


def test_tables_refuse_two_texts_of_one_workloads_module_in_one_run():
    """A run resumed after its module was edited would pool two programs' times; two run
    labels each with its own text are two runs, and pass."""
    rows = [
        ("a", "double", "1" * 64, "a/0.json"),
        ("a", "double", "1" * 64, "a/1.json"),
        ("b", "double", "2" * 64, "b/0.json"),
        ("a", "selu", None, "a/2.json"),
    ]
    df = pd.DataFrame(rows, columns=["run_label", "workload", "module_sha256", "source"])
    _one_module_per_workload(df)
    df.loc[len(df)] = ("a", "double", "2" * 64, "a/3.json")
    with pytest.raises(ResultFileError, match=r"run a measured two versions of workload double"):
        _one_module_per_workload(df)


def measure(tmp_path: Path, folder: Path, workload: str, impl: str) -> dict:
    """One cell of the catalog's workload, measured by the one-cell command as a job does."""
    out = tmp_path / f"{impl}.json"
    rc, record, stderr = run_measure(
        out,
        *("--device", "cpu", "--workload", workload, "--impl", impl, "--size", "16"),
        *("--catalog", str(folder), "--phases", "steady", "--max-samples", "5"),
        lock=tmp_path / "lock",
    )
    assert rc == 0 and record is not None, stderr[-2000:]
    return record


def test_a_catalogs_wrong_or_raising_impl_is_recorded_as_such_and_a_good_one_measures(
    tmp_path: Path, uid: str
):
    """A user's broken implementation is a result, a status and a reason, not a failed job;
    the record of a good one names the catalog and the text that ran."""
    folder = write_catalog(tmp_path, f"cat_{uid}", {"mine.py": good(uid)})
    wrong = measure(tmp_path, folder, uid, "wrong")
    assert wrong["status"] == "wrong_result" and "tolerance" in wrong["reason"], wrong["reason"]
    raises = measure(tmp_path, folder, uid, "raises")
    assert raises["status"] == "error", raises["status"]
    assert "RuntimeError" in raises["reason"] and "deliberately broken" in raises["reason"]
    ok = measure(tmp_path, folder, uid, "numpy")
    assert ok["status"] == "ok" and ok["check"]["passed"], ok["reason"]
    assert ok["workload_source"] == {
        "catalog": folder.name,
        "module": "mine.py",
        "sha256": registry._hash((folder / "workloads/mine.py").read_bytes()),
    }
