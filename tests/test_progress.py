"""A run's progress line (blockbench.pipeline.progress) and each job's place in it
(kit_estimate.places)."""

import pytest
import yaml
from conftest import ROOT

from blockbench.pipeline import kit_config, kit_estimate, progress
from blockbench.pipeline.run_plan import RunPlan

PLACE = {
    "stage": "first stage",
    "position": 3,
    "of": 10,
    "model_done_s": 30.0,
    "model_left_s": 70.0,
}


def test_the_time_left_is_the_models_scaled_by_this_invocations_pace():
    # 30 model-seconds took 15 s here: the 70 left should take 35
    env = {progress.START_ENV: "100.0"}
    said = progress.line("cpu/selu/numpy/1000 process 0", "ok", 1.25, PLACE, now=115.0, env=env)
    assert said == (
        "blockbench: [3/10] cpu/selu/numpy/1000 process 0: ok in 1.2 s; "
        "first stage: about 35 s left"
    )
    slow = progress.line("x", "ok", 1.0, {**PLACE, "model_left_s": 700.0}, now=115.0, env=env)
    assert slow.endswith("about 6 min left")
    # the last job: no time left, never a rounding error's "-0 s"
    last = progress.line("x", "ok", 1.0, {**PLACE, "model_left_s": -1e-15}, now=115.0, env=env)
    assert last.endswith("about 0 s left")


def test_no_time_left_where_the_runs_start_is_unknown_or_nothing_was_measured_yet():
    """A cluster job does not inherit the run's start; a resumed run's first job counts
    only what this invocation measured."""
    assert progress.line("x", "ok", 1.0, PLACE, env={}).endswith("ok in 1.0 s")
    nothing = {**PLACE, "model_done_s": 0.0}
    assert "left" not in progress.line("x", "ok", 1.0, nothing, env={progress.START_ENV: "0"})


def test_each_job_knows_its_place_and_what_this_invocation_measured_before_it():
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    plan = RunPlan(config, kit_config.claims(config))
    jobs = plan.jobs()
    places = kit_estimate.places(plan, jobs, "first stage", "local", existing=set())
    model = [kit_estimate.process_s(kit_estimate.MODEL, j.cell, plan.params(j)) for j in jobs]
    last = places[jobs[-1]]
    assert [places[j]["position"] for j in jobs] == list(range(1, len(jobs) + 1))
    assert last["model_left_s"] == pytest.approx(0.0, abs=1e-9)
    assert last["model_done_s"] == pytest.approx(sum(model))
    assert places[jobs[0]]["model_left_s"] == pytest.approx(sum(model[1:]))
    # a resumed run: the first two were measured before, and add nothing to its pace
    resumed = kit_estimate.places(
        plan, jobs, "first stage", "local", existing={j.path("local") for j in jobs[:2]}
    )
    assert resumed[jobs[2]]["model_done_s"] == pytest.approx(model[2])
    # the added rounds: the first stage's pace counts, so their first line is no wild guess
    added = kit_estimate.places(plan, jobs[:2], "added rounds", "local", set(), 50.0)
    assert added[jobs[0]]["model_done_s"] == pytest.approx(50.0 + model[0])
