"""Snakemake stays off the CPU: at most one pending re-evaluation timer, however many jobs
finish (blockbench.pipeline.scheduler_patch), on a stand-in scheduler and on Snakemake's own
class."""

import threading
import time

from blockbench.pipeline.scheduler_patch import PATCHED, quiet_rescheduling


class Scheduler:
    """The shape of Snakemake 9's JobScheduler as far as the patch is concerned: every
    scheduling round ends by arming a timer that releases the loop's semaphore."""

    def __init__(self) -> None:
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay: int) -> None:
        threading.Timer(delay, lambda: self._open_jobs.release()).start()


def timers() -> int:
    return sum(isinstance(t, threading.Timer) for t in threading.enumerate())


def test_a_hundred_finished_jobs_leave_one_timer_and_one_wake_up():
    assert quiet_rescheduling(Scheduler) == "patched"
    s = Scheduler()
    before = timers()
    for _ in range(100):  # a round per finished job, each arming a timer
        s._schedule_reevalutation(0.2)
    assert timers() - before == 1
    assert s._open_jobs.acquire(timeout=2.0)  # the one timer still wakes the loop
    assert not s._open_jobs.acquire(timeout=0.4)  # and nothing else does
    s._schedule_reevalutation(0.05)  # the next round arms a new one
    assert s._open_jobs.acquire(timeout=2.0)


def test_the_unpatched_shape_grows_a_timer_per_call():
    """What the patch prevents: the same calls on the unpatched shape arm 20 timers."""

    class Plain:
        def __init__(self) -> None:
            self._open_jobs = threading.Semaphore(0)

        def _schedule_reevalutation(self, delay: float) -> None:
            threading.Timer(delay, lambda: self._open_jobs.release()).start()

    s = Plain()
    before = timers()
    for _ in range(20):
        s._schedule_reevalutation(0.2)
    assert timers() - before >= 20
    time.sleep(0.4)


def test_snakemakes_own_scheduler_is_patched_once_and_refuses_other_shapes():
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert quiet_rescheduling() in ("patched", "already patched")
    assert getattr(JobScheduler._schedule_reevalutation, PATCHED)
    assert quiet_rescheduling() == "already patched"

    class Other:
        def _schedule_reevalutation(self, delay, reason):
            pass

    assert quiet_rescheduling(Other).startswith("not patched")
    assert quiet_rescheduling(object).startswith("not patched")
