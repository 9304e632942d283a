"""Claim verdicts from synthetic measurements whose answer is known."""

import copy
import math
import subprocess
import sys
import zlib
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import scipy.integrate
import scipy.optimize
import scipy.special
import scipy.stats
import yaml

from blockbench.judge import articles, claim_rules, part_evaluators, run_view, uncertainty, verdicts
from blockbench.judge.aggregate import cells, processes
from blockbench.judge.claim import HOLDS, KINDS, Claim, Part, Term, decide
from blockbench.present import cell_figures, claims_report, process_report, run_comparison
from blockbench.records import timeline
from blockbench.records.layout import raw_files
from blockbench.workloads.registry import WORKLOADS

ROOT = Path(__file__).resolve().parents[1]
# Small parts of committed runs (tests/data/README.md)
DATA = ROOT / "tests/data"
# blockbench's own claims, which a user's claims file adds to
SHIPPED = ROOT / "config/claims/articles/claims.yaml"


def row(
    impl,
    size,
    phase="steady",
    median=1.0,
    device="cpu",
    workload="matmul",
    status="ok",
    reason="",
    check_passed=True,
    run_label="r",
    n=10,
    warnings="",
    spread=0.0,
    processes=3,
    seed=0,
    process_spread=0.0,
    block="",
    rounds=None,
):
    """The process rows of one cell: `processes` workers of `n` samples each, lognormal
    around `median` with relative `spread` (0: every sample is exactly `median`), each
    process shifted by its own lognormal effect of relative size `process_spread`, and by
    `rounds[repeat]`: what the machine did to every cell measured in that round."""
    rng = np.random.default_rng([seed, size, zlib.crc32(f"{impl}|{phase}|{device}".encode())])
    out = []
    for repeat in range(processes):
        shift = np.exp(process_spread * rng.standard_normal())
        shift *= rounds[repeat] if rounds is not None else 1.0
        samples = median * shift * np.exp(spread * rng.standard_normal(n))
        out.append(
            {
                "run_label": run_label,
                "device": device,
                "workload": workload,
                "impl": impl,
                "size": size,
                "repeat": repeat,
                "phase": phase if status == "ok" else None,
                "median_s": float(np.median(samples)),
                "min_s": float(samples.min()),
                "n": n,
                "loops": 1,
                "stop": "time_cap",
                "samples_s": list(samples),
                "kept_s": list(samples),
                "n_all": n,
                "disturbed": None,
                "outside": None,
                "inside": None,
                "slow": None,
                "block": block,
                "status": status,
                "reason": reason,
                "device_model": f"{device}-model",
                "jax_version": "0.10.2",
                "check_passed": check_passed,
                "max_rel_err": 1e-7,
                "work": WORKLOADS[workload].work(size),
                "warnings": warnings,
                "other_load": 0.0,
                "other_processes_load": 0.0,
            }
        )
    return out


def ratio_part(**extra):
    return {
        "name": "jax / numpy",
        "num": {"device": "cpu", "workload": "matmul", "impl": "jax"},
        "den": {"device": "cpu", "workload": "matmul", "impl": "numpy"},
        "holds_if": "> 1.5",
        "why": "about twice",
        "article": 2.0,
        "code": "jnp.dot(x, x.T) / np.dot(x, x.T)",
        **extra,
    }


def trend_part():
    """The speedup of jax over numpy grows with size (a fit over the sizes measured)."""
    return {
        "code": "f",
        "name": "grows",
        "kind": "trend",
        "holds_if": "> 0",
        "why": "grows",
        "num": {"device": "cpu", "workload": "matmul", "impl": "numpy"},
        "den": {"device": "cpu", "workload": "matmul", "impl": "jax"},
        "sizes": [10, 20, 40, 80],
    }


def as_parsed(entries: list[dict]) -> list[Claim]:
    """`entries` as the parser reads a catalog's claims.yaml: a part's `article` given here
    as a number is first written into the catalog's figures.yaml (source T), and named."""
    entries, figures = copy.deepcopy(entries), {}
    for part in (p for claim in entries for p in claim["parts"]):
        value = part.get("article")
        if isinstance(value, int | float):
            name = f"f{len(figures)}"
            figures[name] = articles.Figure(f"T.{name}", value, "x", f"{value:g}x")
            part["article"] = f"T.{name}"
    source = articles.Source("T", "an article", "its machine", "its setup", figures)
    return claim_rules.parsed(entries, articles.Articles({"T": source}))


def as_part(entry: dict) -> Part:
    """One part's entry as the parser reads it (in a claim of its own)."""
    claim = {"id": "X1", "slug": "x", "source": "s", "statement": "t", "parts": [entry]}
    return as_parsed([claim])[0].parts[0]


def judge(rows, *parts):
    return judged(rows, *parts)[0].iloc[0]


def judged(rows, *parts):
    """(claims table, parts table, Markdown) for one claim made of `parts`."""
    proc = pd.DataFrame([p for cell in rows for p in cell])
    df = cells(proc)
    claims = as_parsed(
        [{"id": "X1", "slug": "x", "source": "s", "statement": "t", "parts": list(parts)}]
    )
    table, per_part = verdicts.judge(df, proc, claims)
    table = run_comparison.with_other_runs(table)
    return table, per_part, claims_report.to_markdown(table, per_part, claims)


@pytest.mark.parametrize(
    ("condition", "value", "holds"),
    [
        (">= 5", 5.0, True),
        ("> 1", 1.0, False),
        ("< 0.5", 0.4, True),
        ("between 1.4 and 3", 2.0, True),
        ("between 1.4 and 3", 3.1, False),
    ],
)
def test_conditions(condition, value, holds):
    assert (decide(condition, value, value) == HOLDS) is holds


def test_an_unreadable_condition_is_refused():
    with pytest.raises(claim_rules.ClaimConfigError, match="unreadable condition 'about 2'"):
        decide("about 2", 2.0, 2.0)


def test_a_part_without_the_articles_code_is_refused(tmp_path):
    part = {k: v for k, v in ratio_part().items() if k != "code"}
    claim = {"id": "X", "slug": "x", "source": "s", "statement": "t"}
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump([{**claim, "parts": [part]}]))
    with pytest.raises(claim_rules.ClaimConfigError, match="no 'code'"):
        claim_rules.read_claims(path)


SIZES = [
    row("numpy", 100, median=1.0),
    row("jax", 100, median=2.0),
    row("numpy", 200, median=1.0),
    row("jax", 200, median=1.2),
]


def test_a_part_is_judged_at_the_articles_size_when_it_was_measured():
    at_100 = judge(SIZES, ratio_part(size=100))
    assert at_100["verdict"] == "reproduced" and at_100["measured"] == 2.0
    assert at_100["setup"] == "article's setup (100)"


def test_a_part_measured_at_another_size_cannot_refute_the_claim():
    table, parts, markdown = judged(SIZES, ratio_part(size=5000))
    fallback = table.iloc[0]
    assert fallback["size"] == 200 and fallback["measured"] == 1.2  # fails its rule there ...
    assert fallback["verdict"] == "inconclusive"  # ... but only indicatively
    assert "measured at 200 (article 5000)" in fallback["note"]
    assert bool(parts.iloc[0]["indicative"])
    assert "measured at 200 (article 5000)" in markdown and "fails (indicative)" in markdown
    # holding off the article's setup does not reproduce it either
    assert judge(SIZES[:2], ratio_part(size=5000))["verdict"] == "inconclusive"


def _verdict_table(markdown: str) -> list[list[str]]:
    """The cells of the first run's verdict table in claims.md, its header first."""
    run = markdown.split("\n## Run ", 1)[1].split("\n### ", 1)[0]
    lines = [x for x in run.splitlines() if x.startswith("|") and not set(x) <= set("|:- ")]
    return [[c.strip() for c in x.strip("|").split("|")] for x in lines]


@pytest.mark.parametrize(
    "written",
    [
        "results/claims.md",
        "results/regenerated/xeon-m207-2cpu-run/results/claims.md",
        "results/reference/xeon-m207-2cpu/run/claims.md",
    ],
)
def test_claims_md_opens_on_six_lines_of_legend_that_link_the_statistics(written):
    """A reader reads the legend before the first table: at most six source lines of at most
    100 characters that name each outcome and verdict and link docs/statistics.md from where
    claims.md lies (a committed reference keeps a rebuilt run's claims.md)."""
    legend = claims_report.legend(claims_report.docs_from(ROOT / written))
    assert 1 <= len(legend) <= 6 and max(map(len, legend)) <= 100, legend
    said = " ".join(legend)
    for word in ("holds", "fails", "inconclusive", "reproduced", "not_reproduced", "not_run"):
        assert f"**{word}**" in said
    assert "[95% CI]" in said and "a bound if the intervals cover 95%" in said
    target = said.split("](", 1)[1].split(")", 1)[0]
    assert (ROOT / written).parent.joinpath(target).resolve() == ROOT / "docs/statistics.md"
    _, _, markdown = judged(SIZES, ratio_part(size=100))
    assert markdown.split("\n## ", 1)[0].strip().splitlines()[2:] == claims_report.legend()


def test_the_verdict_table_has_seven_columns_and_its_notes_lie_beneath():
    """A verdict table a screen wide: at most seven columns; what decided a claim, too long
    for a column, is listed under the table, a claim a line."""
    table, _, markdown = judged(SIZES, ratio_part(size=5000))
    header, *rows = _verdict_table(markdown)
    assert len(header) <= 7 and "note" not in header, header
    assert len(rows) == 1 and len(rows[0]) == len(header)
    note = table.iloc[0]["note"]
    assert "measured at 200 (article 5000)" in note and all(note not in cell for cell in rows[0])
    assert f"\n- **X1**: {note}\n" in markdown


def test_a_claim_not_run_says_in_words_that_its_measured_part_holds():
    """A claim whose CPU part holds and whose GPU part could not run: its verdict says what
    ran, and the part's value is not shown as the claim's; the notes give it, and why the
    rest did not run. The report's table reads the same."""
    rows = [
        row("numpy", 100),
        row("jax", 100, median=2.0, spread=0.02, process_spread=0.05),
        row(
            "jax",
            100,
            device="gpu",
            status="unavailable",
            phase=None,
            reason="no gpu device: JAX sees only cpu:0 (cpu)",
        ),
    ]
    gpu = {"device": "gpu", "workload": "matmul", "impl": "jax"}
    table, parts, markdown = judged(
        rows, ratio_part(size=100), ratio_part(name="GPU / NumPy", size=100, num=gpu)
    )
    head = table.iloc[0]  # the part it lacks heads it: no value of another part reads as its
    assert head["verdict"] == "not_run" and head["metric"] == "GPU / NumPy"
    assert pd.isna(head["measured"])
    held = verdicts.value_ci(*parts.iloc[0][["measured", "ci_low", "ci_high"]])
    _, (_, verdict, measured, *_) = _verdict_table(markdown)
    assert verdict == "**not_run** (1 of 2 parts ran: it holds)" and measured == ""
    said = f"`jax / numpy`: {held}, holds; not run: `GPU / NumPy` (matmul/jax on gpu is unavailable"
    assert f"\n- **X1**: {said}" in markdown
    rst = claims_report.to_rst(table, parts)
    assert "**not_run** (1 of 2 parts ran: it holds)" in rst and held not in rst


def test_a_failure_at_the_articles_setup_refutes_whatever_else_is_indicative():
    failing = ratio_part(size=200)  # 1.2, not > 1.5, at the article's own size
    assert judge(SIZES, failing, ratio_part(size=5000))["verdict"] == "not_reproduced"


def test_a_cells_warnings_reach_the_claim_and_a_designed_small_count_does_not_warn():
    """A process's share of a cell takes 2 samples by design (the cell's 5 over its 3
    processes) and a long call 1: the claim reports its fewest (`n_min`) without a warning;
    a cell that took fewer than its rule asked says so itself, and that reaches the claim."""
    rows = [
        row("numpy", 100, median=1.0, n=2),
        row("jax", 100, median=2.0, warnings="steady: 1 sample(s) < 2 (budget)"),
    ]
    result = judge(rows, ratio_part(size=100))
    assert result["n_min"] == 2
    assert "steady: 1 sample(s) < 2 (budget)" in result["warnings"]
    assert "numpy steady at 100" not in result["warnings"]


def test_a_warning_every_cell_of_a_fit_gives_is_said_once_naming_them():
    """A forced BLAS kernel warns in each NumPy cell: a fit over four sizes says it once,
    with the four sizes, and a warning of one cell alone keeps its own place."""
    blas = "NumPy's BLAS: OpenBLAS ran its Haswell kernel because OPENBLAS_CORETYPE is set"
    sizes = [10, 20, 40, 80]
    rows = [row("numpy", s, median=s * 1.0, warnings=blas) for s in sizes]
    rows += [row("jax", s, median=10.0) for s in sizes[:-1]]
    rows += [row("jax", 80, median=10.0, warnings="steady: 1 sample(s) < 2 (budget)")]
    trend = trend_part()
    said = judge(rows, trend)["warnings"]
    assert said.count("OpenBLAS ran") == 1 and f"numpy at 10, 20, 40, 80: {blas}" in said
    assert "jax at 80: steady: 1 sample(s) < 2 (budget)" in said


def test_summed_terms():
    rows = [
        row("numpy", 10, median=1.0),
        row("jax", 10, median=1.0),
        row("jax", 10, phase="device_to_host", median=0.5),
    ]
    part = ratio_part(
        measure_at=10,
        num=[
            {"device": "cpu", "workload": "matmul", "impl": "jax"},
            {"device": "cpu", "workload": "matmul", "impl": "jax", "phase": "device_to_host"},
        ],
    )
    assert judge(rows, part)["measured"] == 1.5


def test_not_run_carries_the_cells_reason_and_a_failure_wins():
    rows = [
        row("numpy", 10),
        row(
            "jax",
            10,
            device="gpu",
            status="unavailable",
            phase=None,
            reason="no gpu device: JAX sees only cpu:0 (cpu)",
        ),
    ]
    gpu = ratio_part(measure_at=10, num={"device": "gpu", "workload": "matmul", "impl": "jax"})
    result = judge(rows, gpu)
    assert result["verdict"] == "not_run" and "no gpu device" in result["note"]
    absent = ratio_part(measure_at=10, num={"device": "tpu", "workload": "matmul", "impl": "jax"})
    assert "tpu not in this run" in judge(rows, absent)["note"]
    failing = ratio_part(
        measure_at=10, num={"device": "cpu", "workload": "matmul", "impl": "numpy"}
    )
    assert judge(rows, failing, gpu)["verdict"] == "not_reproduced"


def test_trend_and_growth():
    sizes = [10, 20, 40, 80]
    rows = [row("numpy", s, median=s * 1.0) for s in sizes]
    rows += [row("jax", s, median=10.0) for s in sizes]  # speedup numpy/jax grows with size
    trend = trend_part()
    result = judge(rows, trend)  # the speedup is proportional to size: exponent 1
    assert result["verdict"] == "reproduced" and result["measured"] == pytest.approx(1.0)
    quadratic = [
        row("jax_jit", s, phase="compile", median=1e-9 * WORKLOADS["matmul"].work(s) ** 2)
        for s in sizes
    ]
    growth = {
        "code": "compile",
        "name": "slope",
        "kind": "growth",
        "holds_if": "between 1.9 and 2.1",
        "why": "quadratic",
        "of": {"device": "cpu", "workload": "matmul", "impl": "jax_jit", "phase": "compile"},
        "sizes": sizes,
    }
    assert judge(quadratic, growth)["measured"] == pytest.approx(2.0)
    # an exponent says what it is: the slope over the sizes measured, not an asymptote
    detail = judged(quadratic, growth)[1]["detail"].iloc[0]
    assert "the slope over the sizes measured, [10, 20, 40, 80]" in detail
    assert "not an asymptotic exponent" in detail


def test_check_part_fails_on_a_wrong_result():
    rows = [
        row("grad", 10, workload="grad_logistic"),
        row("grad_jit", 10, workload="grad_logistic", check_passed=False, status="wrong_result"),
    ]
    part = {
        "code": "grad",
        "name": "values",
        "kind": "check",
        "cells": {"device": "cpu", "workload": "grad_logistic", "impls": ["grad", "grad_jit"]},
        "measure_at": 10,
    }
    assert judge(rows, part)["verdict"] == "not_reproduced"


def claims_file(path: Path, *ids: str, slug: str | None = None) -> Path:
    """A claims file of one ratio claim per id (slug: the id in lower case, unless given)."""
    part = {k: v for k, v in ratio_part(size=1000).items() if k != "article"}
    entries = [
        {"id": i, "slug": slug or i.lower(), "source": "s", "statement": "t", "parts": [part]}
        for i in ids
    ]
    path.write_text(yaml.safe_dump(entries))
    return path


def test_claims_files_are_read_in_order_and_their_claims_joined(tmp_path):
    """A user's file adds to blockbench's: nothing of the shipped file needs copying."""
    mine = claims_file(tmp_path / "mine.yaml", "S1", "S2")
    shipped = [c.id for c in claim_rules.read_claims(SHIPPED)]
    ids = [c.id for c in claim_rules.read_claims([SHIPPED, mine])]
    assert ids == [*shipped, "S1", "S2"]
    ids = [c.id for c in claim_rules.read_claims([str(mine), str(SHIPPED)])]
    assert ids == ["S1", "S2", *shipped]


def test_one_path_is_a_list_of_one(tmp_path):
    mine = claims_file(tmp_path / "mine.yaml", "S1")
    assert claim_rules.claims_files(str(mine)) == claim_rules.claims_files([mine]) == [mine]
    assert claim_rules.read_claims(str(mine)) == claim_rules.read_claims([mine])


@pytest.mark.parametrize(
    ("ids", "slug", "named"),
    [(["A1"], None, "id 'A1'"), (["S1"], "dispatch-hides-compute", "slug 'dispatch-hides")],
)
def test_an_id_or_slug_two_files_share_is_refused_naming_both_files(tmp_path, ids, slug, named):
    """A user's claim never silently stands in for one of blockbench's, nor the reverse."""
    mine = claims_file(tmp_path / "mine.yaml", *ids, slug=slug)
    with pytest.raises(claim_rules.ClaimConfigError, match=named) as said:
        claim_rules.read_claims([SHIPPED, mine])
    assert f"in both {SHIPPED} and {mine}" in str(said.value)


def test_an_id_one_file_repeats_is_refused(tmp_path):
    mine = claims_file(tmp_path / "mine.yaml", "S1", "S1")
    with pytest.raises(claim_rules.ClaimConfigError) as said:
        claim_rules.read_claims(mine)
    assert str(said.value) == f"claim id 'S1' is twice in {mine}"


def test_a_missing_claims_file_is_refused_naming_the_key_and_the_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(claim_rules.ClaimConfigError) as said:
        claim_rules.read_claims([SHIPPED, missing])
    assert str(said.value) == (
        f"config key claims[1]: {str(missing)!r} is neither a catalog folder (with a "
        "claims.yaml) nor a claims file"
    )


def users_file(tmp_path: Path, **changes) -> Path:
    """A user's file of one claim, S1, its part changed by `changes` (a term's key: `num.X`)."""
    part = {k: v for k, v in ratio_part(size=1000).items() if k != "article"}
    for key, value in changes.items():
        side, _, field = key.partition(".")
        part[side] = {**part[side], field: value} if field else value
    claim = {"id": "S1", "slug": "s1", "source": "s", "statement": "t", "parts": [part]}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump([claim]))
    return path


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"holds_if": "roughly 2"}, "unreadable condition 'roughly 2'"),
        ({"num.workload": "matmull"}, "no workload 'matmull' (known: "),
        ({"den.impl": "numpyy"}, "matmul has no impl 'numpyy' (known: numpy, "),
        ({"num.device": "cuda"}, "no device 'cuda' (known: cpu, gpu, tpu)"),
        ({"num.phase": "warm"}, "no phase 'warm' (known: host_to_device, "),
    ],
)
def test_a_part_that_cannot_be_judged_is_refused_naming_file_claim_and_part(
    tmp_path, changes, said
):
    """Beside the shipped claims, as a user adds a file: one line, the file, the claim, the
    part and what is wrong (a misspelt workload used to leave the part with no cell, and
    the run planned as if the claim were not there)."""
    mine = users_file(tmp_path, **changes)
    with pytest.raises(claim_rules.ClaimConfigError) as caught:
        claim_rules.read_claims([SHIPPED, mine])
    text = str(caught.value)
    assert text.startswith(f"{mine}: claim S1, part 'jax / numpy': ") and said in text, text
    assert "\n" not in text


def test_a_claims_file_that_is_not_yaml_is_refused_naming_it_and_the_line(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("- id: S1\n  parts: [\n    - name: x\n")
    with pytest.raises(claim_rules.ClaimConfigError) as caught:
        claim_rules.read_claims([SHIPPED, mine])
    text = str(caught.value)
    assert text.startswith(f"{mine}, line ") and "not valid YAML" in text, text
    assert "unicode string" not in text and "\n" not in text


def test_the_claims_file_covers_every_article_claim():
    ids = {c.id for c in claim_rules.read_claims(ROOT / "config/claims/articles/claims.yaml")}
    assert ids == {
        "A1",
        "A2",
        "B1",
        "B2",
        "B3",
        "C1",
        "C2",
        "C3",
        "C4",
        "C5",
        "C6",
        "C7",
        "D1",
        "D2",
        "D3",
    }


def test_reference_speedups_use_the_cpu_baseline():
    """The reference run's fixture (tests/data/runs/epyc-65b7fad: C1's block among its cells)."""
    files = raw_files(DATA / "runs/epyc-65b7fad")
    sp = run_view.speedups(cells(processes(files)), processes(files))
    numpy_rows = sp[(sp["workload"] == "matmul") & (sp["impl"] == "numpy")]
    assert (numpy_rows["speedup"] == 1.0).all()


@pytest.mark.parametrize("run", ["run/raw/p3-r1", "paper/run/raw/paper"])
def test_a_ratio_has_one_value_in_the_speedups_table_and_in_every_claim_that_reads_it(run):
    """Every claim part that divides two cells' steady times, one of them its workload's
    baseline, reads the value the speedups table (and its figure) shows for that pair: paired
    over the rounds both share where a block measured them, in both places (the paper run:
    B3's cells at 10000 with rounds on demand)."""
    files = raw_files(ROOT / "results/reference/xeon-m207-2cpu" / run)
    proc = processes(files)
    df = cells(proc)
    claims = claim_rules.read_claims(ROOT / "config/claims/articles")
    _, parts = verdicts.judge(df, proc, claims)
    table = run_view.speedups(df, proc).set_index(["run_label", "workload", "impl", "size"])
    compared = 0
    for claim in claims:
        rows = parts[parts["claim_id"] == claim.id].itertuples()
        for part, row in zip(claim.parts, rows, strict=True):
            if part.kind != "ratio" or pd.isna(row.measured):
                continue
            num, den = part.num, part.den
            # the speedups table is of steady times (no claim names `phase: steady` itself)
            if len(num) + len(den) != 2 or num[0].phase != "steady" or den[0].phase != "steady":
                continue
            (n,), (d,) = num, den
            if n.workload != d.workload or "cpu" not in (n.device, d.device):
                continue
            base = WORKLOADS[n.workload].baseline
            at = (row.run_label, n.workload)
            if n.impl == base and n.device == "cpu":
                shown = table.loc[(*at, d.impl, int(row.size)), "speedup"]
            elif d.impl == base and d.device == "cpu":
                shown = 1 / table.loc[(*at, n.impl, int(row.size)), "speedup"]
            else:
                continue
            shown = shown[0] if hasattr(shown, "__len__") else shown
            assert shown == pytest.approx(row.measured, rel=1e-9), (claim.id, part.name)
            compared += 1
    assert compared >= 4  # C1, C5's CPU part, D1's loop / convolve, C6's sweeps


def test_a_part_left_out_with_its_claim_says_the_run_lacks_the_claims_device():
    """A CPU run measures no part of C5, whose other parts need a GPU: its CPU part, not
    run, says why; a part on the missing device, or of a claim of the CPU alone, does not."""
    proc = processes(raw_files(DATA / "runs/epyc-65b7fad"))
    proc = proc[proc["workload"] != "selu"]
    claims = claim_rules.read_claims(ROOT / "config/claims/articles")
    _, parts = verdicts.judge(cells(proc), proc, claims)
    detail = parts.set_index(["claim_id", "part"])["detail"]
    said = "; its claim also needs gpu not in this run (partial_claims: true measures it)"
    assert detail["C5", "NumPy / JAX CPU (eager)"].endswith(said)
    assert said not in detail["C5", "JAX CPU / JAX GPU (eager)"]  # gpu not in this run
    d1 = parts[(parts["claim_id"] == "D1")]
    assert not d1.empty and not d1["detail"].str.contains("partial_claims").any()


def test_a_cells_page_faults_show_its_processes_allocator_modes():
    """A run of method version 5 (`v5-2157`; its C5 block at 10^6 kept in tests/data/runs):
    eager SELU at 10^6 ran in processes with no page faults and in others with thousands a
    call (docs/measuring-traps.md); NumPy's took the same 2,166 a call in every process. An
    older run's records have no count: NaN in its cells."""
    df = cells(processes(raw_files(DATA / "runs/v5-2157")))
    steady = df[(df["workload"] == "selu") & (df["size"] == 1_000_000) & (df["phase"] == "steady")]
    eager = steady[steady["impl"] == "jax"].iloc[0]
    assert eager["faults_min"] == 0 and eager["faults_max"] > 1000
    numpy = steady[steady["impl"] == "numpy"].iloc[0]
    assert 2000 < numpy["faults_min"] <= numpy["faults_max"] < 2200
    old = cells(processes(raw_files(DATA / "runs/epyc-65b7fad")))
    assert old["faults_max"].isna().all()


# ---- A/A and known differences: the three-way verdicts on noisy data ----------------------


def noisy_pair(ratio, seed, spread=0.05, n=20, processes=3, process_spread=0.0):
    """jax = ratio x numpy, both lognormal with the given spreads, at size 100."""
    noise = {"spread": spread, "n": n, "processes": processes, "process_spread": process_spread}
    return [
        row("numpy", 100, median=1.0, seed=seed, **noise),
        row("jax", 100, median=ratio, seed=seed + 1, **noise),
    ]


@pytest.mark.slow  # a simulation: 20 s
def test_a_a_ratio_cis_cover_the_truth_at_least_as_often_as_they_claim():
    """Coverage is what an A/A check rests on. With a process effect as large as the sample
    noise and 3 processes a cell (a percentile bootstrap over processes would cover ~75%),
    the 95% CI of the ratio of two identical cells must contain 1 at least 95% of the time
    (combining each cell's t gives the Behrens-Fisher interval, which errs wide), and a
    rule at 1 must rarely be failed."""
    trials = 150
    covered = failed = 0
    for seed in range(trials):
        rows = noisy_pair(1.0, 1000 + 2 * seed, process_spread=0.05)
        result = judge(rows, ratio_part(size=100, holds_if="> 1"))
        covered += result["ci_low"] <= 1.0 <= result["ci_high"]
        failed += result["verdict"] == "not_reproduced"
    assert covered / trials >= 0.93, covered
    assert failed / trials <= 0.03, failed


@pytest.mark.parametrize("seed", range(0, 40, 2))
def test_a_a_two_samplings_of_one_distribution_never_fail(seed):
    """The false regression every benchmarking tool's users complain about: the same code
    twice must not come out different. The CI contains 1, so neither direction fails."""
    rows = noisy_pair(1.0, seed)
    for rule in ("> 1", "< 1"):
        result = judge(rows, ratio_part(size=100, holds_if=rule))
        assert result["ci_low"] <= 1.0 <= result["ci_high"], result
        assert result["verdict"] == "inconclusive", (rule, result["parts"])


@pytest.mark.parametrize("seed", range(0, 10, 2))
def test_a_real_twofold_difference_is_decided_both_ways(seed):
    rows = noisy_pair(2.0, seed)
    assert judge(rows, ratio_part(size=100, holds_if="> 1.5"))["verdict"] == "reproduced"
    assert judge(rows, ratio_part(size=100, holds_if="< 1"))["verdict"] == "not_reproduced"
    assert judge(rows, ratio_part(size=100, holds_if="between 1.4 and 3"))["verdict"] == (
        "reproduced"
    )


def test_a_ratio_on_its_threshold_is_inconclusive_and_says_why():
    result = judge(noisy_pair(1.5, seed=3), ratio_part(size=100, holds_if="> 1.5"))
    assert result["ci_low"] < 1.5 < result["ci_high"]
    assert result["verdict"] == "inconclusive"
    assert "straddles the rule > 1.5" in result["note"]


def test_a_ci_narrows_with_more_processes_and_samples():
    narrow = judge(noisy_pair(1.0, 5, n=60, processes=8), ratio_part(size=100))
    wide = judge(noisy_pair(1.0, 5, n=5, processes=2), ratio_part(size=100))
    assert narrow["ci_high"] - narrow["ci_low"] < (wide["ci_high"] - wide["ci_low"]) / 2


def test_between_process_spread_widens_the_ci():
    """Two processes that disagree: samples within each are tight, but the cell's CI must
    cover both processes, not just one process's samples."""
    tight = row("numpy", 100, median=1.0, spread=0.001, n=50, processes=2)
    tight[1]["samples_s"] = [x * 1.2 for x in tight[1]["samples_s"]]
    tight[1]["median_s"] *= 1.2
    rows = [tight, row("jax", 100, median=1.0, processes=2)]
    result = judge(rows, ratio_part(size=100, holds_if="> 1"))
    assert result["ci_high"] - result["ci_low"] > 0.1  # covers the 20% between processes


def test_a_single_cells_ci_covers_its_true_time_about_95_percent_of_the_time():
    """The cell-level interval (the tables' CI) is a t-interval on process medians: exact
    coverage when process effects dominate, neither too wide nor too narrow."""
    rng = np.random.default_rng(7)
    trials, covered = 400, 0
    for _ in range(trials):
        processes = [np.exp(rng.normal(0, 0.05) + rng.normal(0, 0.05, 20)) for _ in range(3)]
        low, high = uncertainty.of_cell(processes).interval()
        covered += low <= 0.0 <= high
    assert 0.91 <= covered / trials <= 0.98, covered


@pytest.mark.parametrize("processes", [1, 3])
def test_a_claims_ci_and_the_cell_tables_ci_are_the_same_interval(processes):
    """Against a constant denominator, a ratio's CI is its numerator cell's CI: the claims
    and the table compute one interval, with one process as with several."""
    rows = [
        row("jax", 100, median=2.0, spread=0.05, n=20, processes=processes, process_spread=0.05),
        row("numpy", 100, median=1.0, processes=processes),
    ]
    table, *_ = judged(rows, ratio_part(size=100))
    cell = cells(pd.DataFrame([p for c in rows for p in c]))
    jax = cell[(cell["impl"] == "jax") & (cell["phase"] == "steady")].iloc[0]
    assert table.iloc[0]["ci_low"] == pytest.approx(jax["ci95_low_s"], rel=1e-12)
    assert table.iloc[0]["ci_high"] == pytest.approx(jax["ci95_high_s"], rel=1e-12)


def test_runs_on_the_same_hardware_that_differ_beyond_their_cis_say_so():
    def run(label, jax_median, model="xeon"):
        out = []
        for impl, median in (("numpy", 1.0), ("jax", jax_median)):
            for p in row(
                impl, 5000, median=median, run_label=label, spread=0.02, seed=1, process_spread=0.02
            ):
                out.append({**p, "device_model": model, "cpu_model": model, "host_cpus": 2})
        return out

    part = ratio_part(size=5000)
    same = run("monday", 2.0) + run("tuesday", 2.6)  # both hold > 1.5, 30% apart
    table, parts, markdown = judged([same], part)
    notes = table.set_index("run_label")["other_runs"]
    assert "run tuesday on the same hardware measured 2.6" in notes["monday"]
    assert "one run's value lies outside the other's CI" in notes["monday"]
    assert "run monday" in notes["tuesday"]
    assert "Other runs on the same hardware" in markdown
    assert "Other runs on the same hardware" not in claims_report.to_rst(table[:0], parts)
    assert "quote the claim from both" in claims_report.to_rst(table, parts, first="monday")
    # the same two values on different machines, or two runs that agree: nothing to say
    apart, _, _ = judged([run("monday", 2.0) + run("tuesday", 2.6, model="epyc")], part)
    agree, _, _ = judged([run("monday", 2.0) + run("tuesday", 2.0)], part)
    assert (apart["other_runs"] == "").all() and (agree["other_runs"] == "").all()


def test_cells_measured_in_one_block_are_divided_round_by_round():
    """What a round did to both cells of a block (the machine's minute) cancels in their
    ratio: paired over rounds the CI is tight; the same numbers without a block are not."""
    rounds = [1.0, 1.4, 0.75]
    for block, tight in (("matmul@1000", True), ("", False)):
        rows = [
            row("jax", 1000, median=2.0, block=block, rounds=rounds, spread=0.01),
            row("numpy", 1000, median=1.0, block=block, rounds=rounds, spread=0.01),
        ]
        got = judge(rows, ratio_part(size=1000))
        width = got["ci_high"] / got["ci_low"]
        assert got["measured"] == pytest.approx(2.0, rel=0.02)
        assert bool(width < 1.1) == tight, (block, got["ci_low"], got["ci_high"])


def test_a_part_lists_only_the_warnings_of_the_phases_it_uses_each_kind_once():
    cell = (
        "host_to_device: unstable samples (IQR 168% of the median); "
        "dispatch: 12% of samples in a slow mode (median 0.004 s, over 0.0004 s); "
        "dispatch: 30% of samples in a slow mode (median 0.005 s, over 0.0004 s); "
        "dispatch: 12% of samples in a slow mode (median 0.004 s, over 0.0004 s); "
        "thread parity: the cell ran on 2 core(s) but BLAS used 1"
    )
    assert run_view.term_warnings(cell, "dispatch") == [
        "dispatch: 12% of samples in a slow mode (median 0.004 s, over 0.0004 s; 3 processes)",
        "thread parity: the cell ran on 2 core(s) but BLAS used 1",
    ]
    assert run_view.term_warnings(cell, "steady") == [
        "thread parity: the cell ran on 2 core(s) but BLAS used 1"
    ]


def test_the_report_describes_the_interval_the_code_computes():
    """The report states the method (claims_report.METHOD), and the code does what it
    says: the geometric mean of process medians, the t interval on the logs with R - 1 df,
    and for a sum of terms the quantile of the sum (checked against many draws), named for
    what it is (a fiducial interval), never called exact; and the report says what each
    interval covers and each verdict's confidence."""
    _, _, markdown = judged(SIZES, ratio_part(size=100))
    assert claims_report.COMPUTED in markdown
    assert claims_report.METHOD in claims_report.COMPUTED
    assert "Student t interval on the logs" in claims_report.METHOD
    assert "Behrens-Fisher fiducial interval" in claims_report.METHOD
    assert "exact" not in claims_report.COMPUTED.lower()
    for covers in ("this run's processes only", "this host's runs over the span", "pooled"):
        assert covers in claims_report.COMPUTED
    assert (
        "97.5% one-sided" in claims_report.COMPUTED
        and "5% for a `between` rule" in claims_report.COMPUTED
    )
    assert "a bound that holds if the intervals cover 95%" in claims_report.COMPUTED
    processes = [[1.0, 2.0, 3.0], [4.0], [2.0, 2.0]]
    cell = uncertainty.of_cell(processes)
    assert np.exp(cell.estimate) == pytest.approx((2.0 * 4.0 * 2.0) ** (1 / 3))
    logs = np.log([2.0, 4.0, 2.0])
    exact = scipy.stats.t.interval(0.95, 2, loc=logs.mean(), scale=logs.std(ddof=1) / np.sqrt(3))
    assert cell.interval() == pytest.approx(exact, rel=1e-12)
    two = uncertainty.Spread(0.0, ((0.1, 2.0), (0.05, 1.0)))
    rng = np.random.default_rng(3)
    draws = 0.1 * rng.standard_t(2, 2_000_000) + 0.05 * rng.standard_t(1, 2_000_000)
    assert two.half_width() == pytest.approx(np.quantile(draws, 0.975), rel=0.01)


# A pooled study part's terms (14 runs of the Zen 5 VM: a t on 13 df and five on 154)
POOLED_TERMS = ((1.0, 13.0), (0.154, 154.0), (0.080, 154.0), (0.315, 154.0), (0.080, 154.0),
                (0.267, 154.0))  # fmt: skip


def _sum_quantile_by_convolution(terms: tuple[tuple[float, float], ...]) -> float:
    """The 97.5% quantile of a T(d1) + b T(d2) by direct convolution of the two densities:
    a method independent of the characteristic function's inversion."""
    (a, d1), (b, d2) = terms

    def pdf(t: float) -> float:
        if math.isinf(d1):
            return math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
        log = scipy.special.gammaln((d1 + 1) / 2) - scipy.special.gammaln(d1 / 2)
        return math.exp(log - 0.5 * math.log(d1 * math.pi) - (d1 + 1) / 2 * math.log1p(t * t / d1))

    def cdf2(x: float) -> float:
        return float(scipy.special.ndtr(x) if math.isinf(d2) else scipy.special.stdtr(d2, x))

    def cdf(x: float) -> float:
        inner = lambda t: pdf(t) * cdf2((x - a * t) / b)  # noqa: E731
        return scipy.integrate.quad(inner, -np.inf, np.inf, epsabs=1e-11, limit=500)[0]

    q1, q2 = (s * uncertainty.t_quantile(df) for s, df in terms)
    return scipy.optimize.brentq(lambda x: cdf(x) - 0.975, max(q1, q2) * 0.9, (q1 + q2) * 1.1)


DFS = (1.0, 2.0, 5.0, 30.0, 154.0, 300.0, 700.0, 1000.0, 3000.0, 1e4, 1e5, math.inf)


@pytest.mark.parametrize("df", DFS)
def test_every_interval_routine_is_right_from_one_df_to_a_hundred_thousand(df):
    """One term is the t quantile; a sum of two agrees with direct convolution to 1e-6 at
    every df (the Bessel function overflowed above df 200, and the old fallback gave 4.72
    for 2.35 at df 1000); a process-level interval is the textbook t interval."""
    assert uncertainty.half_width(((0.5, df),)) == pytest.approx(
        0.5 * (scipy.stats.norm if math.isinf(df) else scipy.stats.t(df)).ppf(0.975), rel=1e-12
    )
    for terms in (((0.3, 2.0), (1.0, df)), ((1.0, 19.0), (1.0, df)), ((1.0, df), (0.01, df))):
        reference = _sum_quantile_by_convolution(terms)
        assert uncertainty.half_width(terms) == pytest.approx(reference, rel=1e-6), terms
    if math.isfinite(df) and df <= 1000:
        logs = np.log(np.linspace(1.0, 2.0, int(df) + 1))
        exact = scipy.stats.t.interval(
            0.95, df, loc=logs.mean(), scale=logs.std(ddof=1) / math.sqrt(logs.size)
        )
        assert uncertainty.of_processes(np.exp(logs)).interval() == pytest.approx(exact)


# A pooled study part's terms (14 runs of the Zen 5 VM: a t on 13 df and five on 154)
POOLED_TERMS = ((1.0, 13.0), (0.154, 154.0), (0.080, 154.0), (0.315, 154.0), (0.080, 154.0),
                (0.267, 154.0))  # fmt: skip


def test_a_sum_of_many_terms_keeps_its_quantile_and_refuses_what_it_cannot_reach(monkeypatch):
    """Six terms against two million draws, run apart (a crash of QUADPACK's Fourier integral
    once killed the study tool); and where the integral's own error estimate exceeds the
    tolerance, the interval refuses rather than being returned unchecked."""
    code = f"from blockbench.judge.uncertainty import half_width; print(half_width({POOLED_TERMS}))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    rng = np.random.default_rng(5)
    draws = sum(s * rng.standard_t(df, 2_000_000) for s, df in POOLED_TERMS)
    assert float(run.stdout) == pytest.approx(np.quantile(draws, 0.975), rel=0.01)
    monkeypatch.setattr(uncertainty, "CDF_TOLERANCE", 1e-30)
    with pytest.raises(ArithmeticError, match="error estimate"):
        uncertainty.half_width(((1.0, 3.0), (0.7, 5.0)))


def test_a_parts_precision_must_be_a_factor_above_one(tmp_path):
    claim = {"id": "X", "slug": "x", "source": "s", "statement": "t"}
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump([{**claim, "parts": [{**ratio_part(), "precision": 0.9}]}]))
    with pytest.raises(
        claim_rules.ClaimConfigError, match=r"precision 0\.9 is not a factor above 1"
    ):
        claim_rules.read_claims(path)


@pytest.mark.parametrize(
    ("extra", "target"),
    [
        ({"article": 18.29, "holds_if": ">= 5"}, 3.658**0.5),  # A1: far less, at least 5x
        ({"article": 2.0, "holds_if": "between 1.4 and 3"}, (2 / 1.4) ** 0.5),  # the nearer end
        ({"article": 194.0, "holds_if": ">= 10"}, claim_rules.COARSEST),  # never coarser
        ({"article": 1.255, "holds_if": "> 1"}, 1.15),  # never finer than the run's
        ({"article": 0.5, "holds_if": "> 1"}, 1.15),  # a figure its own rule refuses
        ({"article": None}, 1.15),  # no figure
        ({"precision": 1.6}, 1.6),  # its own wins
    ],
)
def test_a_ratios_precision_is_sized_to_how_far_its_article_clears_its_rule(extra, target):
    """With the boundary two target half-widths from the article's figure, any value within
    the target of the article's is decided; read from the claim alone, never a measurement."""
    part = as_part(ratio_part(size=100, **extra))
    sized = claim_rules.Precision(1.15)
    assert sized.of(part) == pytest.approx(target, rel=1e-4)
    uniform = claim_rules.Precision(1.15, from_claims=False)
    assert uniform.of(part) == extra.get("precision", 1.15)
    assert claim_rules.Precision(1.25).of(part) >= 1.25  # `precision`: finest
    assert sized.of(as_part({**trend_part(), "article": 2.0, "holds_if": "> 0"})) == 1.15


def test_the_default_claims_targets_are_those_the_config_names():
    """config/README.md quotes three targets; the claims file gives them."""
    claims = claim_rules.read_claims(ROOT / "config/claims/articles")
    of = {(c.id, p.name): claim_rules.Precision(1.15).of(p) for c in claims for p in c.parts}
    assert round(of["A1", "blocked / dispatch"], 2) == 1.91
    assert round(of["C5", "NumPy / JAX CPU (eager)"], 2) == 1.26
    assert round(of["B3", "JAX on JAX data / NumPy (CPU)"], 2) == 1.2
    config = " ".join((ROOT / "config/README.md").read_text().split())  # as reflowed
    for words in ("to x1.91", "to x1.26", "to x1.20"):
        assert words in config


def test_claims_md_says_where_a_runs_measuring_time_went():
    """process_report.time_spent: the first stage, the rounds on demand by block, and the
    time inside timed calls, from the processes' own start and end."""
    stencil = row("loop", 12, workload="stencil", processes=5, block="stencil@12:cpu/loop")
    grad = row("grad", 1000, workload="grad_logistic", processes=1, n=2)
    jobs = [*stencil, *grad]
    for i, job in enumerate(jobs):  # 2 s each, 3 s apart; the lone grad cell 1 s
        job.update(started_at=3.0 * i, finished_at=3.0 * i + (1 if job in grad else 2))
        job.update(first_rounds=3 if job in stencil else 1, loops=2)
        job.update(time_timed=sum(job["samples_s"]) * 2)  # records.timeline.timed_s
    proc = pd.DataFrame(jobs)
    said = process_report.time_spent(proc)
    timed = sum(sum(j["samples_s"]) * 2 for j in jobs)
    assert said == (
        f"Time: 6 worker processes measured for 16 s ({timed:.0f} s of it, {timed / 16:.0%}, "
        "inside timed calls): "
        "the first stage, 4 processes, 7 s; 2 more processes on demand, 4 s: "
        "stencil at 12 (2 processes, 4 s)."
    )
    unrun = {**grad[0], "workload": "selu", "samples_s": None, "loops": None, "status": "failed"}
    unrun["time_timed"] = 0.0
    with_unrun = pd.DataFrame([*jobs, {**unrun, "started_at": 15.0, "finished_at": 15.5}])
    assert process_report.time_spent(with_unrun).startswith("Time: 7 worker processes")
    # a record from before rounds on demand says no first stage (0): all of it is one
    assert process_report.time_spent(proc.assign(first_rounds=0)).endswith(
        "the first stage, 6 processes, 11 s; no claim asked for more rounds."
    )
    first_only = proc[proc["repeat"] < proc["first_rounds"]]
    assert process_report.time_spent(first_only).endswith(
        "the first stage, 4 processes, 7 s; no claim asked for more rounds."
    )


TIMELINE = [
    "job_start",
    "locked",
    "spawned",
    "worker_start",
    "imported",
    "measure",
    "device",
    "provenance",
    "warmed",
    "core_speed",
    "inputs",
    "sampling",
    "sampled",
    "checked",
    "worker_end",
    "worker_exit",
]


def test_the_time_table_sums_each_component_of_every_process_from_its_stamps():
    """process_report.time_table: each component's seconds from the records' own stamps
    (records.timeline), the time between processes from their order, a pause left out."""
    stamps = dict(
        zip(
            TIMELINE,
            [0.0, 0.2, 0.3, 0.4, 0.9, 1.0, 1.05, 1.2, 1.3, 1.4, 1.5, 1.6, 2.6, 2.7, 2.75, 2.8],
            strict=True,
        )
    )
    phases = {"steady": {"samples_s": [0.1, 0.1], "loops": 2}}  # 0.4 s timed
    spans = timeline.components(stamps, timeline.timed_s(phases))
    assert spans["start"] == pytest.approx(0.2)  # job_start -> locked
    assert spans["worker"] == pytest.approx(0.8)  # locked -> measure
    assert spans["timed"] == pytest.approx(0.4) and spans["untimed"] == pytest.approx(0.6)
    assert spans["after"] == pytest.approx(0.2)  # sampled -> worker_exit
    assert sum(spans.values()) == pytest.approx(2.8)  # every second of the process, once
    assert timeline.components({"job_start": 0.0}, 0.0)["worker"] is None  # a stamp missing
    rows = []
    for i, start in enumerate([0.0, 3.0, 100.0]):  # 0.2 s between the first two; then a pause
        columns = {f"time_{k}": v for k, v in spans.items()}
        rows.append({**row("jit", 1000)[0], "repeat": i, "job_start": start, **columns})
        rows[-1]["finished_at"] = start + 2.8
    lines = process_report.time_table(pd.DataFrame(rows))
    cells = {c[0]: c[1:] for c in ([x.strip() for x in r.split("|")[1:-1]] for r in lines[2:-2])}
    assert cells["between two processes: Snakemake, the rounds checkpoint"][0] == "0.2"
    assert cells["timed samples"][0] == "1.2"  # 3 processes x 0.4 s
    assert lines[-1] == "1 pause(s) of more than 60 s between processes left out."


def test_claims_md_names_the_cells_whose_processes_ran_while_hand_offs_were_slow():
    """process_report.handoffs: each process's hand-off (read after its samples); the slow
    ones, over 1.5x the fastest of their own cell's, by cell. A cell whose processes all
    read slow hand-offs (what they ran last left the other core asleep) is none of them."""
    jit = row("loop_jit", 12, workload="stencil", processes=6)
    numpy = row("numpy", 64, processes=4)
    big = row("numpy", 1000, processes=3)
    reads = [30, 31, 55, 58, 30, 32, 47, 46, 49, 75, 22, 23, 24]
    for job, rt in zip([*jit, *numpy, *big], reads, strict=True):
        job["handoff_s"] = rt * 1e-6
    proc = pd.DataFrame([*jit, *numpy, *big])
    assert process_report.handoffs(proc) == (
        "Hand-offs between two cores (a byte to a thread on the other core and back, read in "
        "each process after its samples): 32 µs in the median process of 13, each cell's "
        "fastest 22 to 46 µs (what a process ran last leaves the other core awake or not); "
        "3 over 1.5x their cell's fastest, most in stencil loop_jit at 12 (2 of 6), matmul "
        "numpy at 64 (1 of 4). A call of microseconds measured while it is slow can take "
        "longer (docs/measuring-traps.md)."
    )
    steady = proc.assign(handoff_s=3e-5)
    assert process_report.handoffs(steady).endswith(
        "30 µs in the median process of 13, each cell's fastest 30 µs (what a process "
        "ran last leaves the other core awake or not); no process over 1.5x its cell's fastest."
    )
    alone = pd.DataFrame([*jit[:1], *big[:1]]).assign(handoff_s=[30e-6, 60e-6])
    assert process_report.handoffs(alone).endswith("no process over 1.5x its cell's fastest.")
    # the same cell on a GPU is a cell of its own: its processes' CPU work differs
    gpu = row("loop_jit", 12, workload="stencil", device="gpu", processes=2)
    both = pd.DataFrame([*jit[:2], *gpu]).assign(handoff_s=[30e-6, 31e-6, 60e-6, 62e-6])
    assert process_report.handoffs(both).endswith("no process over 1.5x its cell's fastest.")
    late = pd.DataFrame([*jit[:2], *gpu]).assign(handoff_s=[30e-6, 31e-6, 60e-6, 95e-6])
    assert "most in stencil loop_jit at 12 on gpu (1 of 2)" in process_report.handoffs(late)
    assert process_report.handoffs(proc.assign(handoff_s=None)) == ""  # one core, or old records
    assert process_report.handoffs(proc.drop(columns="handoff_s")) == ""


def test_a_cell_with_rounds_on_demand_has_one_interval_in_its_table_its_claims_and_its_figure():
    """C5's block at 10^6 of `v5-2157` took rounds on demand (first stage 3, up to 12
    rounds). The cell table, the claims' view of a cell and the figure's band must be one
    interval, Stein's: the first stage's spread (by round number) over sqrt(R) on 2 df.
    With a first-stage process lost, a round added after the decision must not enter S1."""
    files = raw_files(DATA / "runs/v5-2157")
    proc = processes(files)
    table = cells(proc)
    label = str(table["run_label"].iloc[0])
    view = run_view.RunView(table, proc, label)
    steady = table[(table["phase"] == "steady") & (table["status"] == "ok")]
    for row in steady.itertuples():
        term = Term(row.device, row.workload, row.impl)
        spread, count = view.time_of([term], row.size)
        assert count > 3 and spread.terms[0][1] == 2.0  # Stein's: the first stage's 2 df
        assert np.exp(spread.interval()) == pytest.approx((row.ci95_low_s, row.ci95_high_s))
        medians = view.processes_of(term, row.size)["median_s"]
        s1 = np.log(medians.loc[[0, 1, 2]]).std(ddof=1) / math.sqrt(len(medians))
        assert spread.terms[0][0] == pytest.approx(s1)
    fig, ax = plt.subplots()
    band = steady.assign(implementation=steady["impl"])
    cell_figures._ci_bands(ax, band, {i: "k" for i in band["implementation"]})
    drawn = sorted(round(y, 12) for c in ax.collections for y in c.get_paths()[0].vertices[:, 1])
    for bound in ("ci95_low_s", "ci95_high_s"):
        assert {round(y, 12) for y in band[bound]} <= set(drawn)
    plt.close(fig)
    lost = proc[~((proc["impl"] == "numpy") & (proc["repeat"] == 1))]
    view = run_view.RunView(cells(lost), lost, label)
    term = Term("cpu", "selu", "numpy")
    spread, count = view.time_of([term], 1_000_000)
    medians = view.processes_of(term, 1_000_000)["median_s"]
    s1 = np.log(medians.loc[[0, 2]]).std(ddof=1) / math.sqrt(count)
    assert spread.terms[0] == pytest.approx((s1, 1.0))


def test_each_verdict_states_its_confidence_from_its_parts():
    """Each part's test is 97.5% one-sided: 'reproduced' needs them all (at least 97.5%),
    'not_reproduced' any one of m (at least 100 - 2.5 m %); checks and undecided verdicts
    rest on no interval and state none."""
    from blockbench.judge.part_result import PartResult
    from blockbench.judge.verdicts import confidence, verdict

    def part(outcome: str, name: str = "a / b") -> PartResult:
        return PartResult(name, outcome, measured=2.0, ci_low=1.5, ci_high=2.5, condition="> 1")

    holding = [part("holds"), part("holds", "c / d")]
    assert verdict(holding)[0] == "reproduced" and confidence("reproduced", holding) == ">=97.5%"
    four = [part("fails"), *(part("holds", f"p{i}") for i in range(3))]
    assert verdict(four)[0] == "not_reproduced"
    assert confidence("not_reproduced", four) == ">=90%, any of 4 parts"
    assert confidence("not_reproduced", four[:1]) == ">=97.5%"
    check = [PartResult("match", "holds", measured=1e-7, condition="every cell passes")]
    assert confidence(verdict(check)[0], check) == ""
    assert confidence("inconclusive", holding) == ""
    # a two-sided rule can refuse a value inside it on either side: 5% in a refutation's
    # bound; a reproduction still errs at most 2.5% a part (it needs the interval inside)
    between = replace(four[0], condition="between 1.4 and 3")
    assert confidence("not_reproduced", [between]) == ">=95%"
    assert confidence("not_reproduced", [between, *four[1:]]) == ">=87.5%, any of 4 parts"
    assert confidence("reproduced", [replace(holding[0], condition="between 1 and 3")]) == ">=97.5%"
    # no bound where the run's intervals may not cover 95%: said why instead
    said = confidence("reproduced", holding, "the cores read as two-speed")
    assert said == "no confidence stated: the cores read as two-speed"


def test_a_confidence_is_stated_only_where_the_runs_intervals_are_supported():
    """A steady host's run, or one a between-run study of enough process values judges,
    states its bound; a run whose cores read as two-speed, or were not read, says why it
    states none, and so does one judged with a study under MIN_PROCESS_VALUES process
    values of a two-speed host (0.90 coverage simulated: docs/statistics.md)."""
    from blockbench.judge.between_runs import StudyPart
    from blockbench.judge.part_result import PartResult
    from blockbench.judge.studies import Kind, Study
    from blockbench.judge.verdicts import unsupported_by
    from blockbench.measure.core_speed import STEADY, TWO_SPEED, UNKNOWN

    def part(study: StudyPart | None) -> PartResult:
        return PartResult("a / b", "holds", 2.0, 1.5, 2.5, run_low=1.6, run_high=2.4, study=study)

    study = Study(Kind("x", 2), [], core_speed=TWO_SPEED)
    big, small = StudyPart((0.0,) * 5, 3.0), StudyPart((0.0, 0.1, 0.2), 3.0)
    assert unsupported_by(STEADY, None, [part(None)]) == ""
    assert unsupported_by(TWO_SPEED, study, [part(big)]) == ""
    assert "read as two-speed" in unsupported_by(TWO_SPEED, None, [part(None)])
    assert "read as two-speed" in unsupported_by(TWO_SPEED, study, [part(big), part(None)])
    assert "not read for speed" in unsupported_by(UNKNOWN, None, [part(None)])
    said = unsupported_by(TWO_SPEED, study, [part(big), part(small)])
    assert said.startswith("judged with a between-run study of under 15 process values")
    steady = Study(Kind("x", 2), [], core_speed=STEADY)
    assert unsupported_by(STEADY, steady, [part(small)]) == ""


def test_a_claims_headline_is_the_part_its_verdict_rests_on():
    """The value a claim's row shows is its deciding part's: the part that fails, the one
    undecided, the one not run, or, of a claim reproduced, the part closest to its rule in
    half-widths of its interval (a ratio on the log scale, an exponent as it is)."""
    from blockbench.judge.part_result import PartResult
    from blockbench.judge.verdicts import headline, verdict

    def part(name, low, high, rule="> 1", scale="log", outcome=None) -> PartResult:
        mid = math.sqrt(low * high) if scale == "log" else (low + high) / 2
        said = outcome or decide(rule, low, high)
        return PartResult(name, said, mid, low, high, condition=rule, scale=scale)

    far, near = part("far", 50.0, 200.0), part("near", 1.2, 1.5)
    failing = part("fails", 0.16, 0.28)
    assert headline(verdict([far, failing])[0], [far, failing]).name == "fails"
    assert headline(verdict([far, near])[0], [far, near]).name == "near"
    # an exponent 0.2 [0.1, 0.3] against > 0 lies one half-width inside; near, 1.6 of its
    assert headline("reproduced", [near, part("grows", 0.1, 0.3, "> 0", "linear")]).name == "grows"
    undecided = part("open", 0.9, 1.4)
    assert headline(verdict([far, undecided])[0], [far, undecided]).name == "open"
    gone = PartResult("gpu", "not_run", condition="> 1")
    assert headline(verdict([far, gone])[0], [far, gone]).name == "gpu"
    check = PartResult("match", "holds", 1e-7, condition="every cell passes")
    assert headline("reproduced", [check, far]).name == "far"


def test_the_references_verdicts_show_the_part_they_rest_on_and_its_95_percent_ci():
    """The Xeon reference (results/reference/xeon-m207-2cpu/run): D1 is refuted by convolve /
    scan, which its row shows (not loop / convolve, which holds); A1, decided at its second
    look at 97.5%, shows its 95% CI and names the 97.5% interval it was decided on; a
    refutation's confidence reads once in parentheses; C3 quotes the article's NumPy time
    once."""
    files = raw_files(ROOT / "results/reference/xeon-m207-2cpu/run/raw/p3-r1")
    proc = processes(files)
    claims = claim_rules.read_claims(ROOT / "config/claims/articles")
    table, parts = verdicts.judge(cells(proc), proc, claims)
    rows = table.set_index("claim_id")
    d1, a1 = rows.loc["D1"], rows.loc["A1"]
    assert (d1["verdict"], d1["metric"]) == ("not_reproduced", "convolve / scan")
    assert d1["measured"] == pytest.approx(0.2108, abs=1e-4)
    assert d1["decided_low"] < d1["ci_low"] < d1["measured"] < d1["ci_high"] < d1["decided_high"]
    assert d1["confidence"] == ">=95%, any of 2 parts"
    # A1: its 95% CI from its standard error (run_spread), and the 97.5% one it was decided on
    own = uncertainty.Spread.from_text(math.log(a1["measured"]), a1["run_spread"])
    assert (a1["ci_low"], a1["ci_high"]) == pytest.approx(np.exp(own.interval()), rel=1e-9)
    assert (a1["decided_low"], a1["decided_high"]) == pytest.approx(
        np.exp(own.interval(0.975)), rel=1e-9
    )
    markdown = claims_report.to_markdown(table, parts, claims)
    shown = verdicts.value_ci(a1["measured"], a1["decided_low"], a1["decided_high"])
    assert f"holds, on its 97.5% interval {shown}" in markdown
    assert "**not_reproduced** (>=95%, any of 2 parts)" in markdown and "parts))" not in markdown
    d1_row = next(x for x in markdown.splitlines() if x.startswith("| D1 "))
    assert "convolve / scan (> 1)" in d1_row
    assert verdicts.value_ci(d1["measured"], d1["ci_low"], d1["ci_high"]) in d1_row
    assert "NumPy 1.61 s; NumPy 1.61 s" not in markdown


def test_runs_whose_verdicts_rest_on_different_parts_are_set_side_by_side():
    """Two runs of one claim whose headlines are other parts (one holds loop / convolve, the
    other fails convolve / scan): `blockbench compare` and `other_runs` name each value's
    part, and neither pools them nor holds one part's value against the other's CI."""
    same = {"claim_id": "D1", "machine": "xeon", "jax_version": "0.4", "scale": "log"}
    same |= {"condition": "> 1", "processes": 3.0}
    a = {"run_label": "a", "verdict": "reproduced", "metric": "loop / convolve"}
    a |= {"measured": 108.0, "ci_low": 60.9, "ci_high": 192.0, "run_spread": "0.13:2"}
    b = {"run_label": "b", "verdict": "not_reproduced", "metric": "convolve / scan"}
    b |= {"measured": 0.211, "ci_low": 0.174, "ci_high": 0.255, "run_spread": "0.044:2"}
    table = pd.DataFrame([{**same, **a}, {**same, **b}])
    notes = run_comparison.disagreements(table)
    said = "run b on the same hardware measured convolve / scan 0.211 [0.174, 0.255]"
    assert notes[0] == f"{said} (not_reproduced)"
    lines = run_comparison.comparison(table)
    assert "reproduced: loop / convolve 108 [60.9, 192]" in lines[2]
    assert "rest on different parts" in lines[2]
    assert lines[-1] == "run pairs (a, b) where a's CI covers b's value: 0 of 0"


def test_every_kind_of_part_the_parser_knows_has_one_evaluator():
    """The kinds are listed once, in judge/claim.py; the evaluators are keyed by them."""
    assert list(part_evaluators.EVALUATORS) == list(KINDS)
