"""Typing nested `--config` values the way a YAML config file would type them.

Snakemake parses `--config key=value` with YAML's BaseLoader, which leaves every scalar
inside a list or mapping a string: `workloads='[{name: stencil, sizes: [8]}]'` arrives with
size '8', and the schema rightly refuses it. Re-typing only what came from the command line
keeps file values (an empty `gpu_model: ""`, say) exactly as written.
"""

from collections.abc import Mapping
from typing import Any

import yaml

BOOLEANS = {"true", "false"}


def _typed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, str):
        parsed = yaml.safe_load(value) if value.strip() else value
        return parsed if isinstance(parsed, int | float | bool) else value
    return value


def typed_overrides(cli: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's nested values, typed, and its top-level `true`/`false`: Snakemake
    types top-level numbers and Python's `True`/`False` only, so `check_gpu=false` arrived as
    the string 'false' and the schema refused it."""
    return {
        k: _typed(v)
        for k, v in cli.items()
        if isinstance(v, Mapping | list) or (isinstance(v, str) and v.lower() in BOOLEANS)
    }


def _holds(value: Any, override: Any) -> bool:
    if isinstance(override, Mapping):
        return isinstance(value, Mapping) and all(
            k in value and _holds(value[k], v) for k, v in override.items()
        )
    return value == override


def merged_into(config: Mapping[str, Any], cli: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's values that Snakemake merged into `config`: all of them when it is
    the config Snakemake read (the main workflow's, or one a module shares with its caller),
    none when a module's caller hands blockbench a config of its own."""
    return {k: v for k, v in cli.items() if k in config and _holds(config[k], v)}
