"""The GPU kit's configuration: a grid file merged over config/config.yaml as Snakemake
merges a --configfile, checked as the workflow checks it, and the run plan it makes.

The GPU machine's image has no jsonschema (nor Snakemake): there the schema's defaults are
filled and its closed mappings checked here, with the standard library, so that a typo the
workflow would refuse is refused by the kit too; where jsonschema is installed (at home, in
the tests) the whole schema is checked as well.
"""

from pathlib import Path
from typing import Any

import yaml

from blockbench.judge import claim_rules
from blockbench.run import grid
from blockbench.run.grid import ConfigError
from blockbench.run.run_plan import RunPlan

ROOT = Path(__file__).resolve().parents[3]
BASE_CONFIG = ROOT / "config" / "config.yaml"
QUICK_CONFIG = ROOT / "config" / "gpu-quick.yaml"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """`overlay` over `base` as Snakemake merges a --configfile: mappings merge key by key,
    anything else (a list of workloads) replaces."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def checked(config: dict[str, Any], schema: dict[str, Any], where: str = "") -> dict[str, Any]:
    """`config` with the schema's defaults filled in (as Snakemake's validate does), or
    ConfigError naming a key a closed mapping of the schema does not know."""
    props = schema.get("properties", {})
    out = dict(config)
    for key, value in config.items():
        if key not in props and schema.get("additionalProperties") is False:
            known = ", ".join(sorted(props))
            raise ConfigError(f"config key {where}{key}: not a setting (known: {known})")
        if isinstance(value, dict) and key in props:
            out[key] = checked(value, props[key], f"{where}{key}.")
    for key, spec in props.items():
        if key not in out and "default" in spec:
            out[key] = (
                checked(spec["default"], spec, f"{where}{key}.")
                if isinstance(spec["default"], dict)
                else spec["default"]
            )
    return out


def load_config(overlay: Path = QUICK_CONFIG, base: Path = BASE_CONFIG) -> dict[str, Any]:
    """The grid file over the base config, checked against the workflow's schema (wholly
    where jsonschema is installed) and against the registry (grid.check)."""
    schema = yaml.safe_load(SCHEMA.read_text())
    given = merged(yaml.safe_load(base.read_text()), yaml.safe_load(overlay.read_text()))
    grid.check_replaced(given)
    config = checked(given, schema)
    try:
        import jsonschema
    except ImportError:
        pass
    else:
        try:
            jsonschema.validate(config, schema)
        except jsonschema.ValidationError as exc:
            key = ".".join(str(p) for p in exc.absolute_path) or "(top level)"
            raise ConfigError(f"config key {key}: {exc.message}") from exc
    grid.check(config)
    return config


def claims_files(config: dict[str, Any]) -> list[Path]:
    """The config's claims files, in the checkout the kit runs from."""
    paths = [ROOT / p for p in claim_rules.claim_paths(config["claims"])]
    return claim_rules.claims_files(paths)


def claims(config: dict[str, Any]) -> list[dict[str, Any]]:
    return claim_rules.read_claims(claims_files(config))


def run_plan(config: dict[str, Any]) -> RunPlan:
    """The workflow's plan of this config (rules/common.smk makes the same)."""
    return RunPlan(config, claims(config))
