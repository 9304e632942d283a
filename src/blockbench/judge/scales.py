"""The scale a claim part is analysed on, and a run's standard error read off its interval.

A ratio's error is modelled as normal on the log scale, an exponent's as it is; pooling and
the between-run term both work on that scale.
"""

import math
from typing import Any

import pandas as pd

from blockbench.judge.random_effects import se_of


def on_scale(x: float, scale: str) -> float:
    """A ratio's log, an exponent as it is: where a run's error is modelled as normal."""
    return math.log(x) if scale == "log" else x


def from_scale(x: float, scale: str) -> float:
    return math.exp(x) if scale == "log" else x


def scaled(value: Any, low: Any, high: Any, df: Any, scale: str) -> tuple[float, float] | None:
    """(estimate, standard error) on the analysis scale from a value and its own t interval
    with `df`; None where there is no usable interval."""
    if any(x is None or pd.isna(x) for x in (value, low, high, df)):
        return None
    if scale == "log" and min(value, low, high) <= 0:
        return None
    return on_scale(value, scale), se_of(on_scale(low, scale), on_scale(high, scale), df)
