"""Each claim's anatomy (blockbench.present.claim_anatomy): what each side of a ratio part is
made of, phase by phase, as its figure draws it and `blockbench explain` prints it, from the
Xeon reference's committed records, measuring nothing."""

import shutil
from pathlib import Path

import pandas as pd
import pytest
from tiny import XEON_RUN, reference_tables

from blockbench.judge.claim_rules import figures as article_figures
from blockbench.judge.claim_rules import read_claims
from blockbench.pipeline import explain_cli
from blockbench.present import claim_anatomy, figure_names, figures

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = [ROOT / "config/claims/articles", ROOT / "config/claims/jax-docs"]
ARTICLES = ROOT / "config/claims/articles"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Xeon reference's default run as a run's folder: its claims.csv, and its tables
    rebuilt from its raw JSON beside its committed claim parts."""
    run = tmp_path_factory.mktemp("run")
    (run / "tables").mkdir()
    out, _ = reference_tables(run / "tables")
    shutil.move(out.parquet, run / "tables/measurements.parquet")
    shutil.move(out.processes, run / "tables/processes.parquet")
    shutil.copy(XEON_RUN / "claims.csv", run)
    parts = pd.read_csv(XEON_RUN / "claim_parts.csv")
    parts.to_csv(run / "tables/claim_parts.csv", index=False)
    parts.to_parquet(run / "tables/claim_parts.parquet", index=False)
    return run


def anatomies_of(run: Path, claim_id: str) -> list[claim_anatomy.Anatomy]:
    claims = read_claims(ARTICLES)
    claim = next(c for c in claims if c.id == claim_id)
    cells = pd.read_parquet(run / "tables/measurements.parquet")
    parts = pd.read_csv(run / "tables/claim_parts.csv")
    return claim_anatomy.anatomies(claim, claims, cells, parts, article_figures(ARTICLES))


def test_an_anatomy_figure_for_exactly_the_claims_with_a_ratio_part():
    claims = read_claims(CATALOGS)
    names = figure_names.names([c.catalog for c in claims], claims)
    drawn = {figure_names.claim_of(n) for n in names} - {None}
    ids = [c.id for c in claims]
    assert drawn == {c.id for c in claims if any(p.kind == "ratio" for p in c.parts)}
    assert {"A1", "C3", "D1", "D3", "J3"} <= drawn
    assert not {"C6", "C7", "D2"} & drawn  # trends and checks alone: no two sides
    # the other figures as before, the anatomies after them
    assert names == [
        *figure_names.names(c.catalog for c in claims),
        *(f"anatomy_{i}" for i in sorted(drawn, key=ids.index)),
    ]
    assert figure_names.claim_of("article_A") is None


def test_a1_divides_the_blocked_call_by_the_dispatch_and_steady_makes_the_difference(tables):
    (a1,) = anatomies_of(tables, "A1")
    assert a1.headline and a1.run_label == "p3-r1" and a1.size == 1000
    assert [t.phase for t in a1.num.read] == ["steady"]
    assert [t.phase for t in a1.den.read] == ["dispatch"]
    phase, num, den = a1.biggest()
    assert phase == "steady" and num > 0 and den == 0
    said = "\n".join(a1.lines())
    assert "numerator" in said and "steady" in said and "dispatch" in said
    assert "(100%)" in said
    # the article's own times for each side: 4.92 ms blocked, 269 µs dispatched
    assert a1.num.article_s == pytest.approx(4.92e-3)
    assert a1.den.article_s == pytest.approx(269e-6)
    # one eager cell, every phase that applies to it measured: nothing to say is missing
    assert a1.not_measured() == ""
    assert set(next(iter(a1.cells.values()))) >= {"host_to_device", "dispatch", "asarray"}


def test_d1_names_the_phases_its_steady_only_cells_left_out_and_the_key(tables):
    loop, scan = anatomies_of(tables, "D1")
    assert (loop.part.name, scan.part.name) == ("loop / convolve", "convolve / scan")
    assert scan.headline and not loop.headline  # the verdict rests on convolve / scan
    for a in (loop, scan):
        assert all(set(phases) == {"steady"} for phases in a.cells.values())
        said = a.not_measured()
        assert "first_call" in said and "dispatch" in said
        assert "cell_phases: every" in said and "D1's `settings: phases`" in said
    assert scan.num.article_s == pytest.approx(0.118) and scan.den.article_s == 0.094
    assert scan.biggest()[0] == "steady"


def test_d3_reads_the_compile_against_the_eager_call(tables):
    """D3 rests on its growth, no ratio: its three ratio parts are each drawn, none headline."""
    parts = anatomies_of(tables, "D3")
    assert [a.size for a in parts] == [12, 12, 12] and not any(a.headline for a in parts)
    compile_, first, _ = parts
    assert [t.phase for t in compile_.num.read] == ["compile"]
    assert [t.phase for t in first.num.read] == ["first_call"]
    assert "trace_lower" in compile_.not_measured() and "D3's" in compile_.not_measured()


@pytest.mark.parametrize("claim_id", ["A1", "D1", "C3", "B1"])
def test_each_anatomy_figure_is_drawn_by_the_figures_job(tables, tmp_path, claim_id):
    outputs = [tmp_path / f"anatomy_{claim_id}.svg", tmp_path / f"anatomy_{claim_id}.png"]
    figures.draw(
        f"anatomy_{claim_id}",
        tables / "tables/measurements.parquet",
        tables / "tables/processes.parquet",
        tables / "tables/claim_parts.parquet",
        ARTICLES,
        outputs,
    )
    svg = outputs[0].read_text()
    assert outputs[1].stat().st_size > 10_000
    assert "what each side" in svg
    if claim_id == "D1":  # the lines beneath are wrapped: a key may break at its space
        assert "cell_phases:" in svg and "the part its verdict rests on" in svg
    if claim_id == "C3":  # a GPU claim on a CPU run: its NumPy side alone measured
        assert "numerator: host_to_device + first_call (not measured)" in svg
    if claim_id == "B1":  # none of its cells in the run: its panel says why
        assert "not run: gpu not in this run" in svg


def test_explain_names_the_part_d1_rests_on_and_the_references(capsys):
    """On the Xeon reference's folder itself: its cells rebuilt from raw/, nothing measured."""
    assert explain_cli.main(["D1", str(XEON_RUN)]) == 0
    out = capsys.readouterr().out
    assert "the part its verdict rests on: convolve / scan" in out
    assert "convolve / scan: 0.211 [0.174, 0.255] vs article" in out  # verdicts.part_line
    assert "numerator" in out and "(100%)" in out and "cell_phases: every" in out
    assert "on the committed references (the same part):" in out
    for reference in (
        "xeon-m207-2cpu, default",
        "xeon-m207-2cpu, paper",
        "epyc-zen3-2cpu, default",
    ):
        assert f"{reference}: not_reproduced" in out


def test_explain_reads_a_run_folder_and_skips_references_without_the_claim(tables, capsys):
    assert explain_cli.main(["J1", str(XEON_RUN.parent / "jax-docs/run")]) == 0
    out = capsys.readouterr().out
    assert "xeon-m207-2cpu, default" in out and "epyc-zen3-2cpu" not in out
    assert explain_cli.main(["A1", str(tables), "--references", str(tables / "none")]) == 0
    out = capsys.readouterr().out
    assert "the part its verdict rests on: blocked / dispatch" in out
    assert "blocked / dispatch at 1000 (the part its verdict rests on):" in out
    assert "dispatch" in out and "committed references" not in out


def test_explain_refuses_a_claim_the_run_lacks_in_one_line_naming_the_known(tables, capsys):
    assert explain_cli.main(["Z9", str(tables)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no claim 'Z9'" in err and "known: A1, A2" in err
