"""Claim verdicts from synthetic measurements whose answer is known."""

from pathlib import Path

import pandas as pd
import pytest

from blockbench import claims
from blockbench.aggregate import measurements, raw_files, speedups
from blockbench.registry import WORKLOADS

ROOT = Path(__file__).resolve().parents[1]


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
):
    return {
        "run_label": run_label,
        "device": device,
        "workload": workload,
        "impl": impl,
        "size": size,
        "phase": phase,
        "median_s": median,
        "status": status,
        "reason": reason,
        "device_model": f"{device}-model",
        "check_passed": check_passed,
        "max_rel_err": 1e-7,
        "work": WORKLOADS[workload].work(size),
    }


def ratio_part(**extra):
    return {
        "name": "jax / numpy",
        "num": {"device": "cpu", "workload": "matmul", "impl": "jax"},
        "den": {"device": "cpu", "workload": "matmul", "impl": "numpy"},
        "holds_if": "> 1.5",
        "article": 2.0,
        **extra,
    }


def judge(rows, *parts):
    df = pd.DataFrame(rows)
    claim = {
        "id": "X1",
        "slug": "x",
        "source": "s",
        "statement": "t",
        "article": "a",
        "parts": list(parts),
    }
    return claims.evaluate(df, [claim]).iloc[0]


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
    assert claims.condition_holds(condition, value) is holds


def test_an_unreadable_condition_is_refused():
    with pytest.raises(claims.ClaimConfigError):
        claims.condition_holds("about 2", 2.0)


def test_ratio_at_the_preferred_size_or_the_largest_with_a_note():
    rows = [
        row("numpy", 100, median=1.0),
        row("jax", 100, median=2.0),
        row("numpy", 200, median=1.0),
        row("jax", 200, median=1.2),
    ]
    at_100 = judge(rows, ratio_part(size={"prefer": 100}))
    assert at_100["verdict"] == "reproduced" and at_100["measured"] == 2.0
    fallback = judge(rows, ratio_part(size={"prefer": 5000}))
    assert fallback["verdict"] == "not_reproduced" and fallback["size"] == 200
    assert "the article used 5000" in fallback["parts"]


def test_summed_terms():
    rows = [
        row("numpy", 10, median=1.0),
        row("jax", 10, median=1.0),
        row("jax", 10, phase="device_to_host", median=0.5),
    ]
    part = ratio_part(
        num=[
            {"device": "cpu", "workload": "matmul", "impl": "jax"},
            {"device": "cpu", "workload": "matmul", "impl": "jax", "phase": "device_to_host"},
        ]
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
    gpu = ratio_part(num={"device": "gpu", "workload": "matmul", "impl": "jax"})
    result = judge(rows, gpu)
    assert result["verdict"] == "not_run" and "no gpu device" in result["note"]
    absent = ratio_part(num={"device": "tpu", "workload": "matmul", "impl": "jax"})
    assert "tpu not in this run" in judge(rows, absent)["note"]
    failing = ratio_part(num={"device": "cpu", "workload": "matmul", "impl": "numpy"})
    assert judge(rows, failing, gpu)["verdict"] == "not_reproduced"


def test_trend_and_growth():
    sizes = [10, 20, 40, 80]
    rows = [row("numpy", s, median=s * 1.0) for s in sizes]
    rows += [row("jax", s, median=10.0) for s in sizes]  # speedup numpy/jax grows with size
    trend = {
        "name": "grows",
        "kind": "trend",
        "holds_if": "> 1.5",
        "min_rho": 0.9,
        "num": {"device": "cpu", "workload": "matmul", "impl": "numpy"},
        "den": {"device": "cpu", "workload": "matmul", "impl": "jax"},
    }
    result = judge(rows, trend)
    assert result["verdict"] == "reproduced" and result["measured"] == pytest.approx(8.0)
    quadratic = [
        row("jit", s, phase="compile", median=1e-9 * WORKLOADS["matmul"].work(s) ** 2)
        for s in sizes
    ]
    growth = {
        "name": "slope",
        "kind": "growth",
        "holds_if": "between 1.9 and 2.1",
        "of": {"device": "cpu", "workload": "matmul", "impl": "jit", "phase": "compile"},
    }
    assert judge(quadratic, growth)["measured"] == pytest.approx(2.0)


def test_check_part_fails_on_a_wrong_result():
    rows = [
        row("grad", 10, workload="grad_logistic"),
        row("grad_jit", 10, workload="grad_logistic", check_passed=False, status="wrong_result"),
    ]
    part = {
        "name": "values",
        "kind": "check",
        "cells": {"device": "cpu", "workload": "grad_logistic", "impls": ["grad", "grad_jit"]},
    }
    assert judge(rows, part)["verdict"] == "not_reproduced"


def test_the_claims_file_covers_every_article_claim():
    ids = {c["id"] for c in claims.load(ROOT / "config/claims.yaml")}
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
    df = measurements(raw_files(ROOT / "results/reference/dev-2core-xeon/raw"))
    sp = speedups(df)
    numpy_rows = sp[(sp["workload"] == "matmul") & (sp["impl"] == "numpy")]
    assert (numpy_rows["speedup"] == 1.0).all()
