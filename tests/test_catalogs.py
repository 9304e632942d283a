"""The claims decide the grid: each part names its cells and sizes, a claim's `settings` say
how some are measured, and catalogs (a claims.yaml and its figures.yaml) are selected by
`claims` (blockbench.judge.claim_rules, blockbench.pipeline.grid)."""

import shutil
from pathlib import Path

import pytest
import yaml

from blockbench.judge import claim_rules
from blockbench.judge.claim import Claim
from blockbench.pipeline import grid, kit_config
from blockbench.present import figure_names
from blockbench.records.layout import Cell

ROOT = Path(__file__).resolve().parents[1]
ARTICLES = ROOT / "config/claims/articles"
DEFAULT = kit_config.load_config(ROOT / "config/config.yaml")


def copy_of_articles(tmp_path: Path) -> tuple[Path, list[dict]]:
    """The articles' catalog in a scratch folder, and its claims as YAML entries to edit."""
    folder = tmp_path / "articles"
    shutil.copytree(ARTICLES, folder)
    return folder, yaml.safe_load((folder / "claims.yaml").read_text())


def write(folder: Path, entries: list[dict]) -> Path:
    (folder / "claims.yaml").write_text(yaml.safe_dump(entries, sort_keys=False))
    return folder


def cpu_cells(claims: list[Claim], **config) -> dict[Cell, tuple | None]:
    return grid.plan({**DEFAULT, **config}, claims)


def test_the_default_config_names_no_cell_and_measures_every_cpu_claim_at_its_size():
    """config/config.yaml holds settings and catalogs; every part of a claim of the CPU
    alone has its cells in the plan, at `measure_at` where it has one, else the article's
    size. A claim with a GPU part (C5, C6) is not_run on the CPU whatever its CPU parts
    show, so none of them is measured, unless `partial_claims` asks for them."""
    assert DEFAULT["workloads"] == [] and DEFAULT["claims"] == ["config/claims/articles"]
    claims = kit_config.claims(DEFAULT)
    plan = cpu_cells(claims)
    assert not any(c.device != "cpu" for c in plan)
    for claim in claims:
        named = [(p, t) for p in claim.parts for t in p.terms]
        if {t.device for _, t in named} != {"cpu"}:
            continue
        for part, t in named:
            for size in part.sizes_for():
                assert Cell("cpu", t.workload, t.impl, size) in plan, (claim.id, t)
    assert not any(c.workload == "selu" or c.impl == "jax_jit" for c in plan)
    partial = cpu_cells(claims, partial_claims=True)
    assert Cell("cpu", "selu", "jax", 1000000) in partial  # C5's CPU part
    assert Cell("cpu", "matmul", "jax_jit", 64) in partial  # C6's matmul trend
    assert Cell("cpu", "matmul", "jax_numpy_input", 2000) in plan  # B3 measured at 2000 ...
    assert Cell("cpu", "matmul", "jax", 10000) not in plan  # ... not at the article's 10000
    # B3's other part where C1 measures: JAX on JAX data at 2000 would be read by nothing
    assert Cell("cpu", "matmul", "jax", 2000) not in plan
    assert plan[Cell("cpu", "matmul", "numpy", 5000)] == ("steady",)  # C1's setting
    assert plan[Cell("cpu", "stencil", "loop_jit", 8)] == ("compile",)  # D3's
    assert plan[Cell("cpu", "stencil", "loop_jit", 12)] == ("compile", "first_call", "steady")
    assert plan[Cell("cpu", "stencil", "loop", 12)] is None  # every phase: no setting


def test_editing_a_claims_size_moves_its_cells_with_no_config_touched(tmp_path):
    folder, entries = copy_of_articles(tmp_path)
    before = cpu_cells(claim_rules.read_claims(folder))
    c1 = next(c for c in entries if c["id"] == "C1")
    c1["parts"][0]["size"] = 4000
    after = cpu_cells(claim_rules.read_claims(write(folder, entries)))
    for impl in ("numpy", "jax"):
        assert before[Cell("cpu", "matmul", impl, 5000)] == ("steady",)
        assert after[Cell("cpu", "matmul", impl, 4000)] == ("steady",)  # C1's setting went too
        # B3 says it is measured at 5000 itself: its cells stay, with no setting of C1's
        assert after[Cell("cpu", "matmul", impl, 5000)] is None
        assert Cell("cpu", "matmul", impl, 4000) not in before


def test_claim_sizes_article_measures_the_articles_sizes_and_none_the_blocks_alone():
    claims = kit_config.claims(DEFAULT)
    article = cpu_cells(claims, claim_sizes="article")
    assert Cell("cpu", "matmul", "jax_numpy_input", 10000) in article
    assert Cell("cpu", "matmul", "jax_numpy_input", 2000) not in article
    assert {c.size for c in article if c.impl == "loop_jit"} == {8, 16, 32, 64}
    block = {"name": "selu", "impls": ["numpy"], "sizes": [10]}
    alone = cpu_cells(claims, claim_sizes="none", workloads=[block])
    assert list(alone) == [Cell("cpu", "selu", "numpy", 10)]


def test_claim_devices_measures_only_the_parts_that_name_one():
    """A GPU grid: the GPU parts and the CPU cells they divide by, nothing CPU-only."""
    claims = kit_config.claims(DEFAULT)
    plan = cpu_cells(claims, devices=["cpu", "gpu"], claim_devices=["gpu"])
    assert Cell("gpu", "matmul", "jax", 10000) in plan  # B1
    assert Cell("cpu", "matmul", "numpy", 10000) in plan  # B1's NumPy on the CPU
    assert not any(c.workload in ("dot_xx", "stencil", "grad_logistic") for c in plan)
    assert Cell("cpu", "matmul", "jax", 2000) not in plan  # B3 is CPU-only
    with pytest.raises(grid.ConfigError, match="config key claim_devices: 'gpu' is not in"):
        grid.check({**DEFAULT, "claim_devices": ["gpu"]})


def test_two_claims_that_set_one_cell_two_ways_are_refused_naming_both(tmp_path):
    folder, entries = copy_of_articles(tmp_path)
    a2 = next(c for c in entries if c["id"] == "A2")
    a2["settings"] = [{"repeats": 6, "why": "a second opinion"}]
    claims = claim_rules.read_claims(write(folder, entries))
    with pytest.raises(grid.ConfigError) as said:
        cpu_cells(claims)
    file = folder / "claims.yaml"
    assert str(said.value) == (
        f"cpu/dot_xx/jax/1000: claim A1 ({file}) sets repeats 4 and claim A2 ({file}) sets 6;"
        " one cell is measured one way, so say it in one place"
    )
    a2["settings"] = [{"repeats": 4, "why": "the same"}]  # the same value: no conflict
    cpu_cells(claim_rules.read_claims(write(folder, entries)))


def test_a_users_block_that_shadows_a_claims_cell_with_other_settings_is_refused():
    claims = kit_config.claims(DEFAULT)
    partial = {"partial_claims": True}  # C5's CPU part, which sets its cells' repeats
    block = {"name": "selu", "impls": ["numpy"], "sizes": [1000000], "repeats": 3}
    with pytest.raises(grid.ConfigError) as said:
        cpu_cells(claims, workloads=[block], **partial)
    assert str(said.value).startswith("cpu/selu/numpy/1000000: claim C5 (")
    assert "sets repeats 5 and config key workloads[0] (selu) sets 3;" in str(said.value)
    same = {**block, "repeats": 5}  # the claim's own value, or no setting: it only adds
    assert cpu_cells(claims, workloads=[same], **partial) == cpu_cells(claims, **partial)
    bare = {"name": "selu", "impls": ["numpy"], "sizes": [1000000, 77]}
    assert set(cpu_cells(claims, workloads=[bare], **partial)) - set(
        cpu_cells(claims, **partial)
    ) == {Cell("cpu", "selu", "numpy", 77)}


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"repeats": 2}, "settings[0]: no 'why' (one line: why these cells need it)"),
        ({"why": "w"}, "settings[0]: sets none of phases, repeats, sampling"),
        ({"phases": ["warm"], "why": "w"}, "settings[0]: no phase 'warm' (known: host_to_"),
        ({"repeats": 0, "why": "w"}, "settings[0]: repeats 0 is not a count of processes"),
        ({"cores": 2, "why": "w"}, "settings[0]: unknown key 'cores'"),
    ],
)
def test_a_setting_that_cannot_be_used_is_refused_naming_the_claim(tmp_path, entry, said):
    folder, entries = copy_of_articles(tmp_path)
    entries[0]["settings"] = [entry]
    with pytest.raises(claim_rules.ClaimConfigError) as caught:
        claim_rules.read_claims(write(folder, entries))
    assert str(caught.value).startswith(f"{folder / 'claims.yaml'}: claim A1, {said}")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"size": None}, "no 'size' (the article's) or 'measure_at'"),
        ({"measure_at": 7}, "measure_at 7: stencil size must be even and >= 4, got 7"),
        ({"measure_at": "12"}, "measure_at '12' is not an integer"),
    ],
)
def test_a_part_without_usable_sizes_is_refused(tmp_path, change, said):
    folder, entries = copy_of_articles(tmp_path)
    d1 = next(c for c in entries if c["id"] == "D1")
    d1["parts"][0].update(change)
    d1["parts"][0] = {k: v for k, v in d1["parts"][0].items() if v is not None}
    with pytest.raises(claim_rules.ClaimConfigError) as caught:
        claim_rules.read_claims(write(folder, entries))
    assert (
        str(caught.value) == f"{folder / 'claims.yaml'}: claim D1, part 'loop / convolve': {said}"
    )


def test_a_trend_without_sizes_is_refused(tmp_path):
    folder, entries = copy_of_articles(tmp_path)
    c6 = next(c for c in entries if c["id"] == "C6")
    del c6["parts"][0]["sizes"]
    with pytest.raises(claim_rules.ClaimConfigError, match="no 'sizes' \\(the sizes its fit"):
        claim_rules.read_claims(write(folder, entries))


def test_a_catalogs_parts_read_its_own_figures_and_a_source_two_catalogs_share_is_refused(
    tmp_path,
):
    folder, _ = copy_of_articles(tmp_path)
    claims = claim_rules.read_claims([folder])
    assert {c.catalog for c in claims} == {"articles"}
    assert claims[0].parts[0].article == pytest.approx(4.92e-3 / 269.0e-6)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(folder / "figures.yaml", other)
    (other / "claims.yaml").write_text("[]\n")
    with pytest.raises(claim_rules.ClaimConfigError) as said:
        claim_rules.read_claims([folder, other])
    assert str(said.value) == (
        f"source 'A' is in both {folder / 'figures.yaml'} and {other / 'figures.yaml'}"
    )


def test_a_catalog_without_a_hand_drawn_figure_gets_the_generic_one():
    assert figure_names.names(["articles"])[:4] == list(figure_names.ARTICLE_FIGURES)
    names = figure_names.names(["articles", "jax-docs", "articles"])
    assert names[4] == "catalog_jax-docs" and names.count("article_A") == 1
    assert figure_names.catalog_of("catalog_jax-docs") == "jax-docs"
    assert figure_names.catalog_of("article_A") is None
    assert "article_A" not in figure_names.names(["mine"])


def test_the_jax_docs_catalog_plans_every_cpu_claim_and_reads_beside_the_articles():
    """Eleven of its twelve claims need a CPU alone, and a CPU run plans each one's cells,
    each part naming a figure of its source (a number, or its words); read after the
    articles' catalog, no id, slug or source key collides."""
    docs = claim_rules.read_claims([ROOT / "config/claims/jax-docs"])
    assert len(docs) >= 12 and {c.catalog for c in docs} == {"jax-docs"}
    plan = cpu_cells(docs)
    on_cpu = [c for c in docs if all(t.device == "cpu" for p in c.parts for t in p.terms)]
    assert len(on_cpu) >= 10
    for claim in on_cpu:
        for part in claim.parts:
            named = part.article is not None or part.article_says is not None
            assert named or claim.id == "J4", claim.id
            for t in part.terms:
                cell = Cell("cpu", t.workload, t.impl, part.sizes_for()[0])
                assert cell in plan, (claim.id, cell)
    both = claim_rules.read_claims([ARTICLES, ROOT / "config/claims/jax-docs"])
    assert len(both) == 15 + len(docs)
    assert set(claim_rules.figures([ARTICLES, ROOT / "config/claims/jax-docs"]).sources) >= {
        "A",
        "think",
        "i968",
    }
