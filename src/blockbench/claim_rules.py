"""Reading config/claims.yaml: the claims, their parts, and the conditions that judge them.

Rules live in configuration, not code, so that a reader can check each one by eye; this
module refuses an entry that could never be judged before anything is measured.
"""

import operator
import re
from pathlib import Path
from typing import Any

import yaml

from blockbench.jobs import InputError

KINDS = ("ratio", "trend", "growth", "check")
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
CONDITION = re.compile(r"^\s*(>=|>|<=|<)\s*([0-9.eE+-]+)\s*$|^\s*between\s+(\S+)\s+and\s+(\S+)\s*$")
CLAIM_KEYS = ("id", "slug", "source", "statement", "article", "parts")


class ClaimConfigError(InputError):
    """A claims file entry that cannot be evaluated."""


def condition_holds(condition: str, value: float) -> bool:
    """`>= 5`, `> 1`, `< 0.5`, `between 1.4 and 3`: rules a reader can check by eye."""
    m = CONDITION.match(condition)
    if not m:
        raise ClaimConfigError(f"unreadable condition {condition!r}")
    if m.group(1):
        return OPS[m.group(1)](value, float(m.group(2)))
    return float(m.group(3)) <= value <= float(m.group(4))


def _check_part(where: str, part: dict[str, Any]) -> None:
    kind = part.get("kind", "ratio")
    if kind not in KINDS:
        raise ClaimConfigError(f"{where}: unknown kind {kind!r}")
    if "code" not in part:
        raise ClaimConfigError(f"{where}: no 'code' (the article's code line it reproduces)")
    size = part.get("size")
    if size is not None and not isinstance(size, int):
        raise ClaimConfigError(f"{where}: size {size!r} is not the article's size (an integer)")
    if "holds_if" in part:
        condition_holds(part["holds_if"], 1.0)  # raises on an unreadable rule


def load(path: str | Path) -> list[dict[str, Any]]:
    """Read the claims file, refusing entries that could never be judged."""
    entries = yaml.safe_load(Path(path).read_text())
    if not isinstance(entries, list):
        raise ClaimConfigError(f"{path}: expected a list of claims")
    seen: set[str] = set()
    for i, claim in enumerate(entries):
        for key in CLAIM_KEYS:
            if key not in claim:
                raise ClaimConfigError(f"{path}: claim #{i + 1} has no {key!r}")
        if claim["id"] in seen:
            raise ClaimConfigError(f"{path}: claim id {claim['id']!r} appears twice")
        seen.add(claim["id"])
        for part in claim["parts"]:
            _check_part(f"{path}: claim {claim['id']}, part {part.get('name')!r}", part)
    return entries
