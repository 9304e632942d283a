"""Keep Snakemake itself off the CPU while a cell measures (docs/measuring-traps.md).

Snakemake 9's job scheduler ends every scheduling round with a `threading.Timer` that
wakes the loop again one rate-limit timespan later (`_schedule_reevalutation`), and each
woken round starts another timer. A finished job wakes the loop once more, so every finished
job adds one more self-renewing chain: after N jobs the loop runs ~N rounds a second, with
~N timer threads, while the cells wait for the one-at-a-time `measure_host` resource. With
the ILP scheduler each round also starts the `cbc` solver. On 2 cores that reached half a
core of other load during every late cell.

The profiles choose the greedy scheduler (no solver); `quiet_rescheduling` keeps at most one
re-evaluation timer pending, which is all the rate limiter needs (its timespan passes once
whatever number of timers wait on it). The patch is applied only where the method has the
shape it was written for, and says what it did.
"""

import inspect
import threading
from typing import Any

PATCHED = "_blockbench_single_timer"


def quiet_rescheduling(scheduler_class: Any | None = None) -> str:
    """Patch `JobScheduler._schedule_reevalutation` to keep one pending timer; returns what
    was done, for the log ("patched", "already patched" or why not)."""
    if scheduler_class is None:
        try:
            from snakemake.scheduling.job_scheduler import JobScheduler as scheduler_class
        except ImportError as exc:
            return f"not patched: {exc}"
    original = getattr(scheduler_class, "_schedule_reevalutation", None)
    if original is None:
        return "not patched: this Snakemake has no _schedule_reevalutation"
    if getattr(original, PATCHED, False):
        return "already patched"
    if list(inspect.signature(original).parameters) != ["self", "delay"]:
        return "not patched: _schedule_reevalutation has another signature"
    guard = threading.Lock()

    def schedule_once(self: Any, delay: float) -> None:
        with guard:
            pending = getattr(self, "_blockbench_timer", None)
            if pending is not None and pending.is_alive():
                return

            def wake() -> None:
                with guard:
                    self._blockbench_timer = None
                self._open_jobs.release()

            timer = threading.Timer(delay, wake)
            timer.daemon = True
            self._blockbench_timer = timer
            timer.start()

    setattr(schedule_once, PATCHED, True)
    scheduler_class._schedule_reevalutation = schedule_once
    return "patched"
