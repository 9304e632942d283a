"""Where blockbench's package comes from: included first by workflow/Snakefile."""

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

# For the workflow and every job: the src/ of the checkout this file is in; for a module
# read from a git host (snakedeploy with --tag writes `github(...)`), the same files at the
# same ref, read through Snakemake's source cache into .snakemake/blockbench/
# (docs/module.md). Jobs inherit PYTHONPATH, in a conda environment (--sdm conda) as well;
# environment.yml installs no blockbench.
HERE = workflow.current_basedir  # workflow/rules/
CHECKOUT = Path(HERE).parents[1] if isinstance(HERE, os.PathLike) else None


def fetched_package(basedir) -> Path:
    """The package's files and the lock it reads (workflow/package.txt lists them) at the
    ref the workflow came from, in a folder named by their digest: written once, never
    changed under a running job, with the source's address in SOURCE for provenance."""
    with workflow.sourcecache.open(basedir.join("../package.txt")) as f:
        names = [line for line in f.read().splitlines() if line and line[0] != "#"]
    files = {}
    for name in names:
        with workflow.sourcecache.open(basedir.join(f"../../{name}")) as f:
            files[name] = f.read()
    source = {
        "uri": basedir.join("..").get_path_or_uri(secret_free=True),
        "ref": getattr(basedir, "ref", None),
    }
    digest = hashlib.sha256(json.dumps([source, files]).encode()).hexdigest()[:16]
    home = Path(".snakemake", "blockbench", digest).resolve()
    if not home.is_dir():
        home.parent.mkdir(parents=True, exist_ok=True)
        draft = Path(tempfile.mkdtemp(dir=home.parent))
        for name, text in files.items():
            (draft / name).parent.mkdir(parents=True, exist_ok=True)
            (draft / name).write_text(text)
        (draft / "SOURCE").write_text(json.dumps(source))
        try:
            draft.rename(home)
        except OSError:  # another parse of the same files got there first
            shutil.rmtree(draft)
    return home / "src"


SRC = CHECKOUT / "src" if CHECKOUT is not None else fetched_package(HERE)
if SRC.is_dir():
    sys.path.insert(0, str(SRC))
    PATHS = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(SRC) not in PATHS:
        os.environ.update(
            PYTHONPATH=os.pathsep.join(p for p in (str(SRC), *PATHS) if p)
        )
