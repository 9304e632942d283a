"""`only`: a run that measures and judges the claims it names, and nothing else of theirs, so
that a user iterating on one claim waits for its cells alone."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from tiny import XEON_RUN as RUN
from tiny import reference_tables, workflow_copy

from blockbench.judge import claim_rules
from blockbench.pipeline import stages

ROOT = Path(__file__).resolve().parents[1]
ARTICLES = ROOT / "config/claims/articles"


def dry_run(wf: Path, *config: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--config", *config],
        cwd=wf,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_only_keeps_the_claims_it_names_in_the_catalogs_order():
    claims = claim_rules.read_claims(ARTICLES, ["D1", "C1"])
    assert [c.id for c in claims] == ["C1", "D1"]
    assert len(claim_rules.read_claims(ARTICLES, [])) == len(claim_rules.read_claims(ARTICLES))


def test_an_id_no_catalog_has_is_refused_naming_it():
    with pytest.raises(claim_rules.ClaimConfigError, match=r"only\[1\]: no claim 'Z9'.*known: A1"):
        claim_rules.read_claims(ARTICLES, ["C1", "Z9"])


@pytest.mark.slow
def test_a_run_of_one_claim_plans_its_cells_alone_and_a_wrong_id_stops_before_any_job(tmp_path):
    wf = workflow_copy(tmp_path)
    dry = dry_run(wf, "only=[C1]", "check_gpu=false")
    assert dry.returncode == 0, dry.stderr[-2000:]
    planned = set(re.findall(r"results/raw/\w+/(cpu/\w+/\w+/\d+)/\d+\.json", dry.stdout))
    # C1: JAX's and NumPy's matrix product at 5000, the only cells its part reads
    assert planned == {"cpu/matmul/jax/5000", "cpu/matmul/numpy/5000"}, planned
    wrong = dry_run(wf, "only=[C1,Z9]")
    assert wrong.returncode != 0
    assert "blockbench: config key only[1]: no claim 'Z9' in the catalogs" in wrong.stderr
    assert "measure" not in wrong.stdout


def test_the_claims_stage_judges_the_named_claims_alone(tmp_path):
    """Over a committed run's records: `only` judges C1 and D1, as the whole run judged them."""
    out, written = reference_tables(tmp_path)
    table = stages.build_claims(
        out.parquet, out.processes, [str(ARTICLES)], *written, only=["C1", "D1"]
    )
    assert list(table["claim_id"]) == ["C1", "D1"]
    whole = pd.read_csv(RUN / "claims.csv").set_index("claim_id")
    assert list(table["verdict"]) == list(whole.loc[["C1", "D1"], "verdict"])
