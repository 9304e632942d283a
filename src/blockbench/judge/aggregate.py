"""From measurement JSON to pandas tables: processes, cells, and speedups.

Each cell is measured by several worker processes (`repeats`), one JSON each. The process
table keeps one row per (cell, process, phase) with its raw samples; the cell table
summarises a cell's processes: the geometric mean of their medians with its interval
(blockbench.judge.uncertainty says how), and how far the processes disagree. Runs from other
machines (a GPU cluster's run copied back, a committed reference run) are just more JSON:
every row carries its run label and the model of the device it ran on.
"""

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from blockbench.errors import InputError
from blockbench.judge import uncertainty
from blockbench.measure import provenance
from blockbench.measure.stats import kept_samples, wilson
from blockbench.records import timeline
from blockbench.records.layout import CELL, PROCESS
from blockbench.records.machines import GPU_KIND, HOST_KIND
from blockbench.records.store import SCHEMA_VERSION, SchemaError, read_json, validate
from blockbench.workloads import registry
from blockbench.workloads.matmul import BELOW_FLOAT32
from blockbench.workloads.registry import WORKLOADS, impls_of

# What the steady and speedup tables show of each cell besides its times
SHOWN = [*CELL, "jax_version", "device_model", "device_label", "blas_kernel"]
STAT_COLUMNS = [
    "median_s",
    "min_s",
    "max_s",
    "mean_s",
    "std_s",
    "iqr_s",
    "n",
    "loops",
    "converged",
    "stop",
    "samples_s",
    "n_all",
    "median_all_s",
    "clean_median_s",
    "kept",
    "faults_per_call",  # absent (None) in records before method version 5
]
# What the kernel said of a process's samples (blockbench.measure.disturbance), per process.
DISTURBANCE_COLUMNS = ["disturbed", "outside", "inside", "slow", "kept_s"]
# Per process, not per cell: left out of the cell table (which has its own versions).
PER_PROCESS = [
    *STAT_COLUMNS,
    *DISTURBANCE_COLUMNS,
    "repeat",
    "block",
    "source",
    "started_at",
    "finished_at",
    "warnings",
    "core_windows",
    "handoff_s",
    "job_start",
    *(f"time_{key}" for key in timeline.COMPONENTS),
]


class ResultFileError(InputError):
    """A raw file that is not a blockbench measurement; the message names it and says why."""


def read_record(path: Path) -> dict[str, Any]:
    """One measurement, or ResultFileError naming the file and the reason in one line."""
    try:
        record = read_json(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultFileError(f"{path}: not a readable JSON file ({exc})") from exc
    version = record.get("schema_version") if isinstance(record, dict) else None
    if isinstance(version, int) and version != SCHEMA_VERSION:
        raise ResultFileError(
            f"{path}: measurement schema version {version}, this blockbench reads version "
            f"{SCHEMA_VERSION}: measure that run again with this version"
        )
    try:
        validate(record)
    except SchemaError as exc:
        raise ResultFileError(f"{path}: not a blockbench measurement (schema): {exc}") from exc
    return record


def _get(d: dict[str, Any] | None, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


# threadpoolctl's names of the BLAS libraries, as a reader knows them
BLAS_NAMES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS"}


def cell_blas(record: dict[str, Any]) -> str | None:
    """'OpenBLAS SkylakeX' (the library and the kernel threadpoolctl saw it run), for a cell
    that times NumPy's BLAS; None for any other cell or where nothing was read."""
    impl = impls_of(record["cell"]["workload"]).get(record["cell"]["impl"])
    ran = provenance.blas_kernel(record["provenance"])
    if impl is None or not impl.blas or ran is None:
        return None
    library, kernel = ran
    return f"{BLAS_NAMES.get(library, library)} {kernel}"


def workload_columns(record: dict[str, Any], source: Path) -> dict[str, Any]:
    """The work a cell's size stands for, and the module that declared its workload as the
    worker ran it (None: a record older than catalogs' own workloads, blockbench's own)."""
    cell, module = record["cell"], record.get("workload_source") or {}
    if cell["workload"] not in WORKLOADS:
        raise ResultFileError(
            f"{source}: workload {cell['workload']!r} is declared by no catalog the run names"
            f" (the record's: {module.get('catalog') or 'blockbench'}); name its catalog in"
            " `claims`"
        )
    return {
        "work": WORKLOADS[cell["workload"]].work(cell["size"]),
        "catalog": module.get("catalog"),
        "module_sha256": module.get("sha256"),
    }


def cell_columns(record: dict[str, Any], source: Path) -> dict[str, Any]:
    """The columns every row of a cell shares: identity, status, check, key provenance."""
    prov = record["provenance"]
    cell = record["cell"]
    model = str(_get(prov, "device", "model") or "not present")
    nvml = _get(prov, "device", "nvml") or {}
    threads = prov.get("threads") or {}
    return {
        "run_label": prov["config"]["run_label"],
        # the measuring method (records.spec.METHOD_VERSION); records before it was kept: 1
        "method_version": record.get("method_version", 1),
        # this process's reading of its cores' speed (measure.core_speed), where it has one
        "core_windows": prov["core_speed"] if isinstance(prov.get("core_speed"), list) else [],
        # its hand-off between two cores after its samples (measure.core_speed.handoff_reading)
        "handoff_s": _get(prov, "handoff", "across_s"),
        **cell,
        "repeat": record["repeat"],
        **workload_columns(record, source),
        "device_model": model,
        "device_label": f"{cell['device']} ({model})",
        "status": record["status"],
        "reason": record["reason"],
        "warnings": "; ".join(record["warnings"]),
        "other_load": _get(record, "host_load", "other_cores"),
        "other_processes_load": _get(record, "host_load", "other_processes_cores"),
        "block": _get(prov, "config", "block") or "",
        # the run's stopping rule: the first stage's rounds (Stein's interval reads them; 0: a
        # fixed design) and the rule's settings (blockbench.judge.stopping)
        "first_rounds": _get(prov, "config", "first_rounds") or 0,
        "max_rounds": _get(prov, "config", "max_rounds") or 0,
        "design": _get(prov, "config", "design") or "",
        "cores": threads.get("n_cores"),
        "blas_threads": threads.get("blas_threads"),
        # the kernel NumPy's BLAS ran, where the cell's time is NumPy's BLAS (Impl.blas)
        "blas_kernel": cell_blas(record),
        "xla_threads": threads.get("xla_threads"),
        "thread_parity": threads.get("parity"),
        "max_rel_err": _get(record, "check", "max_rel_err"),
        "check_passed": _get(record, "check", "passed"),
        # the precision its float32 products ran in, where its workload probes it
        # (blockbench.workloads.matmul.precision): a claim of float32 is not judged below it
        "product_precision": _get(record, "check", "matmul_precision_measured"),
        "hostname": prov["host"]["hostname"],
        "cpu_model": prov["host"]["cpu_model"],
        # which host, beyond its kind: a between-run study is of one (judge.studies)
        **{k: _answer(prov["host"].get(k)) for k in ("host_id", "cpu_signature")},
        "host_cpus": prov["host"].get("cpu_count_logical"),
        # the state the host measured in (blockbench.measure.host_power; None: not told)
        "power": _get(record, "host_state", "before", "power"),
        "boost": _get(record, "host_state", "before", "boost"),
        "state_warnings": "; ".join(w for w in record["warnings"] if w.startswith("host state:")),
        "gpu_name": nvml.get("name"),
        "gpu_driver": nvml.get("driver"),
        # the release the cell was planned for (a run's JAX-version axis), and what its
        # worker imported (blockbench.pipeline.versions)
        "jax_version": _get(prov, "config", "jax_version") or prov["software"]["packages"]["jax"],
        "jax_imported": _get(prov, "jax", "imported", "jax"),
        "jaxlib_version": prov["software"]["packages"].get("jaxlib"),
        "numpy_version": prov["software"]["packages"].get("numpy"),
        "matmul_precision": _get(prov, "jax", "matmul_precision"),
        "git_commit": prov["git"]["commit"],
        "slurm_job_id": _get(prov, "slurm", "job_id"),
        "started_at": record["started_at"],
        "finished_at": record["finished_at"],
        # where the process's wall time went (blockbench.records.timeline)
        "job_start": _get(record, "timeline", "job_start"),
        **{
            f"time_{key}": seconds
            for key, seconds in timeline.components(
                record.get("timeline") or {}, timeline.timed_s(record["phases"])
            ).items()
        },
        "source": str(source),
    }


def processes(files: Iterable[Path], labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per (cell, process, phase), raw samples included; a process without phases
    (not ok) still gets one row. `labels` shows the files under a directory under another
    run label (a merged run's `DIR=LABEL`, blockbench.records.layout.run_dir)."""
    rows = []
    given = {Path(d).resolve(): label for d, label in (labels or {}).items()}
    for path in files:
        record = read_record(path)
        base = cell_columns(record, path)
        found = Path(path).resolve()
        for directory, label in given.items():
            if found.is_relative_to(directory):
                base["run_label"] = label
        if not record["phases"]:
            rows.append({**base, "phase": None})
        for phase, stats in record["phases"].items():
            rows.append(
                {
                    **base,
                    "phase": phase,
                    **{k: stats.get(k) for k in STAT_COLUMNS},
                    **disturbance_columns(stats),
                }
            )
    df = pd.DataFrame(rows)
    if df.empty:
        raise ValueError("no measurement files found")
    clash = df[df.duplicated([*PROCESS, "phase"], keep=False)]
    if not clash.empty:
        first = clash.iloc[0]
        same = (clash[PROCESS] == first[PROCESS]).all(axis=1)
        files = sorted(set(clash[same]["source"]))
        raise ResultFileError(
            f"cell {'/'.join(str(first[c]) for c in CELL)} (process {first['repeat']}) comes "
            f"from several files ({', '.join(files)}): give each merged run its own label "
            "(merge: DIR=LABEL)"
        )
    _one_method_per_run(df)
    _one_module_per_workload(df)
    _one_host_kind_per_run(df)
    return df.sort_values([*PROCESS, "phase"], na_position="first").reset_index(drop=True)


def _one_method_per_run(df: pd.DataFrame) -> None:
    """A run label measured by two versions of the method (an update between an interrupted
    run and its resumption, say) would mix what two methods measured in one interval."""
    for label, run in df.groupby("run_label"):
        first = run.drop_duplicates("method_version").sort_values("method_version")
        if len(first) > 1:
            a, b = first.iloc[0], first.iloc[-1]
            raise ResultFileError(
                f"run {label} mixes method versions {a['method_version']} ({a['source']}) and "
                f"{b['method_version']} ({b['source']}): measure it again under a new "
                "run_label, or delete its results/raw folder (docs/method.md)"
            )


def _one_module_per_workload(df: pd.DataFrame) -> None:
    """A run label whose processes ran two texts of one workload's module (a module edited
    between an interrupted run and its resumption, say) would pool two programs' times."""
    hashed = df.dropna(subset=["module_sha256"]).drop_duplicates(
        ["run_label", "workload", "module_sha256"]
    )
    for (label, workload), run in hashed.groupby(["run_label", "workload"]):
        if len(run) > 1:
            a, b = run.iloc[0], run.iloc[1]
            raise ResultFileError(
                f"run {label} measured two versions of workload {workload}'s module "
                f"(sha256 {a['module_sha256'][:12]} in {a['source']}, {b['module_sha256'][:12]}"
                f" in {b['source']}): measure it again under a new run_label"
            )


def unchanged_modules(proc: pd.DataFrame) -> None:
    """At the rounds decision: every workload module the first stage ran still reads as it
    did (blockbench.workloads.registry.current_sha256), so the added rounds run the same
    program; one edited since is refused, naming its file, rather than mixed."""
    for row in proc.dropna(subset=["module_sha256"]).drop_duplicates("workload").itertuples():
        now = registry.current_sha256(row.workload)
        if now != row.module_sha256:
            raise ResultFileError(
                f"{registry.source_of(row.workload).file}: changed since the run's first stage "
                f"measured it (sha256 {row.module_sha256[:12]} then, {now[:12]} now): restore "
                "it, or measure it again under a new run_label"
            )


def _one_host_kind_per_run(df: pd.DataFrame) -> None:
    """A run whose cells were measured on two kinds of host (a cluster's partitions, say)
    would divide one machine's times by another's: the CPU model and count of every measured
    cell, and the GPU model of every GPU cell, are one per run label."""
    ok = df[df["status"] == "ok"]
    for label, run in ok.groupby("run_label"):
        for kind, rows in ((HOST_KIND, run), (GPU_KIND, run[run["device"] == "gpu"])):
            first = rows.drop_duplicates(kind)
            if len(first) > 1:
                a, b = first.iloc[0], first.iloc[1]
                said = [", ".join(str(x[k]) for k in kind) for x in (a, b)]
                raise ResultFileError(
                    f"run {label} was measured on two kinds of host, {said[0]} "
                    f"({a['source']}) and {said[1]} ({b['source']}): give each its own "
                    "run_label, or keep a run on one node kind (docs/slurm.md)"
                )


def disturbance_columns(stats: dict[str, Any]) -> dict[str, Any]:
    """Counts of disturbed samples (None where the record has no kernel counters), of the
    slow mode, and the samples the statistics stand on (`kept_s`)."""
    dist = stats.get("disturbance") or {}
    slow = stats.get("slow_mode") or {}
    return {
        "disturbed": dist.get("outside"),  # from outside; "inside" counted apart
        "outside": dist.get("outside"),
        "inside": dist.get("inside"),
        "slow": slow.get("n"),
        "kept_s": kept_samples(stats),
    }


def _share(name: str, counts: pd.Series, totals: pd.Series) -> dict[str, float | None]:
    """Pooled share of samples over a cell's processes, with its Wilson CI, as the columns
    `<name>_fraction`, `<name>_ci_low` and `<name>_ci_high`."""
    known = counts.notna()
    if not known.any():
        share, low, high = None, float("nan"), float("nan")
    else:
        k, n = int(counts[known].sum()), int(totals[known].sum())
        low, high = wilson(k, n)
        share = k / n if n else None
    return {f"{name}_fraction": share, f"{name}_ci_low": low, f"{name}_ci_high": high}


def _answer(value: Any) -> str | None:
    """A probe's answer as text; None where it had none (absent, or why it failed)."""
    return value if isinstance(value, str) else None


def _phase_row(shared: dict[str, Any], phase: str, p: pd.DataFrame) -> dict[str, Any]:
    """One cell and phase from its processes: the estimate, its CI, their disagreement."""
    samples = [np.asarray(x, dtype=float) for x in p["kept_s"]]
    first = int(p["first_rounds"].min()) if "first_rounds" in p else 0
    log = uncertainty.of_cell(samples, p["repeat"].to_numpy(int), first)
    estimate = math.exp(log.estimate)
    low, high = (math.exp(x) for x in log.interval())
    medians = p["median_s"].astype(float)
    totals = p["n_all"].fillna(p["n"]).astype(int)
    faults = pd.to_numeric(p.get("faults_per_call", pd.Series(dtype=float)), errors="coerce")
    return {
        **shared,
        "phase": phase,
        "median_s": estimate,
        "ci95_low_s": low,
        "ci95_high_s": high,
        "min_s": float(p["min_s"].min()),
        "n": int(p["n"].sum()),
        "n_min": int(p["n"].min()),
        "processes": len(p),
        "process_spread": float((medians.max() - medians.min()) / estimate),
        "loops": int(p["loops"].max()),
        "stop": ",".join(sorted(set(p["stop"]))),
        "n_all": int(totals.sum()),
        **_share("disturbed", p["disturbed"], totals),
        "outside": p["outside"].sum(min_count=1),
        "inside": p["inside"].sum(min_count=1),
        **_share("inside", p["inside"], totals),
        **_share("slow", p["slow"], totals.where(p["slow"].notna())),
        # page faults a call, fewest and most over the processes: a wide range is a cell
        # whose processes ran in different allocator modes (docs/measuring-traps.md)
        "faults_min": faults.min(),
        "faults_max": faults.max(),
    }


def cells(proc: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, phase): the summary of its processes. A cell is `ok` when one
    process is; the others' statuses become warnings, never silently dropped."""
    rows = []
    for _, g in proc.groupby(CELL, sort=True):
        ok = g[g["status"] == "ok"]
        first = (ok if not ok.empty else g).iloc[0]
        shared = {k: v for k, v in first.items() if k not in (*PER_PROCESS, "phase")}
        by_process = g.drop_duplicates("repeat")
        notes = [w for w in by_process["warnings"] if w]
        bad = by_process[by_process["status"] != "ok"]
        if not ok.empty and not bad.empty:
            notes += [
                f"process {r.repeat} of {len(by_process)} is {r.status}: {r.reason}"
                for r in bad.itertuples()
            ]
        shared["warnings"] = "; ".join(dict.fromkeys(notes))
        for most in ("max_rel_err", "other_load", "other_processes_load"):  # any process's
            shared[most] = g[most].max()
        checks = by_process["check_passed"].dropna()
        shared["check_passed"] = bool(checks.astype(bool).all()) if len(checks) else None
        # one process's products below float32 is the cell's: no part is judged on it
        readings = set(by_process.get("product_precision", pd.Series()).dropna())
        low = BELOW_FLOAT32 in readings
        shared["product_precision"] = BELOW_FLOAT32 if low else next(iter(readings), None)
        if ok.empty:
            rows.append({**shared, "phase": None, "processes": 0})
            continue
        # a process that timed out still finished some phases: they count, or the slowest
        # processes would drop out of the estimate and bias it fast
        usable = g[g["status"].isin(["ok", "timeout"]) & g["phase"].notna()]
        for phase, p in usable.groupby("phase", sort=False):
            rows.append(_phase_row(shared, phase, p))
    return (
        pd.DataFrame(rows).sort_values([*CELL, "phase"], na_position="first").reset_index(drop=True)
    )


def steady(df: pd.DataFrame) -> pd.DataFrame:
    """Steady-state medians of the cells that measured fine."""
    ok = df[(df["status"] == "ok") & (df["phase"] == "steady")]
    return ok[[*SHOWN, "median_s", "ci95_low_s", "ci95_high_s"]]


def speedup_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Each implementation against its workload's CPU baseline, same run, workload and size,
    as the ratio of the two cells' values (run_view.speedups pairs it as the claims do).

    speedup > 1 means faster than the baseline (NumPy on the CPU where the workload has one).
    """
    st = steady(df)
    baselines = {name: w.baseline for name, w in WORKLOADS.items()}
    base = st[(st["device"] == "cpu") & (st["impl"] == st["workload"].map(baselines))]
    base = base[["run_label", "workload", "size", "impl", "median_s"]].rename(
        columns={"impl": "baseline", "median_s": "baseline_median_s"}
    )
    out = st.merge(base, on=["run_label", "workload", "size"], how="inner")
    out["speedup"] = out["baseline_median_s"] / out["median_s"]
    cols = [*SHOWN, "baseline", "median_s", "baseline_median_s", "speedup"]
    return out[cols].sort_values(CELL).reset_index(drop=True)
