"""The one way a config becomes a run's: the workflow (workflow/Snakefile) and the GPU kit
(blockbench.pipeline.kit_config) both call `load`, so both plan from the same whole config.

`load` fills the schema's defaults (as Snakemake's `validate` would, into list items too),
refuses a key a closed mapping of the schema does not know, checks the whole schema where
jsonschema is installed (the workflow's environment; the GPU image has none), then checks the
grid against the workload registry and the file system (blockbench.pipeline.grid.check). Standard
library and yaml only, so that it runs on the GPU image.
"""

from collections.abc import Mapping
from copy import deepcopy
from pathlib import Path
from typing import Any

import yaml

from blockbench.judge.claim_rules import claim_paths
from blockbench.pipeline import grid
from blockbench.pipeline.grid import ConfigError

ROOT = Path(__file__).resolve().parents[3]
BASE_CONFIG = ROOT / "config" / "config.yaml"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def merged(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """`overlay` over `base` as Snakemake merges a --configfile: mappings merge key by key,
    anything else (a list of workloads) replaces."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def _filled(value: Any, schema: Mapping[str, Any], where: str = "") -> Any:
    """`value` with the schema's defaults filled in at every depth, mappings in lists
    included; ConfigError for a key that a closed mapping of the schema does not know."""
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        items = schema["items"]
        return [_filled(v, items, f"{where.rstrip('.')}[{i}].") for i, v in enumerate(value)]
    if not isinstance(value, Mapping):
        return value
    props = schema.get("properties", {})
    others = schema.get("additionalProperties", {})
    out = {}
    for key, item in value.items():
        if key not in props and others is False:
            known = ", ".join(sorted(props))
            raise ConfigError(f"config key {where}{key}: not a setting (known: {known})")
        sub = props.get(key, others if isinstance(others, Mapping) else {})
        out[key] = _filled(item, sub, f"{where}{key}.")
    for key, spec in props.items():
        if key not in out and "default" in spec:
            out[key] = _filled(deepcopy(spec["default"]), spec, f"{where}{key}.")
    return out


def _validated(config: dict[str, Any], schema: dict[str, Any]) -> None:
    """The whole schema, where jsonschema is installed; a ConfigError names the key."""
    try:
        import jsonschema
    except ImportError:
        return
    try:
        jsonschema.validate(config, schema)
    except jsonschema.ValidationError as exc:
        key = ".".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ConfigError(f"config key {key}: {exc.message}") from exc


def load(given: Mapping[str, Any], schema_file: str | Path = SCHEMA) -> dict[str, Any]:
    """The run's config from the merged files (and typed command line) in `given`: a key an
        older config sets refused first, naming what replaced it; the schema's defaults filled
        once; `claims` as a list, each path blockbench's own where the working directory lacks
    it; the schema and the registry checked (ConfigError names the first bad key)."""
    grid.check_replaced(given)
    schema = yaml.safe_load(Path(schema_file).read_text())
    config = _filled(given, schema)
    _validated(config, schema)
    config["claims"] = [_own(path) for path in claim_paths(config["claims"])]
    grid.check(config)
    return config


def _own(path: str) -> str:
    """`path`, or blockbench's own catalog of that name where the working directory has
    none (a module's caller names `config/claims/articles` beside a catalog of its own)."""
    own = ROOT / path
    return path if Path(path).exists() or not own.exists() else str(own)
