"""The method's constants (its version, phases, exit codes) and how a phase is sampled
(no JAX import here)."""

from dataclasses import dataclass

DEVICES = ("cpu", "gpu", "tpu")
# The level of every interval blockbench computes, records (`ci95_s`) and reports.
CONFIDENCE = 0.95
# The version of the measuring method: raised by any change in what is measured or how (what a
# sample keeps, how processes and rounds are run). A change in judging alone (how intervals
# and verdicts are computed from the records) does not raise it: committed runs stay valid and
# are judged again by today's code (CHANGELOG.md says which kind each change is). A
# between-run study made by another version describes another method and is not applied
# (blockbench.judge.studies), and a run label holding two versions is refused
# (blockbench.judge.aggregate). 3: rounds on
# demand (a two-stage design, judged with Stein's interval: blockbench.judge.stopping). 4: a
# block's round is one chain of jobs, one node on a cluster, in an order drawn for the block
# alone (blockbench.pipeline.run_order.chains): after an update a run's chained cells are measured
# again, and pairing them with cells of the older order would compare two minutes.
# 5: each steady call's result dropped before the next call, as the articles' %timeit does; a
# process's first phases warm up for `warmup_s` (StopRule), not for one call.
# 6: a block's added rounds go only to the cells whose parts need them (blockbench.judge.
# stopping.allocate): a cell the block's other claims read keeps its first stage.
# 7: a ratio's precision target is sized to its claim (blockbench.judge.claim_rules.Precision):
# sqrt of the factor by which its article's figure clears its rule, between `precision` and x2.
# 8: a process takes at least 3 samples of a phase (PROCESS_FLOOR), not 2: a median that one
# slow sample cannot move.
# 9: a steady-only cell's check call is its warm-up only if it lasted `warmup_s`: a shorter one
# (a jit SELU at 10^3) warms for `warmup_s` as a process's first phase does (cell.warms_fully).
# 10: one loop count per cell and phase, chosen by the cell's first process and used by the
# others (blockbench.measure.parent.cell_loops); calibration stops growing only if the fastest
# of three tries says so, and its wall-time guard leaves out the probe's readings.
# 11: two looks (blockbench.judge.stopping): a part its first stage decides at 97.5% takes no
# more rounds; one it leaves undecided takes every round up to max_rounds and is judged on all
# of them at 97.5% (each look errs 2.5%, the two 5%: Bonferroni). Records keep max_rounds.
METHOD_VERSION = 11
# Every phase a cell can have, in the order a user meets them (and the harness measures them).
PHASES = (
    "host_to_device",
    "trace_lower",
    "compile",
    "first_call",
    "dispatch",
    "steady",
    "asarray",
    "device_to_host",
)
STEADY = "steady"  # the blocked call: the phase a claim's term reads where it names none
# What each phase times, in words, for figures and reports.
PHASE_WORDS = {
    "host_to_device": "copy to device",
    "trace_lower": "trace and lower",
    "compile": "XLA compile",
    "first_call": "first call",
    "dispatch": "dispatch (unblocked)",
    "steady": "blocked call",
    "asarray": "np.asarray(result)",
    "device_to_host": "copy to host",
}
EXIT_BAD_CELL = 64  # EX_USAGE: the request itself is wrong, nothing was measured
EXIT_WRONG_HOST = 69  # EX_UNAVAILABLE: not the run's kind of host, nothing was measured


# The sampling rule's constants, here rather than in blockbench.measure.sampling so that the
# GPU kit's time model (blockbench.pipeline.kit_estimate) reads them where no NumPy is installed
# (the workflow's parse in an environment of Snakemake alone).
# Samples per process of a phase timed one call each (dispatch): its distribution has a
# slow mode (a preempted Python thread) that 2-5 samples cannot show...
SINGLE_CALL_SAMPLES = 30
# ...fewer where the calls wait long for their result in between: those that fit in this
# much wall time per process.
SINGLE_CALL_WALL_S = 0.5
# Tries at a loop count before calibration stops growing there: it stops only if the fastest
# of them says so, so one sample slowed by a neighbour or by the untimed work around it cannot
# leave a 100 us call at one loop a sample (it read about twice as slow as at 50-200 loops).
CALIBRATION_TRIES = 3


@dataclass(frozen=True)
class StopRule:
    """When a phase has been sampled enough (the nvbench / pyperf idea, on the median's CI).

    `min_samples` is a floor that the time cap cannot cut: a 0.2 s call gets min_samples
    samples, not the one a fixed cap would allow, so the cap scales with the call's duration.
    Only the cell's time budget (a deadline) or one clean sample of `long_sample_s` or more
    stops a phase below the floor, and the phase's `stop` says which.

    Its defaults are the config's `sampling` defaults, a cell's (one process measuring a
    cell alone samples as the cell would): the config schema and config/config.yaml state
    the same values, which tests/test_config_loading.py keeps equal to these.
    """

    target_rel_ci: float = 0.01  # stop once the 95% CI of the median is within +-1%
    min_samples: int = 5
    min_time_s: float = 0.05
    max_time_s: float = 0.1  # per-phase cap once min_samples are in, converged or not
    max_samples: int = 2000
    sample_time_s: float = 0.005  # calibrate loops so one sample lasts at least this
    warmup: int = 1
    # ...and the process's first phases that warm up go on (in turn) until their warm-up
    # calls have lasted this long, so that its first sample finds XLA's pool threads settled
    # on their cores: on a 2-core VM the jit SELU at 10^6 ran at 0.4 ms a call for 10 ms to
    # 0.3 s of a fresh process, then at 0.21 ms (benchmarks/pool_modes.py).
    warmup_s: float = 0.1
    # ...but an accelerator's repeated-call phases (dispatch, steady, asarray) warm up for
    # this long, of their own calls, whatever warmed before them: a GPU's clocks rise from
    # idle only under load, over tens to hundreds of milliseconds, which the copies and
    # compiles before those phases do not give it (blockbench.measure.cell.warm_rule; none
    # where `warmup` is 0).
    accelerator_warmup_s: float = 0.5
    # A first sample this long (timed seconds, not the wait around a dispatch) that nothing
    # disturbed is the process's value: the spread that matters is between processes,
    # which a second call of half a second in the same process does not measure; the default
    # grid's longest cells (the eager loops at 12 and 64 rows, the jit compile of the 12-row
    # loop, the 5000 matmuls) then cost a third less.
    long_sample_s: float = 0.5


def per_process(cell: dict[str, float], repeats: int) -> dict[str, float]:
    """A cell's sampling settings, split over the `repeats` processes that measure it.

    The times are the cell's to spend, so each process gets its share; the floor of samples
    is the cell's too, so each process takes its share of it, and at least PROCESS_FLOOR.
    More processes then cost about the same time and buy between-process variance instead
    of more samples from one process.
    """
    out = dict(cell)
    for key in ("min_time_s", "max_time_s"):
        if key in out:
            out[key] = out[key] / repeats
    if "min_samples" in out:
        out["min_samples"] = max(PROCESS_FLOOR, -(-int(out["min_samples"]) // repeats))
    return out


# The fewest samples a process takes of a phase (below it, only a long sample or the budget
# stops one). The median of 2 is their mean: one slow sample moves it by half its excess, as
# a first steady call of 94 ms against 41 ms moved a process of jnp.dot on NumPy data at
# 2000 to 67 ms, and its block to the round cap (docs/studies.md, method version 8); the
# median of 3 leaves one out.
PROCESS_FLOOR = 3
