"""The articles' numbers (config/claims/articles/figures.yaml) and the figures that redraw
each source."""

import shutil
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
import yaml
from matplotlib import pyplot as plt
from test_claims import row

from blockbench.judge import articles, claim_rules, verdicts
from blockbench.judge.aggregate import cells
from blockbench.judge.articles import Placed
from blockbench.judge.claim import Term
from blockbench.judge.run_view import RunView
from blockbench.pipeline import stages
from blockbench.present import article_figures, article_points, cell_figures, claim_figures, figures
from blockbench.workloads import grad_logistic

ROOT = Path(__file__).resolve().parents[1]
ARTICLES = articles.load(ROOT / "config/claims/articles/figures.yaml")


def test_every_number_the_sources_print_is_there_once():
    # a sample of the articles' figures (docs/claims.md), in its units (seconds)
    expected = {
        "A.dispatch": 269e-6,
        "A.asarray": 8.09e-3,
        "C.matmul_gpu_steady": 68.9e-3,
        "C.matmul_tpu_first": 0.837,
        "C.selu_gpu_jit_first": 122e-3,
        "D.loop": 22.9,
        "B.A_vs_E": 28,
    }
    for key, value in expected.items():
        assert ARTICLES.figure(key).value == pytest.approx(value)
    values = [f.value for s in ARTICLES.sources.values() for f in s.figures.values()]
    numbers = [v for v in values if isinstance(v, int | float) and v not in (2,)]
    assert len(numbers) == len(set(numbers)), "a published number is written twice"


def test_the_claims_read_their_article_figures_from_the_articles_file():
    claims = {c.id: c for c in stages.read_claims(ROOT / "config/claims/articles")}
    head = {cid: c.parts[0] for cid, c in claims.items()}
    assert head["A1"].article == pytest.approx(4.92e-3 / 269e-6)
    assert head["C3"].article == pytest.approx(2.23 / 1.61)
    assert head["D1"].article == pytest.approx(22.9 / 0.118)
    assert head["B1"].article == 28 and head["B2"].article is None
    assert "4.92 ms" in claims["A1"].article and "269 µs" in claims["A1"].article
    assert claims["C6"].article == "qualitative (no figure)"
    assert all(
        not isinstance(p.article_expression, int | float) for c in claims.values() for p in c.parts
    )


def test_the_published_gradient_is_the_one_the_workload_checks():
    assert ARTICLES.figure("C.grad").value == pytest.approx(list(grad_logistic.KNOWN_OUTPUT))


@pytest.mark.parametrize(
    ("article", "message"),
    [
        (18.3, "is a number; write it in the catalog's figures.yaml"),
        ("A.blocked / A.nothing", "no published figure 'A.nothing'"),
        ("blocked / dispatch", "'blocked' is not an article figure"),
        ("B.D_vs_E / A.blocked", None),  # words only: no value, but a valid name
    ],
)
def test_a_claims_article_must_name_figures_of_the_articles_file(tmp_path, article, message):
    part = {
        "name": "p",
        "num": {"device": "cpu", "workload": "matmul", "impl": "jax"},
        "den": {"device": "cpu", "workload": "matmul", "impl": "numpy"},
        "holds_if": "> 1",
        "why": "w",
        "code": "c",
        "size": 1000,
        "article": article,
    }
    claim = {"id": "X", "slug": "x", "source": "s", "statement": "t", "parts": [part]}
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump([claim]))
    shutil.copy(ROOT / "config/claims/articles/figures.yaml", tmp_path)  # its catalog's figures
    if message is None:
        assert claim_rules.read_claims(path)[0].parts[0].article is None
        return
    with pytest.raises(claim_rules.ClaimConfigError, match=message) as err:
        claim_rules.read_claims(path)
    assert "claim X, part 'p'" in str(err.value)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"unit": "ms"}, "unit 'ms'"),
        ({"cell": {"device": "cpu", "workload": "matmul", "impl": "jax"}}, "needs device"),
        ({"cell": {"device": "npu", "workload": "matmul", "impl": "jax", "size": 5}}, "'npu'"),
        (
            {"cell": {"device": "cpu", "workload": "matmul", "impl": "pytorch", "size": 5}},
            "'pytorch'",
        ),
    ],
)
def test_an_unusable_article_figure_is_refused_naming_it(tmp_path, edit, message):
    data = yaml.safe_load((ROOT / "config/claims/articles/figures.yaml").read_text())
    data["A"]["figures"]["blocked"].update(edit)
    path = tmp_path / "articles.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(articles.ArticlesError, match=message) as err:
        articles.load(path)
    assert "source A, figure blocked" in str(err.value)


def _two_machines() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A laptop run (CPU only, matmul at 2000 only) and a GPU node run, merged."""
    proc = []
    for run, devices in (("laptop", ["cpu"]), ("gpu-node", ["cpu", "gpu"])):
        size = 2000 if run == "laptop" else 10000
        for device in devices:
            for impl in ("numpy", "jax", "jax_numpy_input"):
                if device == "gpu" and impl == "numpy":
                    continue
                median = {"cpu": 2.0, "gpu": 0.1}[device] * (0.5 if impl == "numpy" else 1)
                proc += row(impl, size, median=median, device=device, run_label=run, spread=0.05)
        if run == "laptop":  # asked for a GPU it did not have
            proc += row(
                "jax",
                10000,
                device="gpu",
                run_label=run,
                status="unavailable",
                reason="no gpu device: JAX sees only cpu",
            )
    df = pd.DataFrame(proc)
    df["device_model"] = df["run_label"] + "-" + df["device"]
    return cells(df), df


def test_source_b_shows_each_machine_and_says_what_a_run_lacks():
    df, proc = _two_machines()
    views = {v.run_label: v for v in RunView.each(df, proc)}
    d_cell = Placed(Term("gpu", "matmul", "jax_numpy_input"), 10000)
    a_cell = Placed(Term("cpu", "matmul", "numpy"), 10000)
    assert article_points.ratio_point(views["laptop"], d_cell, a_cell).note == "not run: no GPU"
    on_gpu = article_points.ratio_point(views["gpu-node"], d_cell, a_cell)
    assert on_gpu.value == pytest.approx(0.1, rel=0.05)
    assert on_gpu.low < on_gpu.value < on_gpu.high and on_gpu.note == ""
    b_cell = Placed(Term("cpu", "matmul", "jax_numpy_input"), 10000)
    at_2000 = article_points.ratio_point(views["laptop"], b_cell, a_cell)
    assert (
        at_2000.value == pytest.approx(2.0, rel=0.05)
        and at_2000.note == "at 2,000 (article 10,000)"
    )
    # the article's E: 28x faster than A, drawn as 1/28 of A's time
    value, _ = article_figures._b_article(ARTICLES.sources["B"], ("gpu", "jax"))
    assert value == pytest.approx(1 / 28)
    assert article_points.machine(views["gpu-node"]) == "run gpu-node: gpu-node-cpu + gpu-node-gpu"


def drawn(tmp_path: Path, name: str, df: pd.DataFrame, proc: pd.DataFrame, outputs: list) -> None:
    """Figure `name` of these cells and processes, judged by the committed claims, as the
    workflow's figure rule draws it from the tables' files."""
    df.to_parquet(tmp_path / "cells.parquet")
    proc.to_parquet(tmp_path / "proc.parquet")
    claim_list = stages.read_claims(ROOT / "config/claims/articles")
    verdicts.judge(df, proc, claim_list)[1].to_parquet(tmp_path / "parts.parquet")
    figures.draw(
        name,
        tmp_path / "cells.parquet",
        tmp_path / "proc.parquet",
        tmp_path / "parts.parquet",
        ROOT / "config/claims/articles",
        outputs,
    )


@pytest.mark.parametrize("name", list(article_figures.ARTICLE_FIGURES))
def test_each_article_figure_names_both_machines_and_every_empty_slot(tmp_path, name):
    outputs = [tmp_path / f"{name}.svg", tmp_path / f"{name}.png"]
    drawn(tmp_path, name, *_two_machines(), outputs)
    svg = outputs[0].read_text()
    assert "run laptop" in svg and "run gpu-node" in svg
    assert "not run: no TPU in this run" in svg or name in ("article_A", "article_B", "article_D")
    if name == "article_B":
        assert svg.count("not run: no GPU") == 2  # D and E on the laptop
        assert "at 2,000 (article 10,000)" in svg
        assert "Tesla T4" in svg  # the article's hardware
    assert outputs[1].stat().st_size > 10_000
    assert matplotlib.rcParams["svg.fonttype"] == "none"  # text stays text in the SVG


def test_figures_drawn_in_one_job_by_two_workers_are_the_files_drawn_one_by_one(tmp_path):
    """The workflow draws every figure in one job, a pool of workers after one import: each
    file must be what drawing that figure alone writes (no state left by another figure)."""
    names = ["article_A", "rule_parts", "article_D"]
    drawn(tmp_path, "phases", *_two_machines(), [tmp_path / "warm.svg"])  # writes the tables
    tables = [tmp_path / f for f in ("cells.parquet", "proc.parquet", "parts.parquet")]
    claims = ROOT / "config/claims/articles"
    for way, workers in (("alone", 1), ("pool", 2)):
        outputs = [[tmp_path / way / f"{n}.svg", tmp_path / way / f"{n}.png"] for n in names]
        figures.draw_all(names, *tables, claims, outputs, workers=workers)
    for name in names:
        for ext in ("svg", "png"):
            alone, pool = (tmp_path / way / f"{name}.{ext}" for way in ("alone", "pool"))
            assert pool.read_bytes() == alone.read_bytes(), (name, ext)


def test_the_claims_figure_shows_every_interval_whole():
    """A1 359 [97.1, 1330] in a run judged with a between-run study: its upper end was drawn
    off an axis that stopped at twice the largest value."""
    parts = pd.DataFrame(
        {
            "run_label": "local",
            "claim_id": ["A1", "C1"],
            "part": ["blocked / dispatch", "NumPy / JAX"],
            "kind": "ratio",
            "article": [18.3, 2.16],
            "measured": [359.0, 1.62],
            "ci_low": [97.1, 0.4],
            "ci_high": [1330.0, 1.64],
            "outcome": "holds",
            "indicative": False,
        }
    )
    ax = claim_figures.claims_figure(parts).axes[0]
    assert ax.get_ylim()[0] <= 0.4 and ax.get_ylim()[1] >= 1330
    assert ax.get_xlim() == ax.get_ylim()  # the diagonal stays the diagonal
    plt.close("all")


def test_the_rule_parts_figure_draws_any_claims_parts_against_their_rules():
    """The figure a catalog with no hand-made figure reads: each part's row names the claim,
    the part and its rule, shades the values the rule accepts, and puts ratios and
    exponents on axes of their own."""
    parts = pd.DataFrame(
        {
            "run_label": "local",
            "claim_id": ["X1", "X2", "X3"],
            "part": ["mine / theirs", "slower / faster", "speedup grows"],
            "kind": ["ratio", "ratio", "trend"],
            "article": [3.0, None, None],
            "measured": [4.0, 0.8, 0.2],
            "ci_low": [3.5, 0.7, -0.1],
            "ci_high": [4.6, 0.9, 0.5],
            "condition": [">= 2", "between 1.4 and 3", "> 0"],
            "outcome": ["holds", "fails", "inconclusive"],
            "indicative": False,
            "device_model": "cpu: Some CPU",
        }
    )
    fig = claim_figures.rule_parts(parts)
    assert fig._suptitle.get_text().endswith("\nrun local on cpu: Some CPU")  # its machine
    ratios, exponents = fig.axes
    labels = [t.get_text() for t in ratios.get_yticklabels()]
    assert labels == ["X1 mine / theirs (>= 2)", "X2 slower / faster (between 1.4 and 3)"]
    assert ratios.get_xscale() == "log" and exponents.get_xscale() == "linear"
    bands = [p.get_paths()[0].get_extents() for p in ratios.collections if p.get_paths()]
    assert any(abs(b.x0 - 2.0) < 1e-9 for b in bands)  # X1's rule holds from 2 on
    assert any(abs(b.x0 - 1.4) < 1e-9 and abs(b.x1 - 3.0) < 1e-9 for b in bands)
    plt.close("all")


def test_a_time_axis_within_one_decade_labels_each_tick_with_its_own_value():
    """time_vs_size's dot_xx panel spans 9 to 12 ms: one significant digit read 1e-02 at
    every tick."""
    fig, ax = plt.subplots()
    ax.plot([1, 2], [0.0092, 0.0118])
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(cell_figures.TickValues())
    ax.yaxis.set_minor_formatter(
        cell_figures.TickValues(labelOnlyBase=False, minor_thresholds=(1, 0.4))
    )
    fig.canvas.draw()
    ticks = [*ax.get_yticklabels(), *ax.get_yticklabels(minor=True)]
    shown = [t.get_text() for t in ticks if t.get_text()]
    plt.close(fig)
    assert len(shown) >= 3 and len(set(shown)) == len(shown), shown
    assert {"0.0095", "0.01", "0.011"} <= set(shown)


def test_a_size_axis_within_one_decade_labels_its_sizes():
    """The stencil's speedups stand at 12 and 64 rows: no power of ten between them, so the
    panel names its sizes instead of showing an axis without a number."""
    proc = pd.DataFrame(
        [p for impl in ("loop", "scan") for size in (12, 64) for p in row(impl, size)]
    ).assign(workload="stencil", device_label="cpu (a test CPU)", blas_kernel=None)
    fig = cell_figures.speedup_vs_size(cells(proc), proc)
    fig.canvas.draw()
    shown = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    plt.close(fig)
    assert shown == ["12", "64"]


def test_a_numpy_line_names_the_blas_kernel_it_ran(tmp_path):
    """Which kernel OpenBLAS ran moved C1 by 1.8x on one VM: the legend of the time and
    speedup figures says it beside NumPy's BLAS cells, and only there."""
    proc = pd.DataFrame(
        [p for impl in ("numpy", "jax") for size in (10, 20) for p in row(impl, size)]
    )
    proc["blas_kernel"] = proc["impl"].map({"numpy": "OpenBLAS Haswell"})
    proc["device_label"] = "cpu (a test CPU)"
    for name in ("time_vs_size", "speedup_vs_size"):
        svg = tmp_path / f"{name}.svg"
        drawn(tmp_path, name, cells(proc), proc, [svg])
        assert "numpy, OpenBLAS Haswell" in svg.read_text()
        assert "jax, OpenBLAS" not in svg.read_text()
