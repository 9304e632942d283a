"""A researcher's own catalog beside blockbench's: one folder outside the workflow holding
its claims, its published figures and its workload module, named in `claims` after the
shipped catalog, with nothing of blockbench's edited or copied and the checkout's own package
under test (docs/adding-a-workload.md, whose example this runs)."""

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import run_measure
from test_compat import parse_without_science
from test_workflow import snakemake
from tiny import TINY, workflow_copy

from blockbench.pipeline import regenerate, stages
from blockbench.workloads.registry import _hash

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "config/claims/articles/claims.yaml"
DOCS = (ROOT / "docs/adding-a-workload.md").read_text()
# The page's softmax module, its claim and its source's figures, as a reader would copy them.
MODULE = re.search(r"## A workload\n.*?```python\n(.*?)```", DOCS, re.S)[1]
CLAIM = yaml.safe_load(re.search(r"```yaml\n(- id: .*?)```", DOCS, re.S)[1])[0]
FIGURES = yaml.safe_load(re.search(r"```yaml\n(S:\n.*?)```", DOCS, re.S)[1])
# The page's one-cell command, with the catalog folder it names
MEASURE = re.search(r"```bash\n(\.venv/bin/blockbench measure .*?)```", DOCS, re.S)[1]
# The tiny grid (the claims add no cell: toy sizes), reduced to the claim's two cells at its
# own size, one worker process each.
GRID = {
    **TINY,
    "run_label": "mine",
    "devices": ["cpu"],
    "workloads": [
        {
            "name": "softmax",
            "impls": ["numpy", "jax_jit"],
            "sizes": [CLAIM["parts"][0]["size"]],
            "phases": ["steady"],
        }
    ],
}


def users_catalog(where: Path, claims: list[dict]) -> Path:
    """The page's catalog folder, `my_catalog/` under `where`: claims, figures, module."""
    catalog = where / "my_catalog"
    (catalog / "workloads").mkdir(parents=True)
    (catalog / "claims.yaml").write_text(yaml.safe_dump(claims, sort_keys=False))
    (catalog / "figures.yaml").write_text(yaml.safe_dump(FIGURES, sort_keys=False))
    (catalog / "workloads/softmax.py").write_text(MODULE)
    return catalog


def users_copy(tmp_path: Path, claims: list[dict]) -> tuple[Path, Path]:
    """The workflow in a scratch directory, and the user's catalog in a folder of its own
    beside it, not inside it: the package is the checkout's, and nothing under src/ changes."""
    wf = workflow_copy(tmp_path / "wf", GRID)
    assert not (wf / "src").exists()
    return wf, users_catalog(tmp_path / "elsewhere", claims)


def both(catalog: Path) -> str:
    """The page's `--config` value: blockbench's catalog, then the user's."""
    return f"claims=[config/claims/articles,{catalog}]"


def test_the_pages_catalog_leaves_the_parse_to_snakemake_alone(tmp_path):
    """With the page's catalog named, the workflow still parses with NumPy, JAX and pandas
    made unimportable (docs/module.md): the catalog's module is read during the parse (its
    cells are planned), so a module that imported NumPy at its top would stop it."""
    wf, catalog = users_copy(tmp_path, [CLAIM])
    run = parse_without_science(
        wf, "-n", "--cores", "1", "--configfile", "tiny.yaml", "--config", both(catalog)
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    size = CLAIM["parts"][0]["size"]
    assert f"results/raw/mine/cpu/softmax/jax_jit/{size}/0.json" in run.stdout


def test_the_pages_one_cell_command_measures_the_catalogs_workload(tmp_path, monkeypatch):
    """`blockbench measure --catalog my_catalog`, run where the folder is: the cell is
    checked against its float64 reference and its record names the module that ran."""
    catalog = users_catalog(tmp_path, [CLAIM])
    args = MEASURE.replace("\\\n", " ").split()[2:]  # after `.venv/bin/blockbench measure`
    out = tmp_path / "softmax.json"
    args[args.index("--out") + 1] = str(out)
    monkeypatch.chdir(tmp_path)  # --catalog my_catalog: relative to where the command runs
    rc, record, stderr = run_measure(out, *args, lock=tmp_path / "lock")
    assert rc == 0 and record is not None, stderr[-2000:]
    assert record["status"] == "ok" and record["check"]["passed"], record["reason"]
    assert record["workload_source"] == {
        "catalog": "my_catalog",
        "module": "softmax.py",
        "sha256": _hash((catalog / "workloads/softmax.py").read_bytes()),
    }


@pytest.mark.slow
def test_a_users_catalog_adds_its_claim_and_figure_and_is_rebuilt_once_gone(tmp_path):
    """End to end beside blockbench's claims; then the user's folder is deleted and the run
    is judged again from its raw folder alone, which kept a copy of the catalog."""
    shipped = SHIPPED.read_bytes()
    wf, catalog = users_copy(tmp_path, [CLAIM])
    figure = "results/figures/catalog_my_catalog.png"
    run = snakemake(
        wf, "results/claims.csv", figure, "--cores", "2", "--configfile", "tiny.yaml",
        "--config", both(catalog),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_csv(wf / "results/claims.csv").set_index("claim_id")
    mine = table.loc[CLAIM["id"]]
    assert mine["verdict"] in ("reproduced", "not_reproduced", "inconclusive"), mine.to_dict()
    assert mine["measured"] > 0 and mine["run_label"] == "mine"
    assert mine["article"] == FIGURES["S"]["figures"]["jit_speedup"]["value"]
    shipped_ids = [c.id for c in stages.read_claims(SHIPPED)]
    assert list(table.index) == [*shipped_ids, CLAIM["id"]]  # blockbench's, then the user's
    parts = pd.read_csv(wf / "results/tables/claim_parts.csv")
    assert set(parts.loc[parts["claim_id"] == CLAIM["id"], "catalog"]) == {"my_catalog"}
    assert (wf / figure).stat().st_size > 10_000  # the generic figure, drawn
    assert SHIPPED.read_bytes() == shipped
    assert (wf / "config/claims/articles/claims.yaml").read_bytes() == shipped

    # which module ran, in every record and in the measurements table
    sha = _hash(MODULE.encode())
    raw = wf / "results/raw/mine"
    source = {"catalog": "my_catalog", "module": "softmax.py", "sha256": sha}
    records = [json.loads(p.read_text()) for p in raw.glob("cpu/softmax/*/*/*.json")]
    assert records and all(r["workload_source"] == source for r in records)
    measured = pd.read_csv(wf / "results/tables/measurements.csv")
    softmax = measured[measured["workload"] == "softmax"]
    assert set(softmax["catalog"]) == {"my_catalog"} and set(softmax["module_sha256"]) == {sha}
    # the copy beside the raw records, and the list of the run's catalogs
    kept = raw / "catalogs/my_catalog"
    assert (kept / "workloads/softmax.py").read_text() == MODULE
    said = json.loads((raw / "catalogs.json").read_text())
    came = str(catalog.resolve())
    assert said["claims"][-1] == {"kept": "catalogs/my_catalog", "from": came}

    shutil.rmtree(catalog)
    out = tmp_path / "rebuilt"
    extra = ["--configfile", str(wf / "tiny.yaml")]  # the config the run was made with
    regenerate.regenerate(raw, out, 2, extra, targets=("results/claims.csv",))
    claims = "results/claims.csv"
    assert (out / claims).read_text() == (wf / claims).read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("claims", "config", "named"),
    [
        (
            [{**CLAIM, "id": "A1"}],
            "claims=[config/claims/articles,CATALOG]",
            ["claim id 'A1' is in both config/claims/articles/claims.yaml and CATALOG"],
        ),
        (
            [CLAIM],
            # no block of the grid names softmax, which only the missing catalog declares
            "claims=[config/claims/articles,nope] workloads=[]",
            ["config key claims[1]", "'nope' is neither a catalog folder"],
        ),
        (
            [CLAIM],
            "claims=[config/claims.yaml,CATALOG]",
            ["config key claims[0]", "was replaced by the catalog config/claims/articles"],
        ),
    ],
    ids=["an id blockbench has", "a missing catalog", "an older config's claims file"],
)
def test_a_users_claims_that_cannot_be_added_stop_the_run_before_any_job(
    tmp_path, claims, config, named
):
    wf, catalog = users_copy(tmp_path, claims)
    config = config.replace("CATALOG", str(catalog))
    run = snakemake(wf, "--cores", "2", "--configfile", "tiny.yaml", "--config", *config.split())
    assert run.returncode != 0
    for words in named:
        words = words.replace("CATALOG", str(catalog))
        assert words in run.stdout + run.stderr, (words, run.stderr[-2000:])
    assert not (wf / "results").exists()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"workload": "matmull"}, "no workload 'matmull'"),
        ({"holds_if": "roughly 2"}, "unreadable condition 'roughly 2'"),
    ],
)
def test_a_claims_file_that_cannot_be_judged_stops_the_run_in_one_line(tmp_path, change, said):
    """Beside the shipped claims, as a user names theirs: before any job, one line naming the
    file, the claim and the part, and no stack."""
    part = {**CLAIM["parts"][0], **{k: v for k, v in change.items() if k != "workload"}}
    if "workload" in change:
        part["num"] = {**part["num"], "workload": change["workload"]}
    wf, catalog = users_copy(tmp_path, [{**CLAIM, "parts": [part]}])
    run = snakemake(
        wf, "-n", "--cores", "1", "--configfile", "tiny.yaml", "--config", both(catalog)
    )
    assert run.returncode == 1
    line = run.stderr.strip().splitlines()[-1]
    where = f"blockbench: {catalog}/claims.yaml: claim {CLAIM['id']}, part {part['name']!r}: "
    assert line.startswith(where) and said in line, run.stderr[-2000:]
    assert 'File "' not in run.stderr and "Traceback" not in run.stderr
