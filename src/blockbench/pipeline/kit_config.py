"""The GPU kit's configuration: a grid file merged over config/config.yaml as Snakemake
merges a --configfile, loaded by the workflow's own loader (blockbench.pipeline.config_loading,
which runs on the GPU image), and the run plan it makes.
"""

from pathlib import Path
from typing import Any

import yaml

from blockbench.judge import claim_rules
from blockbench.pipeline import config_loading
from blockbench.pipeline.config_loading import BASE_CONFIG, ROOT
from blockbench.pipeline.run_plan import RunPlan

QUICK_CONFIG = ROOT / "config" / "gpu-quick.yaml"


def load_config(overlay: Path = QUICK_CONFIG, base: Path = BASE_CONFIG) -> dict[str, Any]:
    """The grid file over the base config, as the workflow loads it (config_loading.load)."""
    files = (yaml.safe_load(path.read_text()) for path in (base, overlay))
    return config_loading.load(config_loading.merged(*files))


def claims_files(config: dict[str, Any]) -> list[Path]:
    """The config's claims files, in the checkout the kit runs from."""
    paths = [ROOT / p for p in claim_rules.claim_paths(config["claims"])]
    return claim_rules.claims_files(paths)


def claims(config: dict[str, Any]) -> list[dict[str, Any]]:
    return claim_rules.read_claims(claims_files(config), config["only"])


def run_plan(config: dict[str, Any]) -> RunPlan:
    """The workflow's plan of this config (rules/common.smk makes the same)."""
    return RunPlan(config, claims(config))
