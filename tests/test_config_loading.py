"""One config loader (blockbench.pipeline.config_loading) for the workflow and the GPU kit, and the
settings the schema states once: sampling's defaults are StopRule's, its precisions
MeasureParams'. (That the workflow's loaded config is the kit's, whole, and plans the same
processes: tests/test_gpu_kit.py, which runs Snakemake.)"""

import sys
from copy import deepcopy
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml
from snakemake.utils import validate

from blockbench.pipeline import config_loading
from blockbench.pipeline.grid import ConfigError
from blockbench.records.params import PRECISIONS
from blockbench.records.spec import StopRule

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load(config_loading.SCHEMA.read_text())
BASE = yaml.safe_load(config_loading.BASE_CONFIG.read_text())
GRIDS = ["config.yaml", "gpu-quick.yaml", "gpu.yaml", "paper.yaml", "smoke.yaml"]


def given(name: str) -> dict[str, Any]:
    """A config file merged over the default, as `--configfile` merges it."""
    return config_loading.merged(BASE, yaml.safe_load((ROOT / "config" / name).read_text()))


@pytest.mark.parametrize("name", GRIDS)
def test_the_loader_fills_the_defaults_snakemakes_validate_would(name):
    """Into the mappings of lists too (a block's `accelerator_sizes`, `impl_sizes`)."""
    by_snakemake = deepcopy(given(name))
    validate(by_snakemake, str(config_loading.SCHEMA))
    assert config_loading.load(given(name)) == by_snakemake


def test_a_callers_empty_config_takes_the_default_configs_values():
    """A module's caller that leaves every key out runs blockbench's default."""
    assert config_loading.load({}) == config_loading.load(BASE)


def test_the_sampling_defaults_are_the_stop_rules():
    """StopRule states them; the schema (and config/config.yaml, whose values are the
    schema's defaults: tests/test_publish.py) repeats them, and a block's `sampling` takes the
    same keys."""
    rule = {f.name: f.default for f in fields(StopRule)}
    run = SCHEMA["properties"]["sampling"]["properties"]
    assert {key: spec["default"] for key, spec in run.items()} == {k: rule[k] for k in run}
    assert BASE["sampling"] == {k: rule[k] for k in run}
    block = SCHEMA["properties"]["workloads"]["items"]["properties"]["sampling"]["properties"]
    assert set(block) == set(run)


def test_the_schemas_precisions_are_the_workers():
    assert SCHEMA["properties"]["matmul_precision"]["enum"] == list(PRECISIONS)


@pytest.mark.parametrize("jsonschema", ["installed", "missing"])
def test_a_key_no_setting_has_is_refused_in_a_block_too(monkeypatch, jsonschema):
    """Without jsonschema (the GPU image) the loader's own check names it, as with it."""
    if jsonschema == "missing":
        monkeypatch.setitem(sys.modules, "jsonschema", None)
    block = {"name": "selu", "impls": ["numpy"], "sizes": [10], "size": 10}
    with pytest.raises(ConfigError, match=r"config key workloads\[0\]\.size: not a setting"):
        config_loading.load({**BASE, "workloads": [block]})
