"""The measurement core measures what it claims: blocked, phase by phase, without leaks."""

import weakref
from dataclasses import replace

import jax
import numpy as np
import pytest
from tiny import module_of

from blockbench.measure import cell, cores, harness, sampling
from blockbench.records.params import CellSpec, MeasureParams
from blockbench.records.spec import PHASES, StopRule
from blockbench.workloads import registry, selu

FAST = StopRule(min_samples=5, min_time_s=0.02, max_time_s=0.15)


def measure(workload: str, impl: str, size: int) -> dict:
    return cell.measure(
        CellSpec("cpu", workload, impl, size, MeasureParams(rule=FAST)), lambda partial: None
    )


def test_blocking_is_real_steady_includes_compute_dispatch_does_not():
    record = measure("matmul", "jax_jit", 1000)
    assert record["status"] == "ok", record["reason"]
    steady, dispatch = record["phases"]["steady"], record["phases"]["dispatch"]
    # 2 GFLOP. A core with two 512-bit FMA units (Zen 5, Sapphire Rapids) peaks at 64 float32
    # flops a cycle, about 380 GFLOP/s at 6 GHz; a Zen 5 VM did 211 a core, so the bound is
    # 1 TFLOP/s a core: far above any CPU, far below what an unblocked call (~50 us) would show
    assert steady["median_s"] >= 2e9 / (1e12 * len(cores.allowed()))
    assert dispatch["median_s"] < steady["median_s"] / 10


def test_a_harness_that_stops_blocking_is_caught(monkeypatch):
    """With blocking patched out, the steady timer would report dispatch times; the harness
    must notice the result was not ready and refuse to report a number."""
    monkeypatch.setattr(
        harness,
        "output_of",
        lambda call, args, example=None: harness.Output(lambda out: out, lambda o: o),
    )
    record = measure("matmul", "jax_jit", 1000)
    assert record["status"] == "error"
    assert "before the result was ready" in record["reason"]
    assert "steady" not in record["phases"]


def test_compile_is_separate_from_steady():
    record = measure("selu", "jax_jit", 10_000)
    phases = record["phases"]
    assert list(phases) == list(PHASES)  # every phase, measured in order
    assert phases["compile"]["median_s"] > 10 * phases["steady"]["median_s"]
    # a first call pays tracing and compiling again (the caches are emptied before each)
    assert phases["first_call"]["median_s"] > 0.5 * phases["compile"]["median_s"]


def test_each_compile_sample_is_a_real_compile_not_a_cache_hit():
    phases = measure("selu", "jax_jit", 1000)["phases"]
    samples = phases["compile"]["samples_s"]
    assert len(samples) >= 2 and min(samples) > 0.2 * max(samples)


def test_warm_up_happens_before_anything_is_timed(monkeypatch):
    events: list[str] = []
    real_warm_up, real_start = harness.warm_up, sampling.Window.start
    monkeypatch.setattr(harness, "warm_up", lambda dev: (events.append("warm"), real_warm_up(dev)))
    monkeypatch.setattr(
        sampling.Window, "start", lambda self: (events.append("timed"), real_start(self))
    )
    measure("selu", "jax_jit", 100)
    assert events[0] == "warm" and "timed" in events


def test_dispatch_takes_30_single_call_samples_each_with_the_kernels_account():
    """A microsecond phase with a slow mode needs its distribution, not a loop's average:
    one call per sample, at least 30 per process, whatever the cell's min_samples."""
    record = measure("dot_xx", "jax", 200)
    dispatch = record["phases"]["dispatch"]
    assert dispatch["loops"] == 1 and dispatch["floor"] == cell.SINGLE_CALL_SAMPLES
    assert dispatch["n_all"] >= cell.SINGLE_CALL_SAMPLES
    assert dispatch["slow_mode"] is not None and 0 <= dispatch["slow_mode"]["fraction"] <= 1
    if record["provenance"]["sampling"]["kernel_counters"]:
        causes = dispatch["disturbance"]["cause"]
        assert len(causes) == dispatch["n_all"]
        clean = [s for s, c in zip(dispatch["samples_s"], causes, strict=True) if c != "outside"]
        if dispatch["kept"] == "undisturbed":
            assert dispatch["n"] == len(clean)
            assert dispatch["median_s"] == pytest.approx(float(np.median(clean)))
    # the clock's own cost is measured and taken out of every timed region
    assert 0 < record["provenance"]["sampling"]["timer_cost_s"] < 1e-5
    # and every phase says how many page faults its calls took: at most a few times the
    # output's 40 pages, whether or not this host's malloc hands the output back each call
    for name in ("dispatch", "steady", "asarray"):
        assert 0 <= record["phases"][name]["faults_per_call"] < 4 * 200 * 200 * 4 / 4096


@pytest.mark.parametrize("phase", ["steady", "dispatch"])
def test_each_result_is_dropped_before_the_next_call(phase):
    """As `%timeit f(x).block_until_ready()` drops it: a result kept alive while the next call
    runs makes the allocator hold two outputs, and glibc may then fault each new one in."""
    alive: weakref.WeakSet = weakref.WeakSet()
    seen: list[int] = []

    class Result:
        pass

    def call() -> Result:
        seen.append(len(alive))
        out = Result()
        alive.add(out)
        return out

    run = getattr(harness, phase)(call, (), lambda out: out)
    run(5, sampling.Window())
    assert seen == [0] * 5


def test_only_a_processs_first_warm_phases_warm_up_for_warmup_s():
    rule = StopRule(warmup=1, warmup_s=0.1)
    assert cell.warm_rule(rule, warmed_by_check=False, settled=False) == rule
    assert cell.warm_rule(rule, warmed_by_check=False, settled=True).warmup_s == 0
    by_check = cell.warm_rule(rule, warmed_by_check=True, settled=False)
    assert by_check.warmup == 0 and sampling.Sampler(lambda n, w: None, by_check).warms_for == 0
    # a steady-only cell's check call is its warm-up only if it lasted warmup_s
    assert cell.warms_fully(0.1, rule) and not cell.warms_fully(0.099, rule)


def test_one_array_output_waits_through_the_arrays_own_method():
    """The timed loops wait the cheapest correct way; only pytrees walk the tree."""
    x = jax.numpy.ones(4)
    single = harness.output_of(jax.jit(lambda v: v * 2), (x,))
    assert single.wait is type(x).block_until_ready
    pair = harness.output_of(jax.jit(lambda v: (v, v + 1)), (x,))
    assert pair.wait is harness.block

    # a computed output (the check's) decides alike, and the call is never traced again
    def untraceable(v):
        raise AssertionError("traced")

    assert harness.output_of(untraceable, (x,), example=x * 2).wait is single.wait
    assert harness.output_of(untraceable, (x,), example=(x, x)).wait is harness.block
    assert [float(a[0]) for a in pair.to_host(pair.wait(jax.jit(lambda v: (v, v + 1))(x)))] == [
        1.0,
        2.0,
    ]


def test_jitted_calls_refuse_host_to_device_copies_but_may_read_back():
    """The guard proves the steady loop copies nothing to the device; reading results back
    (np.asarray, jax.device_get) is what the asarray and device_to_host phases measure, and
    on a GPU a guard on every direction would turn those phases into errors."""
    jit = registry.impls_of("selu")["jax_jit"]
    with harness.no_implicit_transfers(jit):
        assert jax.config.jax_transfer_guard_host_to_device == "disallow"
        assert jax.config.jax_transfer_guard_device_to_host in (None, "allow")
        assert jax.config.jax_transfer_guard in (None, "allow")
        with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
            jax.jit(lambda v: v + 1)(np.ones(3, np.float32))


def test_phase_plans_match_the_registry_and_the_selection():
    dev = jax.devices("cpu")[0]
    host = registry.WORKLOADS["selu"].make_inputs(8, np.random.default_rng(0))
    for impl in registry.IMPLS:
        if impl.workload == "selu":
            names = [p.name for p in cell.phase_plan(impl, dev, host)]
            assert tuple(names) == registry.STYLE_PHASES[impl.style]
    jit = registry.impls_of("selu")["jax_jit"]
    chosen = cell.phase_plan(jit, dev, host, ("steady", "compile"))
    assert [p.name for p in chosen] == ["compile", "steady"]  # in the harness's order


def test_a_cell_measures_only_the_phases_asked_for():
    # a cap that lets each phase reach its floor of samples on a loaded host too (the
    # suite runs beside end-to-end runs); a quiet one stops far sooner
    rule = replace(FAST, max_time_s=1.0)
    spec = CellSpec(
        "cpu", "selu", "jax", 1000, MeasureParams(rule=rule, phases=("steady", "asarray"))
    )
    record = cell.measure(spec, lambda partial: None)
    assert record["status"] == "ok" and list(record["phases"]) == ["steady", "asarray"]
    assert all(p["n"] >= rule.min_samples for p in record["phases"].values())


def test_numpy_cells_have_first_call_and_steady_only_and_never_start_xlas_compiler(
    monkeypatch,
):
    warmed: list[object] = []
    monkeypatch.setattr(harness, "warm_up", warmed.append)
    record = measure("selu", "numpy", 1000)
    assert set(record["phases"]) == {"first_call", "steady"}
    assert record["phases"]["first_call"]["n"] == 1
    assert warmed == []


def test_a_wrong_result_is_a_status_not_a_silent_timing(monkeypatch):
    workload = registry.WORKLOADS["selu"]
    broken = [
        replace(i, fn=lambda x: selu.numpy_selu(x) * 1.01) if i.name == "numpy" else i
        for i in workload.impls
    ]
    monkeypatch.setitem(registry.WORKLOADS, "selu", replace(workload, impls=tuple(broken)))
    record = measure("selu", "numpy", 1000)
    assert record["status"] == "wrong_result"
    assert not record["check"]["passed"]
    assert "tolerance" in record["reason"]


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (MemoryError("Unable to allocate 3.2 TiB"), "oom"),
        (RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate"), "oom"),
        (ValueError("shapes do not match"), "error"),
    ],
)
def test_failures_are_classified(exc, status):
    assert cell.classify(exc) == status


def test_an_eager_function_whose_control_flow_reads_its_values_still_learns_its_output():
    """The JIT page's loop (`while i < n`) and jax#968's (`range(int(n))`) cannot be traced
    abstractly; one real call, untimed, gives the shape instead."""
    jit_in_loop, split_loop = module_of("jit_in_loop"), module_of("split_loop")

    single = harness.output_of(jax.jit(lambda v: v * 2), (jax.numpy.ones(4),))
    x, n = jax.device_put(jit_in_loop.make_inputs(3, None))
    assert harness.output_of(jit_in_loop.inner_jitted_normal, (x, n)).wait is single.wait
    (turns,) = jax.device_put(split_loop.make_inputs(2, None))
    assert harness.output_of(split_loop.jax_loop, (turns,)).wait is single.wait
