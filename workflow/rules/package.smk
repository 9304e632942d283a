"""Where blockbench's package comes from: included first by workflow/Snakefile."""

import hashlib
import json
import os
import posixpath
import shutil
import sys
import tempfile
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.sourcecache import HostingProviderFile, LocalGitFile

# For the workflow and every job: the src/ of the checkout this file is in; for a module
# read from git (snakedeploy with --tag writes `github(...)`), the same files at the same
# ref, read from the repository Snakemake read this file from into .snakemake/blockbench/
# (docs/module.md). Jobs inherit PYTHONPATH, in a conda environment (--sdm conda) as well;
# environment.yml installs no blockbench.
HERE = workflow.current_basedir  # workflow/rules/
CHECKOUT = Path(HERE).parents[1] if isinstance(HERE, os.PathLike) else None
# What a module read from git fetches, from the repository's root: the package, whole (a
# workload added as a module of its own comes along with no list to edit), and its lock.
PACKAGE = ("src/blockbench", "requirements.lock")


def package_tree(basedir):
    """The repository's root tree at the ref the workflow was read from. Every git source
    of a module keeps the repository Snakemake reads it from (a bare clone for github(...)
    and gitlab(...), the repository itself for git+file://), and its tree names every file;
    a source of single files (a URL) lists none, so it is refused."""
    if isinstance(basedir, HostingProviderFile):
        repo = basedir.hosted_repo.repo
    elif isinstance(basedir, LocalGitFile):
        import git

        repo = git.Repo(basedir.repo_path)
    else:
        raise WorkflowError(
            f"blockbench takes its package from the git tree it is read from, and {basedir} "
            "is not in one: use blockbench as a module from a path (a checkout on disk), a "
            "git host (github(...) or gitlab(...)) or a git repository (git+file://)"
        )
    root = posixpath.normpath(posixpath.join(basedir.path, "../.."))
    tree = repo.commit(basedir.ref).tree
    return tree if root == "." else tree / root


def fetched_package(basedir) -> Path:
    """The package's files and the lock it reads at the ref the workflow came from, in a
    folder named by their digest: written once, never changed under a running job, with
    the source's address in SOURCE for provenance."""
    tree = package_tree(basedir)
    blobs = {}
    for name in PACKAGE:
        item = tree / name
        for blob in item.traverse() if item.type == "tree" else [item]:
            if blob.type == "blob":
                blobs[posixpath.relpath(blob.path, tree.path or ".")] = blob
    source = {
        "uri": basedir.join("..").get_path_or_uri(secret_free=True),
        "ref": basedir.ref,
    }
    ids = sorted((name, blob.hexsha) for name, blob in blobs.items())
    digest = hashlib.sha256(json.dumps([source, ids]).encode()).hexdigest()[:16]
    home = Path(".snakemake", "blockbench", digest).resolve()
    if not home.is_dir():
        home.parent.mkdir(parents=True, exist_ok=True)
        draft = Path(tempfile.mkdtemp(dir=home.parent))
        for name, blob in blobs.items():
            (draft / name).parent.mkdir(parents=True, exist_ok=True)
            (draft / name).write_bytes(blob.data_stream.read())
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
