"""A run's progress, one line per finished process: its cell, its time, and the time left.

The time left is the plan's model of the processes still to come (kit_estimate.places, from
the MODEL that `blockbench claims` states), scaled by how this invocation's finished processes
compared with that model: the model is a stated guess for a model machine, and a run on a
faster or slower one corrects it as it goes. The line is printed by the job after its
worker has exited, so it never runs beside a measurement. This module is what each job
imports: it stays light.
"""

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# When this invocation of the workflow started, set by the workflow before any job: its jobs
# inherit it where they run as its children (locally), and a cluster job, which does not,
# prints no time left.
START_ENV = "BLOCKBENCH_RUN_START"


@dataclass(frozen=True)
class Place:
    """A job's place in its stage: its position, the model's seconds of this invocation's
    jobs up to it (itself included) and of those after it."""

    stage: str  # "first stage" or "added rounds"
    position: int
    of: int
    model_done_s: float
    model_left_s: float


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def line(
    what: str,
    status: str,
    wall_s: float,
    place: Mapping[str, Any],
    now: float | None = None,
    env: Mapping[str, str] = os.environ,
) -> str:
    """`[12/99] cpu/matmul/jax/5000 process 1: ok in 5.2 s; first stage: about 3 min left`."""
    text = f"blockbench: [{place['position']}/{place['of']}] {what}: {status} in {wall_s:.1f} s"
    started = env.get(START_ENV)
    if started is None or place["model_done_s"] <= 0:
        return text
    elapsed = (time.time() if now is None else now) - float(started)
    left = max(0.0, place["model_left_s"] * elapsed / place["model_done_s"])
    return text + f"; {place['stage']}: about {minutes(left)} left"
