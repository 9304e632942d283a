"""The claims report a reader opens first (results/claims.md): rendering only.

Verdicts and parts come from blockbench.judge.verdicts; this module decides how they read: a
legend short enough to read before the table, the verdict, the measured figure next to the
article's, the setup it was measured at against the article's, and what to distrust (few
samples, unequal threads), with the method at the end and in docs/statistics.md.
"""

import os
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge.aggregate import HOST_KIND, PROCESS
from blockbench.judge.between_runs import MIN_UNSTUDIED
from blockbench.judge.claim_rules import HOLDS
from blockbench.judge.part_evaluators import LOOK_CONFIDENCE
from blockbench.judge.part_result import NOT_RUN
from blockbench.judge.studies import MIN_PROCESS_VALUES
from blockbench.judge.verdicts import NO_CONFIDENCE, fmt, value_ci
from blockbench.measure import core_speed
from blockbench.present import stops
from blockbench.records import timeline
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


def _verdicts(runs: pd.DataFrame, parts: pd.DataFrame) -> list[str]:
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
    return _markdown_table([head.split(", "), *rows])


def _unstated(runs: pd.DataFrame) -> list[str]:
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


def _notes(runs: pd.DataFrame, parts: pd.DataFrame, own: dict[str, str]) -> list[str]:
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


def _parts(parts: pd.DataFrame) -> list[str]:
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
    return _markdown_table([head.split(", "), *rows])


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


def _pooled_rows(
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


def _markdown_table(rows: list[list[Any]]) -> list[str]:
    """A pipe table through tabulate (as DataFrame.to_markdown writes the other tables); each
    cell through _cell first, since tabulate does not escape a `|` inside a cell."""
    head, *body = rows
    frame = pd.DataFrame([[_cell(c) for c in row] for row in body], columns=head)
    return frame.to_markdown(index=False, tablefmt="pipe", disable_numparse=True).splitlines()


def _rst_table(rows: list[list[str]]) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in rows:
        lines += [f"   * - {row[0]}", *(f"     - {c}" for c in row[1:])]
    return lines


def _between(runs: pd.DataFrame) -> list[str]:
    """What this run's intervals cover (the between-run study, or this run only)."""
    if "between_run" not in runs:
        return []
    said = sorted({s for s in runs["between_run"].dropna() if s})
    return [f"Intervals: {'; '.join(said)}.", ""] if said else []


def _release(runs: pd.DataFrame) -> str:
    """The JAX release a run measured (each release is a run of its own)."""
    return f", JAX {runs['jax_version'].iloc[0]}" if "jax_version" in runs else ""


def _listed(runs: pd.DataFrame, column: str) -> list[str]:
    """A bullet per claim with something in `column` (a column older tables may lack)."""
    if column not in runs:
        return []
    return [f"- {r.claim_id}: {r[column]}" for _, r in runs.iterrows() if r[column]]


def _article(part: dict[str, Any]) -> str:
    """The article's figure for a part, as named in its catalog's figures.yaml and as a number."""
    if "article_expression" not in part:
        return ""
    value = f" = {fmt(part['article'])}" if part.get("article") is not None else ""
    return f", article `{part['article_expression']}`{value} ({part['article_says']})"


def to_rst(table: pd.DataFrame, parts: pd.DataFrame, first: str = "") -> str:
    """The verdicts as reStructuredText tables, the run labelled `first` (this run) on top:
    what the HTML report opens on."""
    labels = sorted(table["run_label"].unique(), key=lambda label: (label != first, label))
    out = []
    for runs, rows in pools(table):
        out += [f"**Pooled** over runs {', '.join(runs)}", "", POOLED, ""]
        out += [*_rst_table(_pooled_rows(table, runs, rows, "``")), ""]
    for run_label in labels:
        mine = table[table["run_label"] == run_label]
        out += [
            f"**Run** ``{run_label}``{_release(mine)}"
            + (" (this run)" if run_label == first else ""),
            "",
        ]
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
            for r in mine.itertuples()
        ]
        out += [*_rst_table(rows), "", *_unstated(mine), *_between(mine)]
        sampled = _listed(mine, "samples")
        if sampled:
            out += [SAMPLES, "", *sampled, ""]
        others = _listed(mine, "other_runs")
        if others:
            out += [OTHER_RUNS, "", *others, ""]
    return "\n".join(out) + "\n"


def measured_on(processes: pd.DataFrame) -> str:
    """The kind of host a run measured on, and its state: what a reader needs before trusting
    the run's times on another machine."""
    kind = processes.drop_duplicates(HOST_KIND).iloc[0]
    gpus = sorted({str(g) for g in processes.get("gpu_name", pd.Series()).dropna() if g})
    host = f"{kind['cpu_model']}, {kind['host_cpus']} logical CPUs" + (
        f", {', '.join(gpus)}" if gpus else ""
    )
    told = {
        "power": sorted({str(v) for v in processes.get("power", pd.Series()).dropna()}),
        "boost": sorted(
            {"on" if v else "off" for v in processes.get("boost", pd.Series()).dropna()}
        ),
    }
    state = "; ".join(f"{k} {'/'.join(v)}" for k, v in told.items() if v)
    kernels = sorted(set(processes.get("blas_kernel", pd.Series(dtype=str)).dropna()))
    if kernels:
        host += f"; NumPy's BLAS ran {' and '.join(kernels)}"
    warned = processes.get("state_warnings", pd.Series(dtype=str)).fillna("")
    cells = processes[warned != ""].drop_duplicates(["run_label", *PROCESS])
    said = sorted({w for ws in warned[warned != ""] for w in ws.split("; ")})
    lines = [f"Measured on {host}; state: {state or 'not told by this kernel (a VM, say)'}."]
    if said:
        lines.append(
            f"**Warning: {len(cells)} process(es) measured in a state that changes speed** "
            f"({'; '.join(w.removeprefix('host state: ') for w in said)}): their times are "
            "not the machine's at full speed."
        )
    return " ".join(lines)


def time_spent(processes: pd.DataFrame) -> str:
    """Where a run's measuring time went: its first stage, the rounds its claims asked for
    on demand (by block), and the share of it inside timed calls; what tells a reader why one
    run of the same grid took a minute longer than another."""
    jobs = processes.drop_duplicates(PROCESS).dropna(subset=["started_at", "finished_at"])
    if jobs.empty:
        return ""
    jobs = jobs.assign(wall=jobs["finished_at"] - jobs["started_at"])
    first_rounds = jobs["first_rounds"].where(jobs["first_rounds"] > 0)  # 0: not recorded
    added = jobs[jobs["repeat"] >= first_rounds.fillna(jobs["repeat"] + 1)]
    first = jobs.drop(added.index)
    timed = jobs["time_timed"].sum()  # records.timeline: a cell that did not run has none
    span = jobs["finished_at"].max() - jobs["started_at"].min()
    text = (
        f"Time: {len(jobs)} worker processes measured for {span:.0f} s ({timed:.0f} s of it, "
        f"{timed / span if span else 0:.0%}, inside timed calls): the first stage, "
        f"{len(first)} processes, {first['wall'].sum():.0f} s"
    )
    if added.empty:
        return text + "; no claim asked for more rounds."
    own = added["workload"] + "@" + added["size"].astype(str)  # a lone cell's block is ""
    block = added["block"].where(added["block"].fillna("") != "", own).str.split(":").str[0]
    by = added.groupby(block)["wall"].agg(["size", "sum"]).sort_values("sum", ascending=False)
    blocks = ", ".join(
        f"{r.Index.replace('@', ' at ')} ({r.size} processes, {r.sum:.0f} s)"
        for r in by.itertuples()
    )
    return text + f"; {len(added)} more processes on demand, {added['wall'].sum():.0f} s: {blocks}."


# A pause longer than this between two processes is not the workflow's doing (a run stopped
# and resumed, another job holding the measurement lock): left out of the time between them.
PAUSE_S = 60.0


def time_table(processes: pd.DataFrame) -> list[str]:
    """Where the run's measuring time went, component by component, from each process's own
    stamps (blockbench.records.timeline): what a change to how a process starts saves shows
    here, run against run."""
    jobs = processes.drop_duplicates(PROCESS).sort_values("job_start")
    if "job_start" not in jobs or jobs["job_start"].isna().all():
        return []
    between = (jobs["job_start"] - jobs["finished_at"].shift()).iloc[1:]
    pauses = int((between > PAUSE_S).sum())
    between = between[(between >= 0) & (between <= PAUSE_S)]
    rows = [["between two processes: Snakemake, the rounds checkpoint", between]]
    rows += [
        [label, jobs[f"time_{key}"].dropna()] for key, (label, _) in timeline.COMPONENTS.items()
    ]
    total = sum(float(v.sum()) for _, v in rows)
    table = [["component", "seconds", "share", "median a process"]]
    for label, values in rows:
        share = float(values.sum()) / total if total else 0.0
        median = f"{values.median():.3f}" if len(values) else ""
        table.append([label, f"{values.sum():.1f}", f"{share:.0%}", median])
    lines = _markdown_table(table)
    if pauses:
        lines += ["", f"{pauses} pause(s) of more than {PAUSE_S:.0f} s between processes left out."]
    return lines


def handoffs(processes: pd.DataFrame) -> str:
    """What waking another core cost in a run's processes (core_speed.handoff_reading), and
    which cells had processes that ran while it was slow: on a VM that is what moves a
    microsecond call from one process to the next, where no core changes speed. A process is
    compared with its own cell's: what it ran last decides whether the other core was still
    awake (about 25 µs after a product on both cores, 45 µs after a small call, on a 2-core
    EPYC VM), so a run's fastest process says nothing of another cell's."""
    jobs = processes.drop_duplicates(PROCESS)
    read = jobs[jobs["handoff_s"].notna()] if "handoff_s" in jobs else jobs.iloc[:0]
    if read.empty:
        return ""
    named = read["workload"] + " " + read["impl"] + " at " + read["size"].astype(str)
    named += read["device"].map(lambda d: "" if d == "cpu" else f" on {d}")
    by_cell = read.groupby(named)["handoff_s"]
    fast = by_cell.transform(lambda s: core_speed.fast_and_slow(s.tolist())[0])
    late = (by_cell.transform("size") > 1) & (read["handoff_s"] > core_speed.SLOW_FACTOR * fast)
    low, high = (f"{t * 1e6:.0f}" for t in (fast.min(), fast.max()))
    text = (
        f"Hand-offs between two cores (a byte to a thread on the other core and back, read in "
        f"each process after its samples): {read['handoff_s'].median() * 1e6:.0f} µs in the "
        f"median process of {len(read)}, each cell's fastest "
        f"{low if low == high else f'{low} to {high}'} µs (what a process ran last leaves the "
        "other core awake or not)"
    )
    if not late.any():
        return text + f"; no process over {core_speed.SLOW_FACTOR}x its cell's fastest."
    share = late.groupby(named).agg(["sum", "size"])
    share = share[share["sum"] > 0].assign(of=lambda d: d["sum"] / d["size"])
    most = ", ".join(
        f"{r.Index} ({r.sum} of {r.size})"
        for r in share.sort_values(["of", "sum"], ascending=False).head(3).itertuples()
    )
    return text + (
        f"; {late.sum()} over {core_speed.SLOW_FACTOR}x their cell's fastest, most in {most}. "
        "A call of microseconds measured while it is slow can take longer "
        "(docs/measuring-traps.md)."
    )


def to_markdown(
    table: pd.DataFrame,
    parts: pd.DataFrame,
    claims: list[dict[str, Any]],
    processes: pd.DataFrame | None = None,
    docs: str = "../docs",
) -> str:
    """The claims report; with `processes`, each run names the host it measured on. `docs`:
    the documentation folder as a link from where the report is written (docs_from)."""
    own = {c["id"]: c.get("note", "") for c in claims}
    lines = ["# Claims: reproduced or not", "", *legend(docs), ""]
    for runs, rows in pools(table):
        lines += [f"## Runs pooled: {', '.join(f'`{r}`' for r in runs)}", "", POOLED, ""]
        lines += [*_markdown_table(_pooled_rows(table, runs, rows, "`")), ""]
    for run_label, runs in table.groupby("run_label", sort=True):
        lines += [f"## Run `{run_label}`{_release(runs)}", ""]
        procs = processes[processes["run_label"] == run_label] if processes is not None else None
        measured = procs is not None and not procs.empty
        if measured:
            lines += [measured_on(procs), ""]
        mine = parts[parts["run_label"] == run_label]
        lines += [*_between(runs), *_verdicts(runs, mine), ""]
        lines += [*_unstated(runs), *_notes(runs, mine, own)]
        handed = handoffs(procs) if measured else ""
        if handed:
            lines += [handed, ""]
        lines += ["### Every part, at the setup it was measured", ""]
        if "stopped" in mine and mine["stopped"].notna().any():
            lines += [ROUNDS, ""]
        lines += [*_parts(mine), ""]
        if measured:
            timing = time_table(procs)
            lines += ["### Where the measuring time went", "", time_spent(procs), "", *timing, ""]
        warned = runs[runs["warnings"].fillna("") != ""]
        if not warned.empty:
            lines += ["### Warnings", ""]
            lines += [f"- {r.claim_id}: {r.warnings}" for r in warned.itertuples()]
            lines.append("")
        sampled = _listed(runs, "samples")
        if sampled:
            lines += ["### Disturbed samples", "", SAMPLES, "", *sampled, ""]
        others = _listed(runs, "other_runs")
        if others:
            lines += ["### Other runs on the same hardware", "", OTHER_RUNS, "", *others, ""]
    lines += ["## What each claim says and how it is judged", ""]
    for claim in claims:
        lines.append(
            f"- **{claim['id']} `{claim['slug']}`** ({claim['source']}): "
            f"{claim['statement']} Article: {claim['article']}."
        )
        for part in claim["parts"]:
            rule = part.get("holds_if", "every cell passes its check")
            at = f" at {part['size']}" if "size" in part else ""
            lines.append(
                f"  - {part.get('kind', 'ratio')} `{part['name']}`{at}: holds if {rule}"
                + (f" ({part['why']})" if part.get("why") else "")
                + _article(part)
                + f"; article's code `{part['code']}`"
            )
    lines += ["", "## How the values and confidences are computed", ""]
    lines += [f"{COMPUTED} More: [docs/statistics.md]({docs}/statistics.md)."]
    return "\n".join(lines) + "\n"
