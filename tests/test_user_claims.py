"""A researcher's own workload and catalog beside blockbench's: one module dropped into the
package, one catalog of their own (its claims and its published figures) named after the
shipped one, and nothing of blockbench's edited or copied (docs/adding-a-workload.md, whose
example this runs)."""

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_compat import parse_without_science
from test_workflow import snakemake
from tiny import TINY, workflow_copy

from blockbench.pipeline import stages

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "config/claims/articles/claims.yaml"
DOCS = (ROOT / "docs/adding-a-workload.md").read_text()
# The page's softmax module and its claim, as a reader would copy them.
MODULE = re.search(r"## A workload\n.*?```python\n(.*?)```", DOCS, re.S)[1]
CLAIM = yaml.safe_load(re.search(r"```yaml\n(- id: .*?)```", DOCS, re.S)[1])[0]
FIGURES = yaml.safe_load(re.search(r"```yaml\n(S:\n.*?)```", DOCS, re.S)[1])
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
BOTH = "claims=[config/claims/articles,my_catalog]"


def users_copy(tmp_path: Path, claims: list[dict]) -> Path:
    """The workflow and the package in a scratch directory, with the user's module and their
    catalog added: the checkout is never touched."""
    wf = workflow_copy(tmp_path, GRID)
    shutil.copytree(ROOT / "src", wf / "src", ignore=shutil.ignore_patterns("__pycache__"))
    # the lock beside src/, as in a checkout: a parse without JAX reads the release from it
    shutil.copy(ROOT / "requirements.lock", wf)
    (wf / "src/blockbench/workloads/softmax.py").write_text(MODULE)
    (wf / "my_catalog").mkdir()
    (wf / "my_catalog/claims.yaml").write_text(yaml.safe_dump(claims, sort_keys=False))
    (wf / "my_catalog/figures.yaml").write_text(yaml.safe_dump(FIGURES, sort_keys=False))
    return wf


def test_the_pages_module_leaves_the_parse_to_snakemake_alone(tmp_path):
    """With the page's module in the package, the workflow still parses with NumPy, JAX and
    pandas made unimportable (docs/module.md): the registry imports every workload module
    during the parse, so a module that imported NumPy at its top would stop it."""
    wf = users_copy(tmp_path, [CLAIM])
    run = parse_without_science(
        wf, "-n", "--cores", "1", "--configfile", "tiny.yaml", "--config", BOTH
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    size = CLAIM["parts"][0]["size"]
    assert f"results/raw/mine/cpu/softmax/jax_jit/{size}/0.json" in run.stdout


@pytest.mark.slow
def test_a_users_catalog_adds_its_claim_and_figure_to_blockbenchs_end_to_end(tmp_path):
    shipped = SHIPPED.read_bytes()
    wf = users_copy(tmp_path, [CLAIM])
    figure = "results/figures/catalog_my_catalog.png"
    run = snakemake(
        wf, "results/claims.csv", figure, "--cores", "2", "--configfile", "tiny.yaml",
        "--config", BOTH,
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


@pytest.mark.slow
@pytest.mark.parametrize(
    ("claims", "config", "named"),
    [
        (
            [{**CLAIM, "id": "A1"}],
            BOTH,
            ["claim id 'A1' is in both config/claims/articles/claims.yaml and my_catalog"],
        ),
        (
            [CLAIM],
            "claims=[config/claims/articles,nope]",
            ["config key claims[1]", "'nope' is neither a catalog folder"],
        ),
        (
            [CLAIM],
            "claims=[config/claims.yaml,my_catalog]",
            ["config key claims[0]", "was replaced by the catalog config/claims/articles"],
        ),
    ],
    ids=["an id blockbench has", "a missing catalog", "an older config's claims file"],
)
def test_a_users_claims_that_cannot_be_added_stop_the_run_before_any_job(
    tmp_path, claims, config, named
):
    wf = users_copy(tmp_path, claims)
    run = snakemake(wf, "--cores", "2", "--configfile", "tiny.yaml", "--config", config)
    assert run.returncode != 0
    for words in named:
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
    wf = users_copy(tmp_path, [{**CLAIM, "parts": [part]}])
    run = snakemake(wf, "-n", "--cores", "1", "--configfile", "tiny.yaml", "--config", BOTH)
    assert run.returncode == 1
    line = run.stderr.strip().splitlines()[-1]
    where = f"blockbench: my_catalog/claims.yaml: claim {CLAIM['id']}, part {part['name']!r}: "
    assert line.startswith(where) and said in line, run.stderr[-2000:]
    assert 'File "' not in run.stderr and "Traceback" not in run.stderr
