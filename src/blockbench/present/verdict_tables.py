"""The claims report's tables: each run's verdicts and parts, and runs pooled, cell by cell.

What a verdict, a value or a part's outcome reads as in a cell, and the Markdown and
reStructuredText tables they sit in; blockbench.present.claims_report lays the tables out
with the words around them.
"""

from typing import Any

import pandas as pd

from blockbench.judge.claim import HOLDS
from blockbench.judge.part_evaluators import LOOK_CONFIDENCE
from blockbench.judge.part_result import NOT_RUN
from blockbench.judge.verdicts import NO_CONFIDENCE, fmt, value_ci
from blockbench.present import stops

EMPTY = "–"  # an empty table cell ("-" would start a bullet list in reStructuredText)


def _cell(text: Any) -> str:
    return (
        ""
        if text is None or (isinstance(text, float) and pd.isna(text))
        else str(text).replace("|", "/")
    )


def _of(parts: pd.DataFrame, r: Any) -> pd.DataFrame:
    """The parts of claim row `r`, in its run."""
    return parts[(parts["run_label"] == r.run_label) & (parts["claim_id"] == r.claim_id)]


def _outcomes(parts: pd.DataFrame) -> list[str]:
    """Each measured part's outcome, marked where it was measured off the article's size."""
    ran = parts[parts["outcome"] != NOT_RUN]
    return [
        f"{o} (indicative)" if i else o
        for o, i in zip(ran["outcome"], ran["indicative"], strict=True)
    ]


def what_ran(parts: pd.DataFrame) -> str:
    """A claim not run, in the words of its verdict cell: '1 of 3 parts ran: it holds', so
    that a part's value does not read as the claim's ('' where nothing ran)."""
    said = _outcomes(parts)
    if not said:
        return ""
    ran = f"{len(said)} of {len(parts)} parts ran: "
    if set(said) == {HOLDS}:
        return ran + ("it holds" if len(said) == 1 else "all hold")
    return ran + ", ".join(dict.fromkeys(said))


def _confidence(said: Any) -> str:
    """A confidence as a verdict cell says it: the bound, or only that none is stated (the
    reason is the run's, said once under its table)."""
    said = _cell(said)
    return NO_CONFIDENCE if said.startswith(NO_CONFIDENCE) else said


def _verdict(r: Any, parts: pd.DataFrame) -> str:
    """'**reproduced** (>=97.5%)': a run's verdict with its confidence, where it has one, or
    for a claim not run what of it ran; `parts`: the claim's parts in the run."""
    said = what_ran(parts) if r.verdict == NOT_RUN else _confidence(getattr(r, "confidence", ""))
    return f"**{r.verdict}**" + (f" ({said})" if said else "")


def _value(r: Any) -> str:
    """A claim's value with its interval; none for a claim not run (its parts that ran are
    said in words)."""
    return "" if r.verdict == NOT_RUN else value_ci(r.measured, r.ci_low, r.ci_high)


def _headline(r: Any, parts: pd.DataFrame) -> str:
    """`_value`, with the part it is of where the claim has several (the report's table has
    no column of rules to name it in)."""
    value = _value(r)
    several = value and parts["part"].nunique() > 1
    return f"{value}: {_cell(r.metric)}" if several else value


def _rule(r: Any) -> str:
    """What decides a claim: the part its verdict rests on (the claims table's headline,
    blockbench.judge.verdicts.headline) and that part's rule."""
    rule = _cell(r.condition)
    return _cell(r.metric) + (f" ({rule})" if rule else "")


def without_marks(name: str) -> str:
    """A machine's name as a reader says it: 'Intel(R) Xeon(R) Processor' -> 'Intel Xeon
    Processor'."""
    return " ".join(name.replace("(R)", "").replace("(TM)", "").split())


def _on(r: Any) -> str:
    """Where a claim was measured: 'cpu: Intel Xeon Processor'."""
    return without_marks(_cell(r.device_model) or _cell(r.device))


def verdict_table(runs: pd.DataFrame, parts: pd.DataFrame) -> list[str]:
    head = "claim, verdict, measured [95% CI], article, what decides it (rule), setup, measured on"
    rows = [
        [
            f"{r.claim_id} `{r.slug}`",
            _verdict(r, _of(parts, r)),
            _value(r),
            fmt(r.article),
            _rule(r),
            r.setup,
            _on(r),
        ]
        for r in runs.itertuples()
    ]
    return markdown_table([head.split(", "), *rows])


def rst_verdict_table(runs: pd.DataFrame, parts: pd.DataFrame) -> list[str]:
    """A run's verdicts in reStructuredText, where the HTML report opens: the rule's column
    left out, the headline part named beside its value instead."""
    rows = [["claim", "verdict", "measured [95% CI]", "article", "measured on", "stopped"]]
    rows += [
        [
            f"{r.claim_id} ``{r.slug}``",
            _verdict(r, _of(parts, r)),
            _headline(r, _of(parts, r)) or EMPTY,
            fmt(r.article) or EMPTY,
            _on(r) or EMPTY,
            _cell(getattr(r, "stopped", "")) or EMPTY,
        ]
        for r in runs.itertuples()
    ]
    return rst_table(rows)


def unstated(runs: pd.DataFrame) -> list[str]:
    """Why a run states no confidence beside its verdicts, said once under its table."""
    if "confidence" not in runs:
        return []
    prefix = f"{NO_CONFIDENCE}: "
    said = sorted(
        {c.removeprefix(prefix) for c in runs["confidence"].dropna() if c.startswith(prefix)}
    )
    return [f"Beside this run's verdicts, {prefix}{'; '.join(said)}.", ""] if said else []


def _not_run(parts: pd.DataFrame) -> str:
    """A claim not run, in words: each part that ran with its value and outcome, then the
    parts not measured, by reason."""
    said = [
        f"`{p.part}`: {value_ci(p.measured, p.ci_low, p.ci_high)}, {outcome}"
        for p, outcome in zip(
            parts[parts["outcome"] != NOT_RUN].itertuples(), _outcomes(parts), strict=True
        )
    ]
    missing = parts[parts["outcome"] == NOT_RUN].groupby("detail", sort=False)["part"]
    if len(missing):
        why = ", ".join(f"{', '.join(f'`{n}`' for n in names)} ({d})" for d, names in missing)
        said.append(f"not run: {why}")
    return "; ".join(said)


def notes(runs: pd.DataFrame, parts: pd.DataFrame, own: dict[str, str]) -> list[str]:
    """The notes beneath a run's verdict table, a claim a line: why it was decided so (too
    long for a column), and for a claim not run what ran; `own`: each claim's own note."""
    lines = []
    for r in runs.itertuples():
        said = (
            "; ".join(x for x in (_not_run(_of(parts, r)), own.get(r.claim_id, "")) if x)
            if r.verdict == NOT_RUN
            else _cell(r.note)
        )
        if said:
            lines.append(f"- **{r.claim_id}**: {said}")
    return [*lines, ""] if lines else []


def _outcome(r: Any) -> str:
    """'holds, on its 97.5% interval 83.9 [55.9, 126]': a part's outcome, and the interval
    it was decided on where that is not its 95% CI (a look's: `decided_low`)."""
    said = f"{r.outcome} (indicative)" if r.indicative else r.outcome
    low = getattr(r, "decided_low", None)
    if low is None or pd.isna(low):
        return said
    return (
        f"{said}, on its {LOOK_CONFIDENCE:.1%} interval {value_ci(r.measured, low, r.decided_high)}"
    )


def parts_table(parts: pd.DataFrame) -> list[str]:
    head = (
        "claim, part, measured [95% CI], article, holds if, why this rule, outcome, setup, "
        "fewest samples, rounds (why it stopped), article's code, how it was measured"
    )
    rows = [
        [
            r.claim_id,
            r.part,
            value_ci(r.measured, r.ci_low, r.ci_high),
            fmt(r.article),
            r.condition,
            r.why,
            _outcome(r),
            r.setup,
            "" if pd.isna(r.n_min) else int(r.n_min),
            stops.said(
                getattr(r, "stopped", ""), getattr(r, "rounds", 0), getattr(r, "target", "")
            ),
            f"`{_cell(r.code)}`",
            r.detail,
        ]
        for r in parts.itertuples()
    ]
    return markdown_table([head.split(", "), *rows])


def pools(table: pd.DataFrame) -> list[tuple[list[str], pd.DataFrame]]:
    """Each group of pooled runs (their labels) with its rows, one per claim."""
    if "runs_pooled" not in table:
        return []
    pooled = table[table["runs_pooled"].fillna(1) > 1]
    out = []
    for runs, group in pooled.groupby(pooled["pool"], sort=True):
        first = group.drop_duplicates("claim_id")
        out.append((runs.split(" "), first))
    return out


def pooled_rows(
    table: pd.DataFrame, runs: list[str], rows: pd.DataFrame, code: str
) -> list[list[str]]:
    """Header and one row per claim: the pooled figures, then each run's own. `code` is
    the markup's inline-code quote (` in Markdown, `` in reStructuredText)."""
    out = [["claim", "pooled verdict", "pooled [95% CI]", "I^2", "tau"]]
    out[0] += [f"run {r}" for r in runs]
    for r in rows.itertuples():
        mine = [
            table[(table["run_label"] == label) & (table["claim_id"] == r.claim_id)].iloc[0]
            for label in runs
        ]
        # each value names its part where the pooled value and the runs' rest on others
        pooled_part = _cell(getattr(r, "pooled_metric", ""))  # older tables: none
        named = len({pooled_part, *(_cell(m.metric) for m in mine)} - {""}) > 1
        each = [
            f"{_value(m) or EMPTY}{f' {code}{m.metric}{code}' if named else ''} ({m.verdict})"
            for m in mine
        ]
        pooled = r.pooled_verdict if isinstance(r.pooled_verdict, str) else ""
        said = _confidence(getattr(r, "pooled_confidence", ""))
        out.append(
            [
                f"{r.claim_id} {code}{r.slug}{code}",
                f"**{pooled}**" + (f" ({said})" if said else "")
                if pooled
                else "too few runs to pool",
                EMPTY
                if pooled == NOT_RUN
                else (value_ci(r.pooled_value, r.pooled_ci_low, r.pooled_ci_high) or EMPTY)
                + (f" {code}{pooled_part}{code}" if named and pooled_part else ""),
                EMPTY if pd.isna(r.i2) else f"{r.i2:.0%}",
                fmt(r.tau) or EMPTY,
                *each,
            ]
        )
    return out


def markdown_table(rows: list[list[Any]]) -> list[str]:
    """A pipe table through tabulate (as DataFrame.to_markdown writes the other tables); each
    cell through _cell first, since tabulate does not escape a `|` inside a cell."""
    head, *body = rows
    frame = pd.DataFrame([[_cell(c) for c in row] for row in body], columns=head)
    return frame.to_markdown(index=False, tablefmt="pipe", disable_numparse=True).splitlines()


def rst_table(rows: list[list[str]]) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in rows:
        lines += [f"   * - {row[0]}", *(f"     - {c}" for c in row[1:])]
    return lines


def between(runs: pd.DataFrame) -> list[str]:
    """What this run's intervals cover (the between-run study, or this run only)."""
    if "between_run" not in runs:
        return []
    said = sorted({s for s in runs["between_run"].dropna() if s})
    return [f"Intervals: {'; '.join(said)}.", ""] if said else []


def release(runs: pd.DataFrame) -> str:
    """The JAX release a run measured (each release is a run of its own)."""
    return f", JAX {runs['jax_version'].iloc[0]}" if "jax_version" in runs else ""


def listed(runs: pd.DataFrame, column: str) -> list[str]:
    """A bullet per claim with something in `column` (a column older tables may lack)."""
    if column not in runs:
        return []
    return [f"- {r.claim_id}: {r[column]}" for _, r in runs.iterrows() if r[column]]
