"""Measuring one grid cell inside the worker process: phases, correctness, status.

The outcome of a cell is always a record, never an exception: a missing device, an
out-of-memory, a wrong result or a crash inside JAX are results a reader must see.
"""

import re
import time
import traceback
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np

from blockbench.measure import core_speed, cores, harness, jax_compat, provenance
from blockbench.measure.disturbance import Probe
from blockbench.measure.phase_record import phase_record, warnings
from blockbench.measure.safe_read import safe
from blockbench.measure.sampling import (
    TIMER_COST_S,
    PhaseRun,
    Sampler,
    empty_sample_s,
    in_turn,
)
from blockbench.records.params import CellSpec
from blockbench.records.spec import SINGLE_CALL_SAMPLES, StopRule
from blockbench.workloads.declare import deferred
from blockbench.workloads.registry import Impl, Workload, lookup

# Loaded by a JAX cell only: a NumPy cell's worker never imports JAX.
jax = deferred("jax")

# Out-of-memory as XLA, CUDA, cuBLAS and cuDNN word it: whole words, so that "room" or
# "zoom" in a message is no out-of-memory.
OOM_PATTERN = re.compile(
    r"\b(resource_exhausted|out[ _]of[ _]memory|unable to allocate|oom"
    r"|cublas_status_alloc_failed|cudnn_status_alloc_failed|cuda_error_out_of_memory)\b"
)


class Unavailable(Exception):
    """The requested device is not present in this process."""


def resolve_device(name: str) -> Any:
    """The first device of the platform, or Unavailable with JAX's own reason: a backend
    that failed to start (an old driver, a missing plugin) raises its error here. Under the
    test-only fake GPU (provenance.FAKE_GPU) a GPU cell gets the CPU device."""
    if provenance.fake_gpu(name):
        return jax.devices("cpu")[0]
    try:
        return jax.devices(name)[0]
    except RuntimeError as exc:
        try:
            seen = ", ".join(provenance.describe_device(d) for d in jax.devices())
        except RuntimeError:
            raise Unavailable(f"no {name} device: {exc}") from exc
        raise Unavailable(f"no {name} device: JAX sees only {seen} ({exc})") from exc


def classify(exc: BaseException) -> str:
    """`oom` for any flavour of out-of-memory (host MemoryError, XLA RESOURCE_EXHAUSTED, a
    cuBLAS or cuDNN allocation failure)."""
    text = f"{type(exc).__name__} {exc}".lower()
    if isinstance(exc, MemoryError) or OOM_PATTERN.search(text):
        return "oom"
    return "error"


def warm_rule(
    rule: StopRule, warmed_by_check: bool, settled: bool, ramps: bool = False
) -> StopRule:
    """A phase's warm-up: none after a check's call that warmed it (`warmed_by_check`); its
    count alone once an earlier phase of the process warmed for `warmup_s`, since what
    settles then (XLA's pool threads finding their cores) is the process's, not the phase's.
    An accelerator's repeated-call phase (`ramps`) warms for `accelerator_warmup_s` of its
    own calls whatever came before: the device's clocks rise only under load (tens to
    hundreds of ms), and the copies, compiles or cold check call before it leave it idle."""
    if ramps:
        return replace(rule, warmup_s=rule.accelerator_warmup_s)
    if warmed_by_check:
        return replace(rule, warmup=0)
    return replace(rule, warmup_s=0.0) if settled else rule


def warms_fully(check_call_s: float, rule: StopRule, device: str = "cpu") -> bool:
    """Whether a steady-only cell's check call is its whole warm-up: a call of `warmup_s` or
    more (the 5000 matmul, the 64x32 loop) is, and is not made twice for one purpose; a
    shorter one (a jit SELU at 10^3, 5 us once compiled) settles nothing of the process, and
    the phase warms for `warmup_s` as a process's first phase does. On an accelerator never:
    its check call is the program's first, a cold compile that leaves the device idle."""
    return device == "cpu" and check_call_s >= rule.warmup_s


def check_record(workload: Workload, impl: Impl, host_args: tuple, out: Any, dev: Any) -> dict:
    """Compare the measured function's own output with the float64 reference; a float32
    matmul's also says which precision its error shows (`matmul_precision_measured`)."""
    got = np.asarray(out if dev is None else jax.device_get(out))
    err = workload.check(host_args, got)
    record: dict[str, Any] = {
        "max_rel_err": err,
        "tolerance": workload.tolerance,
        "passed": bool(err <= workload.tolerance),
    }
    if workload.precision is not None:
        record |= workload.precision(host_args, got)
    kv = workload.known_values
    if kv is not None:
        inputs = kv.input_arrays()
        args = inputs if impl.host_inputs else jax.device_put(inputs, dev)
        with jax.default_device(dev):
            got = np.asarray(jax.device_get(harness.jitted(impl)(*args)), dtype=np.float64)
        max_abs = float(np.max(np.abs(got - np.asarray(kv.expected))))
        record["known_values"] = {
            "inputs": [a.tolist() for a in inputs],
            "expected": list(kv.expected),
            "got": got.tolist(),
            "max_abs_err": max_abs,
            "atol": kv.atol,
            "passed": bool(max_abs <= kv.atol),
        }
        record["passed"] = record["passed"] and record["known_values"]["passed"]
    return record


@dataclass(frozen=True)
class Phase:
    name: str
    build: Callable[[], PhaseRun]
    calibrated: bool = True  # False for costly phases: one call per sample, no warm-up
    once: bool = False  # a NumPy function has exactly one first call
    # one call per sample, warmed up, and at least SINGLE_CALL_SAMPLES of them (dispatch)
    single_call: bool = False
    # sampled alternately with the cell's other `turns` phases (blockbench.sampling.in_turn)
    turns: bool = False

    note: str = ""  # what a reader of the phase must know (kept in its record)
    # the parts its one call was timed in, filled as it runs (kept in its record as parts_s)
    parts: dict[str, float] | None = None

    def rule(self, rule: Any) -> Any:
        return replace(rule, max_samples=1) if self.once else rule


WARMED_BY_CHECK = "warmed up by the correctness check's call, made just before"
# Why an accelerator's first call is one sample, measured first, and what it leaves out.
COLD_FIRST_CALL = (
    "one cold call per process, before any other compile of the program: XLA's GPU "
    "autotuning results and loaded kernels survive jax.clear_caches(), so a later call is warm. "
    "The device's first use (the process's warm-up) came before it and is not in its sample; "
    "parts_s gives that, and the compile and the first run the sample adds up"
)


def phase_plan(
    impl: Impl,
    dev: Any,
    host_args: tuple,
    wanted: tuple[str, ...] | None = None,
    example: Callable[[], Any] = lambda: None,
    requested: str = "",
    first_use_s: float | None = None,
) -> list[Phase]:
    """The phases that apply to this implementation (and were asked for), in order.
    `example` gives an output of the call computed before the phases run, if one was (the
    check's), from which the timed loops learn how to wait for the output. `requested`: the
    cell's device, whose plan it is (default: `dev`'s platform; the test-only fake GPU runs
    a GPU cell's plan on the CPU device). `first_use_s`: the process's warm-up
    (harness.warm_up), kept with an accelerator's cold first call as the device's first use."""
    if impl.style == "numpy":
        run = harness.numpy_steady(impl.fn, host_args)
        plan = [
            Phase("first_call", lambda: run, calibrated=False, once=True),
            Phase("steady", lambda: run),
        ]
    else:
        args = host_args if impl.host_inputs else harness.block(jax.device_put(host_args, dev))
        call = harness.jitted(impl)
        output = cache(lambda: harness.output_of(call, args, example()))
        cold = (requested or jax_compat.platform(dev)) != "cpu"
        if cold:
            parts = {} if first_use_s is None else {"device_first_use": first_use_s}
            taken_apart = (
                harness.cold_first_call if impl.style == "jit" else harness.cold_eager_first_call
            )
            first = Phase(
                "first_call",
                lambda: taken_apart(impl.fn, args, parts),
                calibrated=False,
                once=True,
                note=COLD_FIRST_CALL,
                parts=parts,
            )
        else:
            first = Phase("first_call", lambda: harness.first_call(impl, args), calibrated=False)
        sent = impl.sends(host_args) if impl.sends else host_args
        plan = [Phase("host_to_device", lambda: harness.host_to_device(sent, dev))]
        if cold:
            plan.append(first)
        if impl.style == "jit":
            plan += [
                Phase("trace_lower", lambda: harness.trace_lower(impl.fn, args), calibrated=False),
                Phase("compile", lambda: harness.compile_only(impl.fn, args), calibrated=False),
            ]
        if not cold:
            plan.append(first)
        plan += [
            Phase(
                "dispatch",
                lambda: harness.dispatch(call, args, output().wait),
                calibrated=False,
                single_call=True,
                turns=True,
            ),
            Phase("steady", lambda: harness.steady(call, args, output().wait), turns=True),
            Phase("asarray", lambda: harness.asarray(call, args, output().to_host), turns=True),
            Phase("device_to_host", lambda: harness.device_to_host(call, args)),
        ]
    return [p for p in plan if wanted is None or p.name in wanted]


def turn_groups(plan: list[Phase]) -> list[list[Phase]]:
    """The plan as the groups sampled together: every `turns` phase in one group, at the
    place of the first of them; every other phase alone, in plan order."""
    groups: list[list[Phase]] = []
    turns: list[Phase] | None = None
    for phase in plan:
        if not phase.turns:
            groups.append([phase])
        elif turns is None:
            turns = [phase]
            groups.append(turns)
        else:
            turns.append(phase)
    return groups


def wrong_result_reason(check: dict[str, Any]) -> str:
    reason = f"max relative error {check['max_rel_err']:.3g} > tolerance {check['tolerance']:g}"
    known = check.get("known_values")
    if known and not known["passed"]:
        reason = f"published values missed by {known['max_abs_err']:.3g} (atol {known['atol']:g})"
    return reason


def sample(
    plan: list[Phase],
    spec: CellSpec,
    probe: Probe,
    impl: Impl,
    record: dict[str, Any],
    progress: Callable[[dict[str, Any]], None],
    by_check: bool,
) -> None:
    """Sample the plan's phases, a group of them in turn at a time, into record["phases"]
    (`progress` sees the record before each group, naming it: a kill keeps what was done).
    `by_check`: the check's call warmed the first phase (warms_fully)."""
    accelerator = spec.device != "cpu"  # its repeated calls warm its clocks (warm_rule)
    settled = False  # has a phase warmed for `warmup_s` yet (warm_rule)
    for group in turn_groups(plan):
        record["current_phase"] = "+".join(phase.name for phase in group)
        progress(record)
        warmed = by_check and group[0] is plan[0]
        samplers = [
            Sampler(
                phase.build(),
                warm_rule(
                    phase.rule(spec.params.rule), warmed, settled, accelerator and phase.turns
                ),
                phase.calibrated,
                spec.deadline,
                probe=probe,
                warm=phase.calibrated or phase.single_call,
                single_calls=SINGLE_CALL_SAMPLES if phase.single_call else 0,
                loops=spec.loops.get(phase.name),
            )
            for phase in group
        ]
        with harness.no_implicit_transfers(impl):
            collected = in_turn(samplers)
        settled = settled or any(sampler.warms_for > 0 for sampler in samplers)
        for phase, got in zip(group, collected, strict=True):
            record["phases"][phase.name] = phase_record(got, phase.parts) | {
                "in_turn": len(group) > 1
            }
            note = phase.note or (WARMED_BY_CHECK if warmed else "")
            if note:
                record["phases"][phase.name]["note"] = note
    del record["current_phase"]


def isolated(spec: CellSpec, record: dict[str, Any], probe: Probe) -> Probe:
    """A JAX cell's measuring thread moved to a core outside the cell's, and the probe that
    watches that core too: a neighbour there disturbs us as well."""
    record["isolation"] = cores.separate_measuring_thread(spec.cores, spec.spare_cores)
    watched = set(spec.cores) | set(record["isolation"]["measuring_thread_cores"])
    probe.close()
    return Probe(tuple(sorted(watched)))


def measure_phases(
    spec: CellSpec,
    workload: Workload,
    impl: Impl,
    dev: Any,
    probe: Probe,
    record: dict[str, Any],
    progress: Callable[[dict[str, Any]], None],
    first_use_s: float | None = None,
) -> float:
    """The cell's inputs made, its phases sampled and its result checked, into `record`;
    what an empty sample reads (sampling.empty_sample_s), taken once the phases are in.
    `first_use_s`: the process's warm-up (phase_plan)."""
    numpy_cell = dev is None  # a NumPy cell has no device
    timeline = record["timeline"]
    host_args = workload.make_inputs(spec.size, np.random.default_rng(spec.params.seed))
    timeline["inputs"] = time.time()
    with nullcontext() if numpy_cell else jax.default_device(dev):
        checked: dict[str, Any] = {}

        def check() -> dict[str, Any]:
            on_host = numpy_cell or impl.host_inputs
            args = host_args if on_host else jax.device_put(host_args, dev)
            t0 = time.perf_counter()  # the call alone: its wall time decides warms_fully
            out = impl.fn(*args) if numpy_cell else harness.block(harness.jitted(impl)(*args))
            checked["out"], checked["call_s"] = out, time.perf_counter() - t0
            return check_record(workload, impl, host_args, out, dev)

        plan = phase_plan(
            impl,
            dev,
            host_args,
            spec.params.phases,
            lambda: checked.get("out"),
            spec.device,
            first_use_s,
        )
        # A plan that opens on the steady phase (steady alone) is checked first, and the
        # check's call, the same call on the same inputs, warms that phase up (warms_fully).
        # Any other plan opens on a phase the check's call would warm wrongly.
        check_first = bool(plan) and plan[0].name == "steady"
        if check_first:
            record["check"] = check()
        by_check = check_first and warms_fully(checked["call_s"], spec.params.rule, spec.device)
        timeline["sampling"] = time.time()
        sample(plan, spec, probe, impl, record, progress, by_check)
        timeline["sampled"] = time.time()
        empty = empty_sample_s(probe)
        if not check_first:
            record["check"] = check()
        timeline["checked"] = time.time()
        # what waking another core cost while this process ran (after its samples)
        record["provenance"]["handoff"] = safe(core_speed.handoff_reading, sorted(probe.cores))
        # clocks, power, temperature and peak memory at cell start are idle values: read
        # them again once the device has worked (both kept)
        if dev is not None:
            record["provenance"]["device_after"] = provenance.device(dev, spec.device)
    return empty


def closed(
    record: dict[str, Any], spec: CellSpec, impl: Impl, probe: Probe, empty: float | None
) -> dict[str, Any]:
    """The record with what every outcome keeps: its provenance (the base one where the
    worker failed before reading it), the threads and the sampling's own costs, and the
    warnings its phases and libraries call for."""
    if "provenance" not in record:  # (not setdefault: its default is computed every time)
        record["provenance"] = provenance.base()
        if impl.style != "numpy":
            record["provenance"]["jax"] = provenance.jax_settings()
    record["provenance"]["threads"] = provenance.threads(spec.cores, spec.params.threads)
    record["provenance"]["sampling"] = {
        "timer_cost_s": TIMER_COST_S,
        "empty_sample_s": empty,
        "kernel_counters": probe.available,
        "isolation": record.pop("isolation", None),
    }
    record["warnings"] = warnings(
        record, spec.params.rule.min_samples, spec.device
    ) + provenance.blas_warnings(record["provenance"], impl.blas)
    return record


def measure(spec: CellSpec, progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run every phase of the cell; `progress` receives the partial record after each phase,
    so a parent that kills us at the time budget still has what was completed."""
    workload, impl = lookup(
        spec.device, spec.workload, spec.impl, spec.size
    )  # ValueError: bad cell
    # A NumPy cell runs without JAX: no device, no compiler, no XLA thread pool.
    numpy_cell = impl.style == "numpy"
    if spec.params.matmul_precision != "default" and not numpy_cell:
        jax.config.update("jax_default_matmul_precision", spec.params.matmul_precision)
    record: dict[str, Any] = {"status": "ok", "reason": "", "phases": {}, "check": None}
    # where the process's time goes before, during and after its timed samples (wall clock)
    timeline = record["timeline"] = {"measure": time.time()}
    probe = Probe(spec.cores)
    empty = None  # sampling.empty_sample_s, read once the phases are sampled
    first_use_s = None  # the device's first use: a JAX cell's warm-up
    try:
        dev = None if numpy_cell else resolve_device(spec.device)
        timeline["device"] = time.time()
        record["provenance"] = provenance.full(dev, spec.device)
        timeline["provenance"] = time.time()
        if not numpy_cell:
            first_use_s = harness.warm_up(dev)
            if spec.isolate:
                probe = isolated(spec, record, probe)
        # whether the cores keep their speed: a run's readings decide which study applies
        timeline["warmed"] = time.time()
        record["provenance"]["core_speed"] = safe(core_speed.reading, sorted(probe.cores))
        timeline["core_speed"] = time.time()
        empty = measure_phases(spec, workload, impl, dev, probe, record, progress, first_use_s)
        if not record["check"]["passed"]:
            record["status"] = "wrong_result"
            record["reason"] = wrong_result_reason(record["check"])
    except Unavailable as exc:
        record.update(status="unavailable", reason=str(exc))
    except Exception as exc:
        phase = record.pop("current_phase", None)
        where = f" in phase {phase}" if phase else ""
        record.update(
            status=classify(exc),
            reason=f"{type(exc).__name__}{where}: {exc}",
            traceback=traceback.format_exc(limit=8),
        )
    finally:
        probe.close()
    return closed(record, spec, impl, probe, empty)
