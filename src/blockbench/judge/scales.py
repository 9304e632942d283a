"""The scale a claim part is analysed on: a ratio's error is modelled on the log scale, an
exponent's as it is; its interval, the between-run term and pooling all work on that scale.
"""

import math


def on_scale(x: float, scale: str) -> float:
    """A ratio's log, an exponent as it is: where a run's error is modelled as normal."""
    return math.log(x) if scale == "log" else x


def from_scale(x: float, scale: str) -> float:
    return math.exp(x) if scale == "log" else x
