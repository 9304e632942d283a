"""Reading the machine without ever failing a measurement."""

from typing import Any


def safe(probe: Any, *args: Any) -> Any:
    """The probe's answer, or why there is none: a probe's failure is itself a fact worth
    keeping, never a reason to lose the measurement it describes."""
    try:
        return probe(*args)
    except Exception as exc:
        return {"unavailable": f"{type(exc).__name__}: {exc}"}
