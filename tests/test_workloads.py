"""Every implementation computes the right thing (the float64 reference), at small sizes."""

from dataclasses import replace

import jax
import numpy as np
import pytest
from tiny import every_workload

from blockbench.measure import harness
from blockbench.workloads import grad_logistic, registry, stencil
from blockbench.workloads.declare import Workload
from blockbench.workloads.registry import lookup

WORKLOADS = every_workload()  # blockbench's own and its catalogs'
# Sizes small enough to check every implementation quickly; a workload not named here (one
# of your own) is checked at the first size from 16 up that it declares valid (small_size).
SMALL = {"dot_xx": 24, "matmul": 24, "selu": 1000, "stencil": 8, "grad_logistic": 100}


def small_size(w: Workload) -> int:
    """SMALL's size, else the first from 16 up that `w.validate_size` accepts: a workload
    whose sizes leave 16 out is checked with no edit of this file (docs/adding-a-workload.md)."""
    if w.name in SMALL:
        return SMALL[w.name]
    for size in range(16, 100_000):
        try:
            w.validate_size(size)
        except ValueError:
            continue
        return size
    raise ValueError(f"workload {w.name!r} takes no size from 16 to 99999: name one in SMALL")


def run_impl(workload: str, impl: str, size: int) -> tuple[tuple, np.ndarray]:
    w, entry = lookup("cpu", workload, impl, size)
    host = w.make_inputs(size, np.random.default_rng(3))
    args = host if entry.style == "numpy" or entry.host_inputs else jax.device_put(host)
    return host, np.asarray(harness.block(harness.jitted(entry)(*args)))


@pytest.mark.parametrize("entry", registry.IMPLS, ids=lambda i: f"{i.workload}-{i.name}")
def test_every_implementation_matches_the_float64_reference(entry):
    w = WORKLOADS[entry.workload]
    host, out = run_impl(entry.workload, entry.name, small_size(w))
    assert out.dtype == np.dtype(w.dtype)
    assert w.check(host, out) <= w.tolerance


def test_a_workload_that_cannot_take_16_is_checked_at_its_first_valid_size():
    """A workload of one's own whose sizes are multiples of 10 is checked at 20; one that
    takes 16 at 16."""

    def tens(size: int) -> None:
        if size % 10:
            raise ValueError(f"size must be a multiple of 10, got {size}")

    selu = WORKLOADS["selu"]
    mine = replace(selu, name="mine", validate_size=tens)
    assert small_size(mine) == 20
    assert small_size(replace(selu, name="mine_too")) == 16


def test_the_check_catches_a_wrong_result():
    w = WORKLOADS["selu"]
    host, out = run_impl("selu", "numpy", 1000)
    assert w.check(host, out * 1.01) > w.tolerance


def test_the_three_stencil_implementations_agree():
    outs = [run_impl("stencil", name, 12)[1] for name in ("loop", "convolve", "scan")]
    for other in outs[1:]:
        np.testing.assert_allclose(outs[0], other, rtol=1e-5, atol=1e-6)
    # rows 0 and height-1 of the new columns stay 0; column 0 is 1
    assert np.all(outs[0][[0, -1], 1:] == 0) and np.all(outs[0][:, 0] == 1)


def test_stencil_reference_follows_the_question_literally():
    w = np.random.default_rng(0).standard_normal((6, 3))
    a = np.zeros((6, 4))
    a[:, 0] = 1
    for j in range(3):
        for i in range(1, 5):
            a[i, j + 1] = a[i - 1, j] * w[i - 1, j] + a[i, j] * w[i, j] + a[i + 1, j] * w[i + 1, j]
    np.testing.assert_allclose(stencil.reference(w), a)


@pytest.mark.parametrize("impl", ["grad", "grad_jit"])
def test_grad_logistic_gives_the_articles_values(impl):
    workload, entry = lookup("cpu", "grad_logistic", impl, 3)
    (x,) = workload.known_values.input_arrays()
    assert x.dtype == np.float32 and x.tolist() == list(grad_logistic.KNOWN_INPUT)
    got = np.asarray(harness.jitted(entry)(jax.device_put(x)))
    np.testing.assert_allclose(got, [0.25, 0.19661197, 0.10499357], atol=1e-6)


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (("cpu", "nope", "jax", 10), "no workload 'nope'"),
        (("cpu", "matmul", "nope", 10), "matmul has no impl 'nope'"),
        (("gpu", "matmul", "numpy", 10), "matmul/numpy does not run on gpu"),
        (("cpu", "stencil", "scan", 7), "even and >= 4"),
        (("cpu", "selu", "jax", 0), "size must be >= 1"),
    ],
)
def test_bad_cells_are_rejected_with_the_reason(cell, message):
    with pytest.raises(ValueError, match=message):
        lookup(*cell)


def test_source_a_times_dot_of_x_with_itself_on_uniform_data():
    """Source A's exact operation: jnp.dot(x, x) on random.uniform data, no transpose."""
    host, out = run_impl("dot_xx", "jax", 16)
    (x,) = host
    assert x.min() >= 0 and x.max() < 1
    np.testing.assert_allclose(out, x.astype(np.float64) @ x, rtol=1e-5)
    assert not np.allclose(out, x.astype(np.float64) @ x.T, rtol=1e-3)


def test_the_literal_loop_sets_column_zero_with_a_scalar_loop():
    """Source D's loop starts with a scalar loop over rows; the jitted program unrolls it."""
    w = np.ones((6, 3), np.float32)
    jaxpr = jax.make_jaxpr(stencil.loop)(w)
    scatters = [e for e in jaxpr.eqns if e.primitive.name == "scatter"]
    assert len(scatters) == 6 + (6 - 2) * 3  # first column, then the recurrence
    assert stencil.work(6) == len(scatters)


def test_a_workload_whose_tolerance_no_record_could_hold_is_refused_where_declared():
    """A record's schema asks a positive check tolerance: a zero one would fail every cell's
    record at write time, after its measuring."""
    from blockbench.workloads.declare import Impl, Workload

    with pytest.raises(ValueError, match=r"tolerance 0\.0 is not > 0"):
        Workload("w", "n", lambda n, rng: (), lambda i, o: 0.0, 0.0, float, "a",
                 impls=(Impl("a", "numpy", abs),))  # fmt: skip
