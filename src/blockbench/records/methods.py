"""Which commit reads records of an older measuring method: the last one before
METHOD_VERSION moved past it, found in the checkout's git history.

The commit a record names is the code that measured it, which may predate the tools that
rebuild it (`blockbench regenerate` came after method version 9's runs) or hold another run
in the same folder; the last commit of the method has both the tools and, for a reference
kept in the tree, the same records.
"""

import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SPEC = "src/blockbench/records/spec.py"


@cache
def last_commit_of(method: int, root: Path = ROOT) -> str | None:
    """The short hash of the last commit whose METHOD_VERSION is `method` (None: no git
    history here, or the method is today's)."""
    log = ["git", "-C", str(root), "log", "--format=%h", "-S", f"METHOD_VERSION = {method}\n"]
    try:
        touched = subprocess.run(
            [*log, "--", SPEC], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    if not touched:
        return None
    # the newest commit that changed the line's count: it added the version, or moved past it
    newest = touched[0]
    spec = subprocess.run(
        ["git", "-C", str(root), "show", f"{newest}:{SPEC}"], capture_output=True, text=True
    ).stdout
    if re.search(rf"^METHOD_VERSION = {method}$", spec, re.M):
        return None  # still today's
    parent = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short=7", f"{newest}^"],
        capture_output=True,
        text=True,
    )
    return parent.stdout.strip() or None
