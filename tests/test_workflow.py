"""The Snakemake workflow: config validation, lint, and a tiny grid end to end."""

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml
from hosts import ELSEWHERE_CPU, REFERENCE, run_elsewhere
from tiny import TINY, workflow_copy

from blockbench.errors import InputError
from blockbench.judge import aggregate, run_view
from blockbench.judge.between_runs import StudyPart
from blockbench.judge.studies import Study, study_path
from blockbench.measure import cores, provenance
from blockbench.measure.core_speed import FAKE_CORE_SPEED, STEADY
from blockbench.pipeline import cli_config, grid, kit_config, regenerate, run_order, stages
from blockbench.present import figure_names
from blockbench.records import layout
from blockbench.records.machines import Kind
from blockbench.records.methods import last_commit_of
from blockbench.records.store import read_json

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = grid.settings(TINY)  # each cell's processes (dot_xx: its block's 2)
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
DEFAULT = ROOT / "config/config.yaml"


def snakemake(cwd: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def first_stage(config: dict) -> int:
    """The jobs of a config's first stage: a block's cells take the most any of them asks."""
    claims = stages.read_claims(ROOT / "config/claims/articles")
    repeats = {c: s.repeats for c, s in grid.settings(config, claims).items()}
    units = run_order.units(grid.plan(config, claims), claims, repeats, config["max_rounds"])
    return sum(u["first"] * len(u["cells"]) for u in units.values())


@pytest.mark.slow
def test_default_config_passes_schema_and_dry_run(tmp_path):
    wf = workflow_copy(tmp_path)
    run = snakemake(wf, "-n", "--cores", "4")
    assert run.returncode == 0, run.stderr
    assert "measure" in run.stdout and "claims" in run.stdout
    # the first stage, and the checkpoint that may add rounds after it (rules/rounds.smk)
    first = first_stage(yaml.safe_load(DEFAULT.read_text()))
    assert re.search(rf"^measure\s+{first}$", run.stdout, re.M), run.stdout[-1500:]
    assert "checkpoint jobs, which will result in alteration of the DAG" in run.stdout
    # one release, no run merged: no figure of the claims against releases (one column)
    assert "claims_by_version" not in run.stdout


@pytest.mark.slow
def test_lint_is_clean_and_every_rule_has_a_log(tmp_path):
    run = snakemake(workflow_copy(tmp_path), "--lint")
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"devices": ["cpu", "xpu"]}, ["'xpu' is not one of", "devices"]),
        ({"sampling": {"target_rel_ci": 2}}, ["2 is greater than or equal", "target_rel_ci"]),
        (
            {"workloads": [{"name": "stencil", "impls": ["scan"], "sizes": [7]}]},
            ["workloads[0] (stencil).sizes: 7", "even"],
        ),
        (
            {"workloads": [{"name": "selu", "impls": ["numba"], "sizes": [10]}]},
            ["workloads[0] (selu).impls", "'numba'"],
        ),
        (
            {"workloads": [{"name": "softmax", "impls": ["jax"], "sizes": [10]}]},
            ["workloads[0] (softmax).name", "unknown workload 'softmax'", "known: "],
        ),
        ({"run_label": "a b"}, ["'a b' does not match", "run_label"]),
        ({"merge": ["no/such/run"]}, ["merge[0]", "no/such/run"]),
        (
            {
                "workloads": [
                    {"name": "selu", "impls": ["numpy"], "sizes": [10], "phases": ["compile"]}
                ]
            },
            ["workloads[0] (selu).phases", "has no phase that selu/numpy measures"],
        ),
        ({"threads": 0}, ["0 is less than the minimum of 1", "threads"]),
        ({"repeats": 0}, ["0 is less than the minimum of 1", "repeats"]),
        (
            {"precision_from_claims": "yes"},
            ["'yes' is not of type 'boolean'", "precision_from_claims"],
        ),
    ],
)
def test_invalid_config_fails_before_any_job_naming_key_and_value(tmp_path, override, named):
    wf = workflow_copy(tmp_path)
    (wf / "bad.yaml").write_text(yaml.safe_dump(override))
    run = snakemake(wf, "--cores", "1", "--configfile", "bad.yaml")
    assert run.returncode != 0
    for words in named:
        assert words in run.stdout + run.stderr, (words, run.stderr[-2000:])
    assert not (wf / "results").exists()


def test_grid_adds_the_articles_sizes_only_with_an_accelerator():
    config = {
        "devices": ["cpu"],
        "workloads": [
            {
                "name": "matmul",
                "impls": ["numpy", "jax"],
                "sizes": [100],
                "accelerator_sizes": [5000],
            }
        ],
    }
    assert {c.size for c in grid.cells(config)} == {100}
    cells = grid.cells({**config, "devices": ["cpu", "gpu"]})
    assert layout.Cell("cpu", "matmul", "numpy", 5000) in cells  # the baseline
    assert layout.Cell("gpu", "matmul", "jax", 5000) in cells
    assert layout.Cell("cpu", "matmul", "jax", 5000) not in cells
    assert not any(c.device == "gpu" and c.impl == "numpy" for c in cells)


@pytest.mark.slow
def test_a_users_workloads_add_cells_and_claim_sizes_none_leaves_them_alone(tmp_path):
    block = {"workloads": [{"name": "selu", "impls": ["numpy"], "sizes": [10]}], "repeats": 2}
    wf = workflow_copy(tmp_path, block)
    dry = snakemake(wf, "-n", "--configfile", "tiny.yaml").stdout
    assert "results/raw/local/cpu/selu/numpy/10/1.json" in dry  # beside the claims' cells
    assert "results/raw/local/cpu/matmul/numpy/5000/0.json" in dry
    (wf / "tiny.yaml").write_text(yaml.safe_dump({**block, "claim_sizes": "none"}))
    dry = snakemake(wf, "-n", "--configfile", "tiny.yaml").stdout
    counts = dict(line.split()[:2] for line in dry.splitlines() if line.startswith("measure"))
    assert counts == {"measure": "2"}  # one cell, two processes


def test_command_line_values_are_typed_as_a_file_would_type_them():
    cli = {
        "run_label": "x",  # top-level scalars: Snakemake typed numbers already, ...
        "check_gpu": "false",  # ... but not YAML's booleans
        "workloads": [{"name": "stencil", "impls": ["loop"], "sizes": ["8", "16"]}],
        "cluster": {"exclusive_cpu": "false", "gpu_model": "h100"},
        "sampling": {"max_time_s": "0.5"},
    }
    assert cli_config.typed_overrides(cli) == {
        "check_gpu": False,
        "workloads": [{"name": "stencil", "impls": ["loop"], "sizes": [8, 16]}],
        "cluster": {"exclusive_cpu": False, "gpu_model": "h100"},
        "sampling": {"max_time_s": 0.5},
    }


@pytest.mark.slow
def test_a_grid_given_on_the_command_line_runs_as_the_same_grid_in_a_file(tmp_path):
    """Snakemake hands nested --config values over as strings ('8'); they are typed."""
    wf = workflow_copy(tmp_path)
    run = snakemake(
        wf,
        "-n",
        "--config",
        "workloads=[{name: stencil, impls: [loop], sizes: [8], phases: [steady]}]",
        "cluster={exclusive_cpu: false}",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "results/raw/local/cpu/stencil/loop/8/0.json" in run.stdout


@pytest.mark.slow
def test_the_paper_config_lists_every_article_setup(tmp_path):
    run = snakemake(workflow_copy(tmp_path), "-n", "--configfile", "config/paper.yaml")
    assert run.returncode == 0, run.stderr[-2000:]
    for cell in (
        "cpu/dot_xx/jax/1000",
        *(f"cpu/matmul/{i}/{n}" for i in ("numpy", "jax") for n in (5000, 10000)),
        "cpu/matmul/jax_numpy_input/10000",
        "cpu/selu/numpy/1000000",
        "cpu/selu/jax/1000000",
        *(f"cpu/stencil/{i}/64" for i in ("loop", "convolve", "scan", "loop_jit")),
        *(f"cpu/stencil/loop_jit/{n}" for n in (8, 16, 32)),
    ):
        assert f"results/raw/paper/{cell}/0.json" in run.stdout, cell
    assert "results/raw/paper/cpu/matmul/numpy/2000/0.json" in run.stdout  # the sweep's
    paper = kit_config.load_config(ROOT / "config/paper.yaml")
    plan = grid.plan(paper, kit_config.claims(paper))
    large = ("host_to_device", "first_call", "steady")  # in the harness's order: B3's setting
    assert plan[layout.Cell("cpu", "matmul", "jax", 10000)] == large
    assert plan[layout.Cell("cpu", "matmul", "jax", 1000)] is None  # the sweep keeps every phase
    assert plan[layout.Cell("cpu", "stencil", "loop_jit", 16)] == ("compile",)  # D3's fit
    assert layout.Cell("cpu", "stencil", "loop_jit", 12) not in plan  # the default run's size


def test_two_blocks_that_measure_one_cell_two_ways_are_refused_naming_both():
    config = {
        "devices": ["cpu"],
        "workloads": [
            {"name": "selu", "impls": ["jax"], "sizes": [10], "phases": ["steady"]},
            {"name": "selu", "impls": ["jax"], "sizes": [10, 20], "phases": ["dispatch"]},
        ],
    }
    with pytest.raises(grid.ConfigError) as said:
        grid.plan(config)
    assert str(said.value) == (
        "cpu/selu/jax/10: config key workloads[0] (selu) sets phases ('steady',) and config "
        "key workloads[1] (selu) sets ('dispatch',); one cell is measured one way, so say it "
        "in one place"
    )
    config["workloads"][1]["phases"] = ["steady"]  # the same: one cell, once
    assert grid.plan(config) == {
        layout.Cell("cpu", "selu", "jax", 10): ("steady",),
        layout.Cell("cpu", "selu", "jax", 20): ("steady",),
    }


def test_a_blocks_repeats_and_sampling_keys_replace_the_runs_for_its_cells_only():
    config = {
        "devices": ["cpu"],
        "repeats": 3,
        "sampling": {"min_time_s": 0.05, "max_time_s": 0.3},
        "workloads": [
            {
                "name": "selu",
                "impls": ["jax"],
                "sizes": [10],
                "repeats": 6,
                "sampling": {"max_time_s": 1.2},
            },
            {"name": "selu", "impls": ["numpy"], "sizes": [10], "repeats": 2},
        ],
    }
    got = grid.settings(config)
    jax, numpy = layout.Cell("cpu", "selu", "jax", 10), layout.Cell("cpu", "selu", "numpy", 10)
    assert got[jax] == grid.Settings(6, {"min_time_s": 0.05, "max_time_s": 1.2})
    assert got[jax].per_process()["max_time_s"] == pytest.approx(0.2)  # the cell's, split
    assert got[numpy] == grid.Settings(2, {"min_time_s": 0.05, "max_time_s": 0.3})


def test_impl_sizes_must_name_a_listed_implementation():
    config = {
        "workloads": [
            {"name": "selu", "impls": ["numpy"], "sizes": [10], "impl_sizes": {"jax": [10]}}
        ]
    }
    with pytest.raises(grid.ConfigError, match=r"workloads\[0\] \(selu\).impl_sizes"):
        grid.check(config)


def test_default_profile_limits_measurements_to_one_per_host():
    profile = yaml.safe_load((ROOT / "profiles/default/config.yaml").read_text())
    assert profile["resources"]["measure_host"] == 1
    assert "measure_host=1" in (ROOT / "workflow/rules/measure.smk").read_text()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny grid, every workload and implementation, CPU and (absent) GPU, --cores 4,
    with a between-run study of this machine's kind, and a run of another kind merged in
    (a made-up CPU: no study, whatever machine runs the suite), made with the default label
    and merged under a label of its own (DIR=LABEL)."""
    config = {**TINY, "merge": ["reference/raw=elsewhere"], "between_run": "studies"}
    wf = workflow_copy(tmp_path_factory.mktemp("tiny"), config)
    run_elsewhere(wf / "reference/raw", "local")
    here = Kind(provenance.cpu_model(), psutil.cpu_count(logical=True))
    assert here.cpu_model != ELSEWHERE_CPU
    # every process reads its cores as steady (made up: the suite runs on any host)
    study = Study(here, [{"label": "a"}, {"label": "b"}], core_speed=STEADY)
    study.scope = "kind"  # any host of this kind: the suite runs on any machine
    for claim in stages.read_claims(ROOT / "config/claims/articles"):
        for part in claim.parts:
            # a spread wide enough to show in any run
            study.parts[(claim.id, part.name)] = StudyPart((0.0, 1.0), 3.0)
    study_path(wf / "studies", here).parent.mkdir()
    study_path(wf / "studies", here).write_text(study.to_yaml())
    env_lock = {"BLOCKBENCH_LOCK": str(wf / "measure.lock"), FAKE_CORE_SPEED: STEADY}
    run = subprocess.run(
        [*SNAKEMAKE, "--cores", "4", "--configfile", "tiny.yaml"],
        cwd=wf,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, **env_lock},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    (wf / "terminal.txt").write_text(run.stdout + run.stderr)
    return wf


@pytest.mark.slow
def test_each_finished_process_says_where_the_run_stands_in_terminal_and_log(tiny_run):
    """One line a process (blockbench.pipeline.progress): its place in its stage, its cell, its
    status and time, and the time the plan's model leaves, scaled by this run's pace."""
    said = (tiny_run / "terminal.txt").read_text()
    pattern = r"blockbench: \[(\d+)/(\d+)\] (\w+/\S+) process (\d+): (\w+) in [\d.]+ s; "
    lines = re.findall(pattern + r"(first stage|added rounds): about \d+ (?:s|min) left", said)
    records = layout.raw_files(tiny_run / "results/raw/tiny")
    assert len(lines) == len(records)
    first = [int(k) for k, _, _, _, _, stage in lines if stage == "first stage"]
    assert sorted(first) == list(range(1, int(lines[0][1]) + 1))
    for _, _, cell, repeat, status, _ in lines:
        log = tiny_run / f"logs/measure/tiny/{cell}/{repeat}.log"
        assert f"{cell} process {repeat}: {status} in " in log.read_text()


@pytest.mark.slow
def test_the_scheduler_patch_is_logged_once_and_kept_with_each_measurement(tiny_run):
    """Over a range of Snakemake versions the patch could stop applying unseen: the run's log
    says what it did, and every measurement records it."""
    line = "blockbench: Snakemake's re-scheduling timers: patched"
    logs = [p.read_text() for p in (tiny_run / ".snakemake/log").glob("*.log")]
    runs = [log for log in logs if "Finished jobid" in log]
    assert runs and all(log.count(line) == 1 for log in runs)
    records = list(layout.raw_files(tiny_run / "results/raw/tiny"))
    said = {read_json(r)["provenance"]["config"]["scheduler_patch"] for r in records}
    assert records and said == {"patched"}


def test_tiny_grid_produces_every_table_figure_and_claim(tiny_run):
    wf = tiny_run
    for name in (
        "measurements.csv",
        "measurements.parquet",
        "measurements.md",
        "speedups.csv",
        "speedups.md",
    ):
        assert (wf / "results/tables" / name).stat().st_size > 0
    for name in figure_names.names(["articles"]):
        for ext in ("png", "svg"):
            assert (wf / f"results/figures/{name}.{ext}").stat().st_size > 1000
    table = pd.read_csv(wf / "results/claims.csv")
    ids = [c.id for c in stages.read_claims(ROOT / "config/claims/articles")]
    for _, run in table.groupby("run_label"):
        assert sorted(run["claim_id"]) == sorted(ids)
    assert set(table["verdict"]) <= {"reproduced", "not_reproduced", "inconclusive", "not_run"}
    for column in ("claim_id", "verdict", "measured", "article", "device", "note"):
        assert column in table.columns
    assert "D2" in (wf / "results/claims.md").read_text()
    # the merged reference run is judged next to this one, under its own label
    assert set(table["run_label"]) == {"tiny", "elsewhere"}
    # this run's intervals include the study's between-run variance, the other run's do not
    said = table["between_run"].fillna("").groupby(table["run_label"]).agg(set)
    mine = said["tiny"] - {""}  # '': a claim with no interval (a check, or not run)
    assert len(mine) == 1, mine
    assert next(iter(mine)).startswith(
        "covers runs of this kind of machine over the span its study saw (2 runs of "
    )
    assert "out of sample: none yet" in next(iter(mine))
    assert "under 15 process values" not in next(iter(mine))  # steady: no slow mode to miss
    other = said["elsewhere"] - {""}
    assert other and all(
        s.startswith("covers this run's processes only: no between-run") for s in other
    )
    widened = table[(table["run_label"] == "tiny") & table["run_ci_low"].notna()]
    assert not widened.empty and (widened["ci_low"] <= widened["run_ci_low"]).all()
    assert (
        widened["ci_high"] - widened["ci_low"] > widened["run_ci_high"] - widened["run_ci_low"]
    ).any()
    assert (table["runs_pooled"] == 1).all()  # different machines: never pooled
    assert (
        "Intervals: covers runs of this kind of machine over"
        in (wf / "results/claims.md").read_text()
    )
    assert len(table) == 2 * len(ids)
    # and drawn next to it in every article figure, with the GPU slots this run lacks named
    for source in "ABCD":
        svg = (wf / f"results/figures/article_{source}.svg").read_text()
        assert "run tiny" in svg and "run elsewhere" in svg, source
    assert "not run: no GPU" in (wf / "results/figures/article_C.svg").read_text()


@pytest.mark.slow
def test_a_finished_run_measures_again_under_another_label(tiny_run):
    """Its tables exist, and the new label's way to them goes through a checkpoint not yet
    run: the new label's first stage is still measured (and then its rounds)."""
    run = snakemake(
        tiny_run, "-n", "--cores", "4", "--configfile", "tiny.yaml", "--config", "run_label=again"
    )
    assert run.returncode == 0, run.stderr[-2000:]
    first = sum(s.repeats for s in SETTINGS.values())
    counts = dict(re.findall(r"^(measure\w*)\s+(\d+)$", run.stdout, re.M))
    assert sum(map(int, counts.values())) == first, run.stdout[-1500:]
    assert re.search(r"^rounds\s+1$", run.stdout, re.M)


@pytest.mark.slow
def test_numpy_cells_under_snakemake_use_as_many_blas_threads_as_the_cell_has_cores(tiny_run):
    """Snakemake exports OMP/OPENBLAS_NUM_THREADS=1 to its jobs: NumPy must not inherit it."""
    records = [json.loads(p.read_text()) for p in layout.raw_files(tiny_run / "results/raw/tiny")]
    numpy_cells = [r for r in records if r["cell"]["impl"] == "numpy"]
    assert numpy_cells
    n = len(cores.allowed())
    for r in numpy_cells:
        threads = r["provenance"]["threads"]
        assert (threads["n_cores"], threads["blas_threads"]) == (n, n), r["cell"]
        assert threads["parity"], threads
    table = pd.read_csv(tiny_run / "results/tables/measurements.csv")
    assert table[table["run_label"] == "tiny"]["thread_parity"].dropna().all()


@pytest.mark.slow
def test_a_blocks_own_repeats_and_sampling_reach_its_cells_processes(tiny_run):
    """config/smoke.yaml gives dot_xx 2 processes and `max_time_s: 0.1`, a cell's time that
    each of its processes takes half of; the run: 1 process and 0.025."""
    raw = tiny_run / "results/raw/tiny/cpu"
    assert sorted(p.name for p in (raw / "dot_xx/jax/64").iterdir()) == ["0.json", "1.json"]
    assert len(list((raw / "selu/jax/1000").iterdir())) == 1
    for path in raw.rglob("*/*/*/*.json"):
        record = json.loads(path.read_text())
        if record["status"] != "ok":
            continue
        expected = 0.05 if record["cell"]["workload"] == "dot_xx" else 0.025
        assert record["provenance"]["config"]["rule"]["max_time_s"] == pytest.approx(expected), path


@pytest.mark.slow
def test_claims_report_shows_each_parts_size_against_the_articles(tiny_run):
    text = (tiny_run / "results/claims.md").read_text()
    assert "measured at 64 (article 1000)" in text  # A1 on the tiny grid's dot_xx at 64
    assert "inconclusive" in text
    assert "jnp.dot(x, x).block_until_ready()" in text  # the article's code, per part
    # where the run's time went (process_report.time_spent), from every process it ran
    ran = len(layout.raw_files(tiny_run / "results/raw/tiny"))
    assert f"Time: {ran} worker processes measured for " in text
    # each process's hand-off after its samples (made up here, as the core readings are),
    # where its cell ran on two cores or more
    procs = pd.read_csv(tiny_run / "results/tables/processes.csv")
    mine = procs[(procs["run_label"] == "tiny") & (procs["status"] == "ok")]
    two = mine["cores"] > 1
    assert mine.loc[two, "handoff_s"].eq(3e-5).all() and mine.loc[~two, "handoff_s"].isna().all()
    assert ("Hand-offs between two cores" in text) == bool(two.any())


@pytest.mark.slow
def test_tiny_grid_measurements_never_overlap(tiny_run):
    records = [json.loads(p.read_text()) for p in layout.raw_files(tiny_run / "results/raw/tiny")]
    assert len(records) == sum(s.repeats for s in grid.settings(TINY).values())
    spans = sorted((r["started_at"], r["finished_at"]) for r in records)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, "two measurements ran at the same time"


@pytest.mark.slow
def test_every_process_of_a_cell_times_its_first_processs_loop_count(tiny_run):
    """The workflow makes a cell's later processes wait for its first, whose loops a sample
    they use: no phase of a cell mixes loop counts."""
    counts: dict[tuple, set[int]] = {}
    for path in layout.raw_files(tiny_run / "results/raw/tiny"):
        record = json.loads(path.read_text())
        for name, phase in record["phases"].items():
            if phase.get("loops_from"):
                cell = tuple(record["cell"].values())
                counts.setdefault((*cell, name), set()).add(phase["loops"])
                assert phase["loops_from"] == ("calibrated" if record["repeat"] == 0 else "cell")
    assert counts and all(len(c) == 1 for c in counts.values()), counts


@pytest.mark.slow
def test_a_cells_processes_are_spread_over_the_run_not_back_to_back(tiny_run):
    records = [json.loads(p.read_text()) for p in layout.raw_files(tiny_run / "results/raw/tiny")]
    starts = {r: [x["started_at"] for x in records if x["repeat"] == r] for r in (0, 1)}
    assert max(starts[0]) < min(starts[1]), "process 1 of a cell ran before process 0 of another"
    table = pd.read_csv(tiny_run / "results/tables/measurements.csv")
    ok = table[(table["run_label"] == "tiny") & (table["status"] == "ok")]
    repeats = {(c.device, c.workload, c.impl, c.size): s.repeats for c, s in SETTINGS.items()}
    expected = [
        repeats[key] for key in zip(ok.device, ok.workload, ok.impl, ok["size"], strict=True)
    ]
    assert (ok["processes"] == expected).all()
    # a spread between processes where a cell has two or more; an interval everywhere
    assert ok.loc[ok["processes"] > 1, "process_spread"].notna().all()
    assert (ok["ci95_low_s"] <= ok["median_s"]).all()


@pytest.mark.slow
def test_absent_gpu_cells_are_unavailable_and_gpu_claims_not_run(tiny_run):
    df = pd.read_csv(tiny_run / "results/tables/measurements.csv")
    gpu = df[(df["device"] == "gpu") & (df["run_label"] == "tiny")]
    assert not gpu.empty and set(gpu["status"]) == {"unavailable"}
    assert gpu["reason"].str.contains("no gpu device: JAX sees only cpu").all()
    claims_table = pd.read_csv(tiny_run / "results/claims.csv")
    verdicts = claims_table[claims_table["run_label"] == "tiny"].set_index("claim_id")
    for claim_id in ("B1", "B2", "C2", "C3"):
        assert verdicts.loc[claim_id, "verdict"] == "not_run"
        assert "no gpu device" in verdicts.loc[claim_id, "note"]
    assert verdicts.loc["C4", "verdict"] == "not_run"
    assert verdicts.loc["C7", "verdict"] == "reproduced"
    # the tiny grid's stencil is 4 rows, the article's 64: the check holds, indicatively
    assert verdicts.loc["D2", "verdict"] == "inconclusive"
    assert "measured at 4 (article 64)" in verdicts.loc["D2", "note"]


@pytest.mark.slow
def test_report_renders_figures_tables_and_claims(tiny_run):
    run = snakemake(tiny_run, "--configfile", "tiny.yaml", "--report", "results/report.html")
    assert run.returncode == 0, run.stderr[-3000:]
    html = (tiny_run / "results/report.html").read_text(errors="replace")
    for name in (
        "claims.csv",
        "speedups.csv",
        "time_vs_size.png",
        "article_D.png",
        "claims_by_version.png",
    ):
        assert name in html
    # the landing page (the workflow description) is the verdict table, every claim in it
    landing = json.loads(re.search(r"workflow_desc = (\".*?[^\\]\");", html).group(1))
    table = pd.read_csv(tiny_run / "results/claims.csv")
    for r in table.itertuples():
        assert f"<td>{r.claim_id} <tt" in landing, r.claim_id
    assert "(this run)" in landing and landing.index("tiny") < landing.index("elsewhere")
    assert "1. The claims, redrawn" in html


@pytest.mark.slow
def test_a_grid_that_grows_after_a_run_measures_exactly_the_new_cells(tiny_run):
    """With only mtime triggers, finished tables would hide cells that were never measured
    (missing inputs are not newer); the profile's `input` trigger catches them."""
    grown = {**TINY, "merge": ["reference/raw"]}
    grown["workloads"] = [*TINY["workloads"], {"name": "selu", "impls": ["numpy"], "sizes": [77]}]
    (tiny_run / "grown.yaml").write_text(yaml.safe_dump(grown))
    dry = snakemake(tiny_run, "-n", "--configfile", "grown.yaml").stdout
    missing = [
        c.path("tiny", r)
        for c, settings in grid.settings(grown).items()
        for r in range(settings.repeats)
        if not (tiny_run / c.path("tiny", r)).exists()
    ]
    assert "results/raw/tiny/cpu/selu/numpy/77/0.json" in missing
    assert "results/raw/tiny/cpu/selu/numpy/77/0.json" in dry
    counts = dict(line.split()[:2] for line in dry.splitlines() if line.startswith("measure"))
    assert counts == {"measure": str(len(missing))}
    assert "results/tables/measurements.parquet" in dry


@pytest.mark.slow
def test_an_interrupted_run_resumes_with_only_the_missing_cells(tiny_run, tmp_path):
    # on a copy (times kept): the later tests read the finished run
    tiny_run = shutil.copytree(tiny_run, tmp_path / "run", symlinks=True)
    assert "Nothing to be done" in snakemake(tiny_run, "-n", "--configfile", "tiny.yaml").stdout
    # as if the run had stopped during the measurements: one cell and everything after it
    # gone (a lone cell: in a block's round, Snakemake would also re-measure the cell that
    # waits for a missing one, ancient as its input is)
    (tiny_run / "results/raw/tiny/cpu/grad_logistic/grad/100/0.json").unlink()
    for derived in ("tables", "figures"):
        shutil.rmtree(tiny_run / "results" / derived)
    (tiny_run / "results/claims.csv").unlink()
    dry = snakemake(tiny_run, "-n", "--configfile", "tiny.yaml").stdout
    counts = dict(
        line.split()[:2]
        for line in dry.splitlines()
        if line.split()[:1] in (["measure"], ["tables"], ["figures"])
    )
    # every figure in one job
    assert counts == {"measure": "1", "tables": "1", "figures": "1"}


def test_merged_runs_keep_their_label_and_device_model(tmp_path):
    other = run_elsewhere(tmp_path / "other", "other-machine", subdir="cpu/selu")
    files = [*layout.raw_files(REFERENCE), *layout.raw_files(other)]
    proc = aggregate.processes(files)
    df = aggregate.cells(proc)
    assert set(df["run_label"]) == {"epyc-65b7fad", "other-machine"}
    assert df["device_label"].str.startswith("cpu (").all()
    assert set(df[df["run_label"] == "other-machine"]["device_model"]) == {ELSEWHERE_CPU}
    sp = run_view.speedups(df, proc)
    assert set(sp[sp["workload"] == "selu"]["run_label"]) == {"epyc-65b7fad", "other-machine"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "reason"),
    [("{not json", "not a readable JSON file"), ('{"schema_version": 3}', "schema")],
)
def test_a_bad_merged_file_stops_tables_with_one_line_naming_it(tmp_path, content, reason):
    wf = workflow_copy(
        tmp_path,
        {
            "workloads": [{"name": "selu", "impls": ["numpy"], "sizes": [100]}],
            "claim_sizes": "none",
            "merge": ["other"],
            "sampling": {"min_time_s": 0.0, "max_time_s": 0.05},
        },
    )
    bad = wf / "other/cpu/selu/numpy/100/0.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(content)
    run = snakemake(wf, "results/tables/speedups.csv", "--cores", "2", "--configfile", "tiny.yaml")
    assert run.returncode != 0
    line = "error: other/cpu/selu/numpy/100/0.json: not"
    assert line in run.stderr and reason in run.stderr, run.stderr[-3000:]
    log = (wf / "logs/tables.log").read_text()
    assert log.startswith(line) and reason in log and "Traceback" not in log


@pytest.mark.slow
def test_a_merge_folder_without_measurements_is_refused_before_any_job(tmp_path):
    wf = workflow_copy(tmp_path, {"merge": ["old-run"]})
    (wf / "old-run/cpu/selu/numpy").mkdir(parents=True)
    (wf / "old-run/cpu/selu/numpy/100.json").write_text("{}")  # an older layout
    run = snakemake(wf, "--cores", "1", "--configfile", "tiny.yaml")
    assert run.returncode != 0 and "merge[0]: 'old-run' holds no measurements" in run.stderr
    assert not (wf / "results").exists()


def test_two_files_for_one_cell_are_refused(tmp_path):
    twin = tmp_path / "twin"
    shutil.copytree(REFERENCE / "cpu/selu", twin / "cpu/selu")
    with pytest.raises(InputError, match=r"several files \(.*, .*\): give each merged") as said:
        aggregate.processes([*layout.raw_files(REFERENCE), *layout.raw_files(twin)])
    assert str(twin) in str(said.value) and str(REFERENCE) in str(said.value)  # both named
    # the same files merged under a label of their own (merge: DIR=LABEL) are another run
    directory, label = layout.run_dir(f"{twin}=twin")
    proc = aggregate.processes(
        [*layout.raw_files(REFERENCE), *layout.raw_files(directory)], {str(directory): label}
    )
    assert set(proc["run_label"]) == {REFERENCE.name, "twin"}


def test_a_run_of_another_method_is_refused_naming_the_commit_to_check_out(tmp_path, capsys):
    run = tmp_path / "old"
    shutil.copytree(ROOT / "tests/data/runs/v8-0349", run / "raw/v8-0349")
    assert regenerate.main([str(run), "--out", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err
    record = read_json(layout.raw_files(run / "raw/v8-0349")[0])
    # the last code of method version 8, not the commit that measured it (it may predate
    # regenerate); the records' own commit where no git history says
    commit = last_commit_of(8) or record["provenance"]["git"]["commit"]
    assert "method version 8" in said and f"git checkout {commit}" in said, said
    assert not (tmp_path / "out").exists()  # refused before copying anything


@pytest.mark.slow
def test_a_run_is_rebuilt_from_its_raw_json_without_measuring(tiny_run, tmp_path):
    """The README's regenerate command on a finished run: tables, figures, claims and report
    from the raw files alone; a config whose grid the run lacks is refused, naming a cell."""
    run = tmp_path / "run"
    shutil.copytree(tiny_run / "results/raw/tiny", run / "raw/tiny")
    own = {**TINY, "between_run": "no-studies"}
    (tmp_path / "own.yaml").write_text(yaml.safe_dump(own))
    out = tmp_path / "rebuilt"
    # what an earlier rebuild left: judged by older code, or another run's records
    (out / "results/raw/other").mkdir(parents=True)
    (out / "results/claims.csv").write_text("run_label,claim_id\nstale,A1\n")
    assert (
        regenerate.main([str(run), "--out", str(out), "--configfile", str(tmp_path / "own.yaml")])
        == 0
    )
    assert not (out / "results/raw/other").exists()
    assert not (out / "logs/measure").exists()  # no measure job ran
    rebuilt = pd.read_csv(out / "results/claims.csv").set_index("claim_id")
    before = pd.read_csv(tiny_run / "results/claims.csv")
    before = before[before["run_label"] == "tiny"].set_index("claim_id")
    pd.testing.assert_series_equal(rebuilt["measured"], before["measured"])
    assert (out / "results/report.html").stat().st_size > 0
    assert {p.stem for p in (out / "results/figures").glob("*.png")} >= {"article_A"}
    grown = {
        **own,
        "workloads": [*own["workloads"], {"name": "selu", "impls": ["numpy"], "sizes": [77]}],
    }
    (tmp_path / "grown.yaml").write_text(yaml.safe_dump(grown))
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "blockbench.pipeline.regenerate",
            str(run),
            "--out",
            str(tmp_path / "o2"),
            "--configfile",
            str(tmp_path / "grown.yaml"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert again.returncode == 2 and "selu/numpy/77" in again.stderr, again.stderr[-2000:]
