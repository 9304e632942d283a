"""One claim part as judged in one run (or pooled over runs), and the four verdicts: the
record every later step (verdicts, pooling, the report, the figures) reads."""

import math
from dataclasses import dataclass, field

from blockbench.judge.between_runs import StudyPart
from blockbench.judge.claim import FAILS, HOLDS, INCONCLUSIVE
from blockbench.judge.uncertainty import Spread

REPRODUCED, NOT_REPRODUCED, NOT_RUN = "reproduced", "not_reproduced", "not_run"
GROWS, FALLS, UNCLEAR = "grows", "falls", "unclear"


@dataclass(frozen=True)
class Step:
    """A trend's speedup from one size to the next: the larger size's speedup over the
    smaller's. A fit over sizes can rise while a step falls; the step says so."""

    start: int
    end: int
    log: Spread  # the log of the ratio of the two speedups, this run's own
    level: float  # its interval's: the steps' Bonferroni level (part_evaluators.steps)

    @property
    def bounds(self) -> tuple[float, float]:
        low, high = self.log.interval(self.level)
        return math.exp(low), math.exp(high)

    @property
    def reading(self) -> str:
        """`falls` where its whole interval lies below 1, `grows` above, else `unclear`."""
        low, high = self.bounds
        return FALLS if high < 1 else GROWS if low > 1 else UNCLEAR

    def __str__(self) -> str:
        """'5000->10000 falls 0.82 [0.78, 0.86]'."""
        low, high = self.bounds
        ratio = math.exp(self.log.estimate)
        return f"{self.start}->{self.end} {self.reading} {ratio:.3g} [{low:.3g}, {high:.3g}]"


@dataclass
class PartResult:
    name: str
    outcome: str  # holds, fails, inconclusive, not_run
    measured: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    article: float | None = None
    condition: str = ""
    why: str = ""
    size: int | None = None
    article_size: int | None = None
    devices: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    detail: str = ""
    code: str = ""
    n_min: int | None = None
    warnings: list[str] = field(default_factory=list)
    # what the kernel said of the samples behind the value (disturbed, slow mode)
    samples: list[str] = field(default_factory=list)
    # the scale its uncertainty is modelled on: "log" (a ratio) or "linear" (an exponent)
    scale: str = "log"
    # this run's own uncertainty on the analysis scale (None: a check, or not measured)
    spread: Spread | None = None
    processes: float = math.nan  # the design: processes (or paired rounds) behind the value
    run_low: float | None = None  # this run's own interval, before any between-run term
    run_high: float | None = None
    study: StudyPart | None = None  # the study's runs this part was judged with (None: none)
    look: int | None = None  # of two looks, the one it was judged at (None: a single look)
    # where it was decided on another interval than its 95% CI (a look, at 97.5%: the
    # bound over both looks): that interval; None where ci_low/ci_high decided it
    decided_low: float | None = None
    decided_high: float | None = None
    steps: tuple[Step, ...] = ()  # a trend's, between consecutive sizes; () for other kinds

    @property
    def falling(self) -> list[Step]:
        return [s for s in self.steps if s.reading == FALLS]

    def stepwise(self, outcome: str) -> str:
        """`outcome`, decided on its interval, with its steps read: a trend that holds while
        a step falls is inconclusive (docs/statistics.md, "A trend's steps")."""
        return INCONCLUSIVE if outcome == HOLDS and self.falling else outcome

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """The interval its outcome was decided on."""
        if self.decided_low is None:
            return self.ci_low, self.ci_high
        return self.decided_low, self.decided_high

    @property
    def decided_in_looks(self) -> bool:
        """A part judged in looks that one of them decided (after the first stage: its first
        look), to which more rounds would add nothing."""
        return self.look is not None and self.outcome in (HOLDS, FAILS)

    @property
    def indicative(self) -> bool:
        """Measured, but not at the article's size: shown, never decisive."""
        return (
            self.outcome != NOT_RUN
            and self.article_size is not None
            and self.size != self.article_size
        )

    @property
    def setup(self) -> str:
        if self.size is None:
            return ""
        if self.article_size is None:
            return f"measured at {self.size}"
        if self.indicative:
            return f"measured at {self.size} (article {self.article_size})"
        return f"article's setup ({self.size})"
