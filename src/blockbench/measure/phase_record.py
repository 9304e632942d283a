"""A phase's record and a cell's warnings, from what sampling collected: the statistics over
the samples kept, every raw sample beside them with the kernel's account of it, and what a
reader must know before trusting the numbers.
"""

from typing import Any

import numpy as np

from blockbench.measure.disturbance import INSIDE, OUTSIDE
from blockbench.measure.sampling import BUDGET, LONG, SAMPLE_CAP, Collected
from blockbench.measure.stats import (
    SLOW_SHARE,
    choose_kept,
    kept_samples,
    slow_mode,
    summarize,
    wilson,
)

# Sample spread (IQR / median) above which a phase is flagged, as pyperf and
# torch.utils.benchmark warn above 10%.
UNSTABLE_SPREAD = 0.10


def disturbance_record(collected: Collected) -> dict[str, Any] | None:
    """Per sample, what the kernel saw (microseconds), and the disturbed share with its CI."""
    known = collected.disturbances
    if not known or any(d is None for d in known):
        return None
    causes = [d.cause for d in known]
    disturbed = causes.count(OUTSIDE)
    low, high = wilson(disturbed, len(causes))
    inside_low, inside_high = wilson(causes.count(INSIDE), len(causes))
    return {
        "cause": causes,
        "main_wait_us": [round(d.main_wait_ns / 1e3, 1) for d in known],
        "pool_wait_us": [round(d.pool_wait_ns / 1e3, 1) for d in known],
        "other_cpu_us": [round(d.other_cpu_ns / 1e3, 1) for d in known],
        "main_nivcsw": [d.main_nivcsw for d in known],
        "fraction": disturbed / len(causes),  # from outside
        "ci": [low, high],
        "inside_fraction": causes.count(INSIDE) / len(causes),  # inside the cell
        "inside_ci": [inside_low, inside_high],
        "outside": causes.count(OUTSIDE),
        "inside": causes.count(INSIDE),
    }


def clean_median(samples: list[float], disturbance: dict[str, Any] | None) -> float | None:
    """The median of the samples the kernel saw no disturbance in, from either side (None
    where it saw none of them, or none were clean): beside the statistics, not in them."""
    if disturbance is None:
        return None
    clean = [s for s, cause in zip(samples, disturbance["cause"], strict=True) if not cause]
    return float(np.median(clean)) if clean else None


def phase_record(collected: Collected, parts: dict[str, float] | None = None) -> dict[str, Any]:
    """Statistics over the samples no other process disturbed, where there are enough of
    them (`kept`); every raw sample and the kernel's account of it kept beside them, and the
    `parts` its one call was timed in, where it was (an accelerator's cold first call)."""
    record: dict[str, Any] = {"samples_s": collected.samples_s}
    disturbance = disturbance_record(collected)
    if disturbance is not None:
        record["disturbance"] = disturbance
        record["kept"] = choose_kept(disturbance["cause"])
    kept = kept_samples(record)
    record |= {
        **summarize(kept).as_dict(),
        "n_all": len(collected.samples_s),
        "median_all_s": float(np.median(collected.samples_s)),
        "clean_median_s": clean_median(collected.samples_s, disturbance),
        "slow_mode": slow_mode(collected.samples_s),
        "loops": collected.loops,
        "probe_s": collected.probe_s,
        "converged": collected.converged,
        "stop": collected.stop,
    }
    if collected.loops_from:
        record["loops_from"] = collected.loops_from
    if collected.floor is not None:
        record["floor"] = collected.floor
    if collected.faults:  # median over every sample, as the spread between processes is
        record["faults_per_call"] = float(np.median(collected.faults))
    if parts:
        record["parts_s"] = dict(parts)
    return record


def warnings(record: dict[str, Any], rule_min_samples: int, device: str = "cpu") -> list[str]:
    """What a reader must know before trusting the numbers (shown in tables and claims).
    Thread parity is a CPU cell's concern: on an accelerator XLA's CPU pool computes
    nothing that is timed, so its size is recorded but not flagged."""
    out = []
    threads = record["provenance"].get("threads") or {}
    if device == "cpu" and record["phases"] and threads and not threads["parity"]:
        out.append(
            f"thread parity: the cell ran on {threads['n_cores']} core(s) but {threads['mismatch']}"
        )
    for name, phase in record["phases"].items():
        if phase["n"] < rule_min_samples and phase["stop"] not in (SAMPLE_CAP, LONG):
            why = "the cell's time budget ran out" if phase["stop"] == BUDGET else phase["stop"]
            out.append(f"{name}: {phase['n']} sample(s) < {rule_min_samples} ({why})")
        spread = phase["iqr_s"] / phase["median_s"] if phase["median_s"] > 0 else 0.0
        if phase["n"] >= rule_min_samples and spread > UNSTABLE_SPREAD:
            out.append(f"{name}: unstable samples (IQR {spread:.0%} of the median)")
        out += disturbance_warnings(name, phase)
    return out


def disturbance_warnings(name: str, phase: dict[str, Any]) -> list[str]:
    out = []
    dist = phase.get("disturbance")
    if dist and phase.get("kept") == "all" and dist["outside"]:
        out.append(
            f"{name}: {dist['outside']} of {len(dist['cause'])} samples disturbed by another "
            "process: too few left, statistics over all samples"
        )
    slow = phase.get("slow_mode")
    if slow and slow["n"] >= 2 and slow["fraction"] >= SLOW_SHARE:
        out.append(
            f"{name}: {slow['fraction']:.0%} of samples in a slow mode (median "
            f"{slow['median_s']:.3g} s, over {slow['threshold_s']:.3g} s)"
        )
    return out
