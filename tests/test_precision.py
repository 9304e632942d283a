"""Float32 means float32: every workload whose float32 products may run on a GPU measures the
precision they ran in, or says why it cannot; the probe tells float32 from TF32; and a part
is judged only on products that ran in float32."""

import shutil
from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest
from jax.extend.core import Primitive
from tiny import every_workload, module_of

from blockbench.judge import aggregate, verdicts
from blockbench.judge.claim_rules import claims_files, read_claims
from blockbench.records import layout
from blockbench.records.store import read_json, write_json_atomic
from blockbench.workloads import matmul

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = every_workload()  # blockbench's own and its catalogs'
centered_gram = module_of("centered_gram")  # the jax-docs catalog's

# The primitives XLA may run in TF32 on a GPU at the `default` precision
PRODUCTS = {"dot_general", "conv_general_dilated"}
# Sizes the workloads accept, small enough for a test (stencil's: even and >= 4)
SIZE = 8


def products_bound(fn, args) -> set[str]:
    """The dtypes of the product primitives one call binds, traced afresh (jit's cache
    cleared), eager and jit alike: read off the call, not off its source."""
    seen, bind = set(), Primitive.bind

    def spy(self, *operands, **params):
        if self.name in PRODUCTS:
            seen.add(str(operands[0].dtype))
        return bind(self, *operands, **params)

    jax.clear_caches()
    Primitive.bind = spy
    try:
        jax.block_until_ready(fn(*args))
    finally:
        Primitive.bind = bind
    return seen


def on_a_device(workload) -> list:
    return [i for i in workload.impls if set(i.devices) - {"cpu"}]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_a_float32_product_on_a_device_has_its_precision_measured_or_says_why_not(name):
    workload = WORKLOADS[name]
    inputs = workload.make_inputs(SIZE, np.random.default_rng(0))
    float32 = set()
    for impl in on_a_device(workload):
        args = inputs if impl.host_inputs else tuple(jax.device_put(x) for x in inputs)
        float32 |= products_bound(impl.fn, args) & {"float32"}
    if float32:
        assert workload.precision is not None or workload.unprobed, name
    else:
        assert not workload.unprobed, f"{name} says why it has no probe, but has no product"


def test_the_spy_sees_a_product_eager_and_under_jit():
    x = jax.numpy.ones((4, 4))
    assert products_bound(lambda y: y @ y, (x,)) == {"float32"}
    assert products_bound(jax.jit(lambda y: y @ y), (x,)) == {"float32"}
    assert products_bound(lambda y: y + y, (x,)) == set()


def as_tf32(x: np.ndarray) -> np.ndarray:
    """`x` rounded to TF32's 10-bit mantissa (to nearest), as a GPU's tensor cores read it."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & ~np.uint64(0x1FFF)).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize(
    ("workload", "product", "size"),
    [
        (matmul, lambda x, r: r(x) @ r(x).T, 500),
        (centered_gram, lambda x, r: r(x).T @ r(x - x.mean(axis=0)), 500),
    ],
)
def test_the_probe_tells_float32_from_tf32(workload, product, size):
    (x,) = workload.make_inputs(size, np.random.default_rng(0))
    exact = workload.precision((x,), product(x, lambda a: a))
    tf32 = workload.precision((x,), product(x, as_tf32))
    assert exact["matmul_precision_measured"] == matmul.FLOAT32, exact
    assert tf32["matmul_precision_measured"] == matmul.BELOW_FLOAT32, tf32


def test_the_probe_reads_jaxs_own_float32_product_as_float32():
    (x,) = centered_gram.make_inputs(256, np.random.default_rng(1))
    out = jax.jit(centered_gram.f)(jax.device_put(x))
    assert centered_gram.precision((x,), out)["matmul_precision_measured"] == matmul.FLOAT32


def judged(raw: Path) -> pd.DataFrame:
    """The articles' claims judged on one raw folder: the parts table the claims stage makes."""
    proc = aggregate.processes(layout.raw_files(raw))
    claims = read_claims(claims_files([ROOT / "config/claims/articles"]))
    _, parts = verdicts.judge(aggregate.cells(proc), proc, claims)
    return parts.set_index(["claim_id", "part"])


def test_a_gpu_product_measured_below_float32_leaves_its_part_unjudged(tmp_path):
    """The H200 reference's B1 holds on float32 products; the same records with the GPU's
    products read as TF32 (a grid at `default` precision on an Ampere or newer GPU) leave
    B1 not run, the measured precision its reason."""
    raw = tmp_path / "gpu-quick"
    shutil.copytree(ROOT / "results/reference/h200-gpu-quick/run/raw/gpu-quick", raw)
    b1 = judged(raw).loc["B1"].iloc[0]
    assert b1["outcome"] == "holds" and "float32 products (measured)" in b1["device_model"]
    for record in (raw / "gpu/matmul/jax").rglob("*.json"):
        data = read_json(record)
        data["check"]["matmul_precision_measured"] = matmul.BELOW_FLOAT32
        write_json_atomic(record, data)
    after = judged(raw).loc["B1"].iloc[0]
    assert after["outcome"] == "not_run"
    assert f"multiplied in {matmul.BELOW_FLOAT32}, not float32" in after["detail"], after["detail"]
