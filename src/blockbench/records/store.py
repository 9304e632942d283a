"""Reading and writing measurement JSON: atomic writes, and the schema every file obeys."""

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

# 2: warnings, per-phase stop reason, thread parity, asarray; 3: repeat, host_load
SCHEMA_VERSION = 3
SCHEMA_PATH = Path(__file__).with_name("schemas") / "measurement.schema.json"


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


class SchemaError(ValueError):
    """A record that breaks the published contract: where in it, and what."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"at {where}: {message}")
        self.where, self.message = where, message


@cache
def can_validate() -> bool:
    """Whether jsonschema is installed. The GPU machine's image has none: there a record is
    written unvalidated and says so (`provenance.config.schema_validated`, which a cell's
    later processes also say: blockbench.measure.parent checks its first). The readers run
    in the lock's environment, which has it: the kit's `--unpack` and the tables stage
    validate every record before any table is built, and `validate` alone checks nothing
    without it."""
    try:
        import jsonschema  # noqa: F401 (the validator imports it again, from the cache)
    except ImportError:
        return False
    return True


@cache
def _validator() -> Any:
    """The schema compiled once, and not checked against its metaschema at run time:
    `jsonschema.validate` checks the schema itself on every call (0.13 s a record, most of
    what reading a run cost), and even once it is 0.17 s of every measurement job. The
    schema is ours, checked by the test suite (tests/test_measure_cli.py)."""
    import jsonschema  # not at the top: the worker only writes, and imports cost it time

    return jsonschema.validators.validator_for(schema())(schema())


def validate(record: dict[str, Any]) -> None:
    """Raise SchemaError (the most relevant error, as `jsonschema.validate` picks it) if the
    record breaks the schema; where jsonschema is not installed, check nothing (callers that
    must not skip the check ask `can_validate` first)."""
    if not can_validate():
        return
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(record))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        raise SchemaError(where, error.message)


def write_json_atomic(path: Path, data: Any) -> None:
    write_bytes_atomic(path, json.dumps(data, indent=1, allow_nan=False).encode())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file beside the target, then rename: a crash leaves either the
    old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())
