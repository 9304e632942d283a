"""What claims.md says of a run's processes: the host and its state, where the measuring time
went, and what waking another core cost: what a reader needs before trusting the run's
times on another machine, or comparing two runs' times.
"""

import pandas as pd

from blockbench.measure import core_speed
from blockbench.present.verdict_tables import markdown_table
from blockbench.records import timeline
from blockbench.records.layout import PROCESS
from blockbench.records.machines import HOST_KIND


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
    lines = markdown_table(table)
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
