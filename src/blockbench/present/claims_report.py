"""The claims report a reader opens first (results/claims.md): rendering only.

Verdicts and parts come from blockbench.judge.verdicts; this module decides how they read: a
legend short enough to read before the table, the verdict, the measured figure next to the
article's, the setup it was measured at against the article's, and what to distrust (few
samples, unequal threads), with the method at the end and in docs/statistics.md. The tables
are written by blockbench.present.verdict_tables, what a run's processes tell by
blockbench.present.process_report.
"""

import os
import textwrap
from pathlib import Path

import pandas as pd

from blockbench.judge.between_runs import MIN_UNSTUDIED
from blockbench.judge.claim import Claim, Part
from blockbench.judge.part_evaluators import CHECKED
from blockbench.judge.studies import MIN_PROCESS_VALUES
from blockbench.judge.verdicts import fmt
from blockbench.present import stops
from blockbench.present.process_report import handoffs, measured_on, time_spent, time_table
from blockbench.present.verdict_tables import (
    between,
    listed,
    markdown_table,
    notes,
    parts_table,
    pooled_rows,
    pools,
    release,
    rst_table,
    rst_verdict_table,
    unstated,
    verdict_table,
)
from blockbench.records.spec import CONFIDENCE

# The checkout's documentation, which claims.md links to from wherever it is written.
DOCS = Path(__file__).resolve().parents[3] / "docs"
WIDTH = 100  # the legend's lines in the Markdown source, as a reader's editor shows them


def docs_from(markdown: str | Path) -> str:
    """The docs folder as a link from the folder `markdown` is written in: `../docs` from
    results/claims.md. A committed reference copies a rebuilt run's claims.md, and
    regenerate's `--publish` makes its links from the reference folder instead."""
    return Path(os.path.relpath(DOCS, Path(markdown).resolve().parent)).as_posix()


def legend(docs: str = "../docs") -> list[str]:
    """What a reader needs to read the verdict tables, in at most six lines: the method and
    what an interval rests on are at the end of the report and in docs/statistics.md."""
    text = (
        f"Each value is measured [95% CI] ([how]({docs}/statistics.md)); each run says what "
        "its intervals cover. A part **holds** when its whole interval meets its rule, "
        "**fails** when none of it does, and is **inconclusive** when it straddles the rule. "
        "A claim is **reproduced** when every part holds at the article's setup, "
        "**not_reproduced** when one fails there, **not_run** when one was not measured, and "
        "**inconclusive** otherwise (undecided, or measured only at another size). Beside a "
        "verdict, its confidence: a bound if the intervals cover 95%, not the chance it is right."
    )
    return textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False)


# How a value and its interval are computed (blockbench.judge.uncertainty), in a reader's words.
METHOD = (
    "a cell's value is the geometric mean of the medians of the worker processes that "
    "measured it; its interval is the Student t interval on the logs of those medians, "
    "with one degree of freedom fewer than the processes (a ratio paired by process or round: "
    "the same on the logs of the per-process ratios; where rounds were added on demand, "
    "Stein's two-stage interval, from the first stage's spread; with a single process: the "
    "order-statistic interval of its median). A ratio of unpaired cells, a sum or a fitted "
    f"exponent adds those t terms, and its central {CONFIDENCE:.0%} is that of the sum's "
    "distribution (the Behrens-Fisher fiducial interval, as GUM Supplement 1 propagates "
    "distributions; conservative, computed by numerical inversion with its error checked)"
)

COMPUTED = (
    f"Every value is shown with its 95% confidence interval: {METHOD}. Each run "
    "says what its intervals cover: this run's processes only (the spread between its worker "
    "processes on this host in this hour); or, where a between-run study of this host "
    "exists (made by this method), this host's runs over the span the study saw: the wider "
    "of the run's own interval and the study's runs' spread times a Student t on one df "
    "fewer than the study's runs; or, pooled, the mean of the pooled runs. Each part's test "
    "is 97.5% one-sided. A verdict's confidence is a bound that holds if the intervals cover "
    "95%, not the chance that the verdict is right (reproduced: at least 97.5%; "
    "not_reproduced: 100% less each part's risk, 2.5% one-sided and 5% for a `between` rule, "
    "which can refuse a value on either side). It is stated only where the run's cores kept "
    "their speed, or a between-run study or pooled runs judge it (not a study of under "
    f"{MIN_PROCESS_VALUES} process values on a host whose cores change speed, whose intervals "
    "covered 0.90 in simulation); elsewhere each run says why it states none. The value "
    "beside a claim's verdict is that of the part the verdict rests on: the one that fails, "
    "the one undecided, the one not run, or, for a claim reproduced, the part whose interval "
    "came closest to its rule."
)


SAMPLES = (
    "Where the samples behind a claim came from: a sample is disturbed from outside when "
    "another process ran on the cell's cores during it, and inside the cell when, with no "
    "such neighbour, the measuring thread waited for a CPU its own pool threads held. The "
    "statistics leave out the samples disturbed from outside and keep those disturbed inside "
    "the cell, which a user timing the operation waits for too. A slow mode is the share of "
    "samples over twice the phase's fast mode (all samples)."
)


ROUNDS = (
    "Rounds on demand: every cell took its first stage of rounds (worker processes). A ratio "
    "of one cell, or of one block's cells, then took two looks, each judged at 97.5% so that "
    "the one it stopped at covers 95%: none more where its first stage decided it, every "
    "round up to max_rounds where it did not. Such a part shows its 95% CI like every other, "
    "and its outcome names the 97.5% interval it was decided on. Any other part's block took "
    "more while its own interval was wider than its precision target (Stein's two-stage "
    "rule: the first stage's spread sets the rounds, and the interval is built on it). A "
    "part's target, shown beside it, is the run's precision, or its own in the claims file, "
    "or, with "
    "precision_from_claims (the default), sqrt(m) for a ratio whose article's figure clears "
    "its rule by a factor m (at most x2): enough to decide any value within that factor of "
    "the article's. A part "
    "stopped " + "; ".join(f"**{k}**: {v}" for k, v in stops.REASONS.items()) + "."
)


OTHER_RUNS = (
    "Another run on the same hardware measured these claims differently: a run's 95% CI "
    "holds the spread of its own processes, not what changes between runs, so where two "
    "runs differ by more than their CIs, quote the claim from both."
)


POOLED = (
    "Runs on the same kind of machine (and JAX release) pooled into one estimate per claim: "
    "the runs' mean, with a 95% interval from the spread between runs (the between-run "
    "study's, and these runs' own where there are at least "
    f"{MIN_UNSTUDIED}: the wider), so it holds what changes between runs as well as each "
    "run's own noise, and the pooled verdict is the one to quote. Fewer than "
    f"{MIN_UNSTUDIED} runs on a machine with no study are too few to pool: no interval, "
    "and each run's own verdict stands. tau is the between-run "
    "standard deviation beyond the runs' own errors (of the log ratio, or of an exponent), "
    "I^2 = tau^2 over the runs' variance. Runs on different hardware are never pooled."
)


def _article(part: Part) -> str:
    """The article's figure for a part, as named in its catalog's figures.yaml and as a number."""
    if part.article_expression is None:
        return ""
    value = f" = {fmt(part.article)}" if part.article is not None else ""
    return f", article `{part.article_expression}`{value} ({part.article_says})"


def to_rst(table: pd.DataFrame, parts: pd.DataFrame, first: str = "") -> str:
    """The verdicts as reStructuredText tables, the run labelled `first` (this run) on top:
    what the HTML report opens on."""
    labels = sorted(table["run_label"].unique(), key=lambda label: (label != first, label))
    out = []
    for runs, rows in pools(table):
        out += [f"**Pooled** over runs {', '.join(runs)}", "", POOLED, ""]
        out += [*rst_table(pooled_rows(table, runs, rows, "``")), ""]
    for run_label in labels:
        mine = table[table["run_label"] == run_label]
        out += [
            f"**Run** ``{run_label}``{release(mine)}"
            + (" (this run)" if run_label == first else ""),
            "",
        ]
        out += [*rst_verdict_table(mine, parts), "", *unstated(mine), *between(mine)]
        sampled = listed(mine, "samples")
        if sampled:
            out += [SAMPLES, "", *sampled, ""]
        others = listed(mine, "other_runs")
        if others:
            out += [OTHER_RUNS, "", *others, ""]
    return "\n".join(out) + "\n"


def to_markdown(
    table: pd.DataFrame,
    parts: pd.DataFrame,
    claims: list[Claim],
    processes: pd.DataFrame | None = None,
    docs: str = "../docs",
) -> str:
    """The claims report; with `processes`, each run names the host it measured on. `docs`:
    the documentation folder as a link from where the report is written (docs_from)."""
    own = {c.id: c.note for c in claims}
    lines = ["# Claims: reproduced or not", "", *legend(docs), ""]
    for runs, rows in pools(table):
        lines += [f"## Runs pooled: {', '.join(f'`{r}`' for r in runs)}", "", POOLED, ""]
        lines += [*markdown_table(pooled_rows(table, runs, rows, "`")), ""]
    for run_label, runs in table.groupby("run_label", sort=True):
        lines += [f"## Run `{run_label}`{release(runs)}", ""]
        procs = processes[processes["run_label"] == run_label] if processes is not None else None
        measured = procs is not None and not procs.empty
        if measured:
            lines += [measured_on(procs), ""]
        mine = parts[parts["run_label"] == run_label]
        lines += [*between(runs), *verdict_table(runs, mine), ""]
        lines += [*unstated(runs), *notes(runs, mine, own)]
        handed = handoffs(procs) if measured else ""
        if handed:
            lines += [handed, ""]
        lines += ["### Every part, at the setup it was measured", ""]
        if "stopped" in mine and mine["stopped"].notna().any():
            lines += [ROUNDS, ""]
        lines += [*parts_table(mine), ""]
        if measured:
            timing = time_table(procs)
            lines += ["### Where the measuring time went", "", time_spent(procs), "", *timing, ""]
        warned = runs[runs["warnings"].fillna("") != ""]
        if not warned.empty:
            lines += ["### Warnings", ""]
            lines += [f"- {r.claim_id}: {r.warnings}" for r in warned.itertuples()]
            lines.append("")
        sampled = listed(runs, "samples")
        if sampled:
            lines += ["### Disturbed samples", "", SAMPLES, "", *sampled, ""]
        others = listed(runs, "other_runs")
        if others:
            lines += ["### Other runs on the same hardware", "", OTHER_RUNS, "", *others, ""]
    lines += ["## What each claim says and how it is judged", ""]
    for claim in claims:
        lines.append(
            f"- **{claim.id} `{claim.slug}`** ({claim.source}): "
            f"{claim.statement} Article: {claim.article}."
        )
        for part in claim.parts:
            at = f" at {part.size}" if part.size is not None else ""
            lines.append(
                f"  - {part.kind} `{part.name}`{at}: holds if {part.holds_if or CHECKED}"
                + (f" ({part.why})" if part.why else "")
                + _article(part)
                + f"; article's code `{part.code}`"
            )
    lines += ["", "## How the values and confidences are computed", ""]
    lines += [f"{COMPUTED} More: [docs/statistics.md]({docs}/statistics.md)."]
    return "\n".join(lines) + "\n"
