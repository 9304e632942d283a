"""A run's verdict map (present/run_map.py): the README's map with the run as its first
column, its machine named, beside every committed reference column; and its figure, a colour
per machine. Judged over the Xeon reference's committed records, so nothing is measured: that
run IS a committed reference, which the map shows once, as this run."""

import re
from pathlib import Path
from types import SimpleNamespace

import matplotlib.colors as mcolors
import pandas as pd
import pytest
from docutils.core import publish_doctree
from tiny import XEON_RUN, reference_tables

from blockbench.pipeline import stages
from blockbench.present import front_page, map_figure, run_map

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results/reference"
ARTICLES = ROOT / "config/claims/articles"
LABEL = "p3-r1"  # the Xeon reference's run label
MACHINE = "Intel Xeon Processor, 2 CPUs"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The claims stage over the Xeon reference's records, its map written beside the
    checkout's references."""
    tmp = tmp_path_factory.mktemp("map")
    out, written = reference_tables(tmp)
    files = [tmp / "results" / f"verdict_map.{ext}" for ext in ("md", "csv", "rst")]
    table = stages.build_claims(
        out.parquet,
        out.processes,
        [str(ARTICLES)],
        *written,
        this_run=LABEL,
        decisions=[XEON_RUN / "raw" / LABEL / "rounds.json"],
        map_files=files,
        reference=REFERENCE,
    )
    parts = pd.read_parquet(written[-1])
    return SimpleNamespace(tmp=tmp, out=out, table=table, parts=parts, files=files)


def rows(markdown: str) -> list[list[str]]:
    """A Markdown page's table, cell by cell (no cell holds a `|`), without its rule row."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    return [
        [c.strip() for c in line.strip("|").split(" | ")] for line in lines if "---" not in line
    ]


def test_the_map_puts_this_run_first_with_its_machine(judged):
    head, *body = rows(judged.files[0].read_text())
    assert head[1].startswith(f"this run `{LABEL}`<br>{MACHINE}"), head[1]
    assert "<br>the machine of `xeon-m207-2cpu`" in head[1]
    assert "<br>the committed `xeon-m207-2cpu/run`" in head[1]
    # every claim the run judged is a row, its cell the run's own verdict
    verdicts = judged.table.set_index("claim_id")["verdict"]
    mine = {r[0].split()[0]: r[1] for r in body}
    assert all(mine[i].startswith(v) for i, v in verdicts.items())


def test_the_map_has_one_column_per_reference_column_besides(judged):
    """The run is the committed xeon-m207-2cpu/run: shown once, as this run; its column
    keeps its other catalog's run (jax-docs), so no column is lost."""
    columns = front_page.columns(REFERENCE)
    head, *body = rows(judged.files[0].read_text())
    assert len(head) == 2 + len(columns)
    assert [re.search(r"`([^`]+)`", h).group(1) for h in head[2:]] == [c.kind.name for c in columns]
    # the reference's default column lists its jax-docs run alone, not the run again
    xeon = head[2].split("<br>")
    assert xeon[1] == "default" and [x.split(":")[0] for x in xeon[2:]] == ["jax-docs"], xeon
    text = judged.files[0].read_text()
    assert "This run is the committed `xeon-m207-2cpu/run`" in text
    # the run's cells are the README's for that reference: the same records, the same code
    readme, _ = front_page.verdict_map(columns, ROOT)
    committed = {r[0]: r[1] for r in rows("\n".join(readme))[1:]}
    for r in body:
        if r[0].startswith(("A", "B", "C", "D")):
            assert r[1] == committed[r[0]], r[0]


def test_the_csv_has_the_runs_rows_then_every_references(judged):
    csv = pd.read_csv(judged.files[1])
    mine = csv[csv["kind"] == run_map.THIS_RUN]
    assert list(mine["claim_id"]) == list(judged.table["claim_id"])
    assert set(mine["run_label"]) == {LABEL} and mine["machine"].str.startswith(MACHINE).all()
    assert csv.index[csv["kind"] == run_map.THIS_RUN].max() < len(mine)  # first
    kinds = {c.kind.name for c in front_page.columns(REFERENCE)}
    assert set(csv["kind"]) == kinds | {run_map.THIS_RUN}
    # the committed xeon run's rows are this run's, not listed twice
    assert not ((csv["kind"] != run_map.THIS_RUN) & (csv["run_label"] == LABEL)).any()


def test_the_reports_copy_is_valid_restructuredtext(judged):
    text = judged.files[2].read_text()
    tree = publish_doctree(text, settings_overrides={"report_level": 2, "halt_level": 2})
    assert f"this run {LABEL}" in tree.astext()


def test_without_references_the_run_is_alone_and_the_map_says_why(judged):
    for reference, why in ((None, run_map.FETCHED), (judged.tmp / "none", "holds none")):
        files = [judged.tmp / f"alone.{ext}" for ext in ("md", "csv", "rst")]
        processes = pd.read_parquet(judged.out.processes)
        run_map.write(judged.table, judged.parts, processes, LABEL, reference, *files)
        text = files[0].read_text()
        assert why in text
        head, *_ = rows(text)
        assert len(head) == 2 and head[1].startswith(f"this run `{LABEL}`")
        assert set(pd.read_csv(files[1])["kind"]) == {run_map.THIS_RUN}


def test_another_run_leaves_every_reference_column_whole():
    beside = run_map.references(REFERENCE, {"label": "elsewhere"})
    assert beside.columns == front_page.columns(REFERENCE) and not beside.rebuilt


def test_the_figure_has_one_colour_per_machine(judged):
    processes = pd.read_parquet(judged.out.processes)
    tables = run_map.figure_parts(judged.parts, processes, REFERENCE, LABEL)
    names = list(tables)
    assert names[0] == f"this run {LABEL}: {front_page.run_facts(XEON_RUN)['cpu']}"
    assert len(names) == 1 + len(front_page.columns(REFERENCE))
    fig = map_figure.map_figure(tables)
    drawn = {mcolors.to_hex(line.get_color()) for ax in fig.axes for line in ax.lines}
    assert len(drawn) == len(names)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[: len(names)] == names
