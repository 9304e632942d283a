"""The one registry of workloads and implementations: blockbench's own modules, and the
workload modules of the catalogs a run names.

Every module of this package but the machinery (`declare`, `registry`, `checks`) declares
`WORKLOADS`; adding a workload is adding one module, here or in a catalog folder's
`workloads/` (`use_catalog`), which a user owns and blockbench does not ship. The config
check, the grid, the tables and the worker all look names up here, so a workload is declared
once, and each knows the file it came from and that file's hash (`source_of`), which every
record keeps: a module changed mid-run shows, and is refused, rather than mixed.
"""

import ast
import hashlib
import importlib
import importlib.metadata
import pkgutil
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blockbench.errors import InputError
from blockbench.records.spec import DEVICES, PHASES, STEADY
from blockbench.workloads.declare import STYLE_PHASES, Impl, Workload

__all__ = [
    "IMPLS",
    "STYLE_PHASES",
    "WORKLOADS",
    "CatalogError",
    "Impl",
    "Source",
    "Workload",
    "catalog_folders",
    "impls_of",
    "lookup",
    "source_of",
    "use_catalog",
]

MACHINERY = {"declare", "registry", "checks"}
# A catalog folder's workload modules, and the packages they need beyond blockbench's lock
# (pip's requirement lines: a name and, optionally, a version range)
CATALOG_WORKLOADS, REQUIREMENTS = "workloads", "requirements.txt"
# A workload module that imports these at its top breaks the Snakemake-only parse
# (docs/module.md): the registry reads every declaration while the workflow is parsed
SCIENCE = ("numpy", "jax", "pandas")


class CatalogError(InputError):
    """A catalog's workload module or requirement that no run can use, named in one line."""


@dataclass(frozen=True)
class Source:
    """Where a workload is declared: its catalog (None: blockbench's own modules), the
    catalog's folder, the module's file and the SHA-256 of the text that was run."""

    catalog: str | None
    folder: Path | None
    file: Path
    sha256: str

    def as_record(self) -> dict[str, Any]:
        """What a record keeps: the catalog, the module's file name, its hash."""
        return {"catalog": self.catalog, "module": self.file.name, "sha256": self.sha256}


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _one_line(text: object) -> str:
    """A message of several lines (a user's exception's, packaging's) as one."""
    return " ".join(str(text).split())


def _declared(module: types.ModuleType, where: str) -> tuple[Workload, ...]:
    declared = getattr(module, "WORKLOADS", None)
    if declared is None:
        raise CatalogError(f"{where}: declares no WORKLOADS (see blockbench.workloads.declare)")
    if not isinstance(declared, tuple | list) or not all(isinstance(w, Workload) for w in declared):
        raise CatalogError(f"{where}: WORKLOADS is not a tuple of Workload(...) declarations")
    return tuple(declared)


def _add(modules: list[tuple[tuple[Workload, ...], Source]]) -> None:
    """Register every module's workloads, or none of them: a name declared already, or twice
    among these, is refused naming both files."""
    seen: dict[str, Source] = {}
    for declared, source in modules:
        for workload in declared:
            first = SOURCES.get(workload.name) or seen.get(workload.name)
            if first is not None:
                raise CatalogError(
                    f"{source.file}: workload {workload.name!r} is already declared in {first.file}"
                )
            seen[workload.name] = source
    for declared, source in modules:
        for workload in declared:
            WORKLOADS[workload.name], SOURCES[workload.name] = workload, source


def _collect() -> None:
    package = importlib.import_module(__package__)
    modules = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in MACHINERY:
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        file = Path(module.__file__ or info.name)
        source = Source(None, None, file, _hash(file.read_bytes()))
        modules.append((_declared(module, module.__name__), source))
    _add(modules)


WORKLOADS: dict[str, Workload] = {}
SOURCES: dict[str, Source] = {}
_collect()
IMPLS: tuple[Impl, ...] = tuple(i for w in WORKLOADS.values() for i in w.impls)
# catalog folders already read (resolved path -> the workloads they declared)
_CATALOGS: dict[Path, tuple[str, ...]] = {}


def _check_requirements(folder: Path) -> None:
    """Each package the catalog's requirements.txt lists is installed, in a version it
    accepts: refused here, at planning, not in a worker mid-run."""
    from packaging.requirements import InvalidRequirement, Requirement

    file = folder / REQUIREMENTS
    if not file.is_file():
        return
    for n, line in enumerate(file.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            wanted = Requirement(text)
        except InvalidRequirement as exc:
            raise CatalogError(f"{file}:{n}: not a requirement ({_one_line(exc)})") from None
        try:
            have = importlib.metadata.version(wanted.name)
        except importlib.metadata.PackageNotFoundError:
            raise CatalogError(
                f"{file}:{n}: the catalog's workloads need {wanted}, which is not installed "
                "(add it to the environment blockbench runs in)"
            ) from None
        if wanted.specifier and not wanted.specifier.contains(have, prereleases=True):
            raise CatalogError(
                f"{file}:{n}: the catalog's workloads need {wanted}; {have} is installed"
            )


def _top_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs as it is read: its top level, and the blocks there but an
    `if TYPE_CHECKING:` (annotations only); a function's own imports run when it does."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            yield from _top_imports(node.body + node.orelse)
        elif isinstance(node, ast.Try | ast.With):
            yield from _top_imports(node.body)


def _science_at_top(tree: ast.Module) -> tuple[int, str] | None:
    """(line, package) of the first NumPy, JAX or pandas import a module runs as it is read."""
    for node in _top_imports(tree.body):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        for name in names:
            if name and name.split(".")[0] in SCIENCE:
                return node.lineno, name.split(".")[0]
    return None


def _run_module(file: Path, name: str) -> tuple[types.ModuleType, str]:
    """Execute a catalog's module from its text as read once, so its hash is of what ran;
    any failure is one line naming the file. One that imports NumPy, JAX or pandas as it is
    read is refused before it runs, though they may be installed: read from its text, so the
    refusal does not depend on what the reading process imported before."""
    data = file.read_bytes()
    try:
        tree = ast.parse(data, str(file))
    except SyntaxError as exc:
        raise CatalogError(f"{file}:{exc.lineno}: {_one_line(exc.msg)}") from None
    if found := _science_at_top(tree):
        raise CatalogError(
            f"{file}:{found[0]}: imports {found[1]} at its top, which the workflow's parse "
            "does without; reach it through blockbench.workloads.declare.deferred "
            "(docs/adding-a-workload.md)"
        )
    module = types.ModuleType(name)
    module.__file__ = str(file)
    sys.modules[name] = module  # dataclasses and pickling look a module up by its name
    try:
        exec(compile(tree, str(file), "exec"), module.__dict__)
    except Exception as exc:  # whatever its top level raises: the user's code
        del sys.modules[name]
        raise CatalogError(
            f"{file}: importing it failed: {type(exc).__name__}: {_one_line(exc)}"
        ) from None
    return module, _hash(data)


def use_catalog(folder: str | Path) -> tuple[str, ...]:
    """Add the workloads a catalog folder's `workloads/*.py` declare (none: it has no such
    folder), once a process; the names added. Its requirements are checked first. A module
    that does not compile or import, declares no WORKLOADS, or declares a name already
    declared (by blockbench or another catalog) raises CatalogError naming the file."""
    folder = Path(folder).resolve()
    if folder in _CATALOGS:
        return _CATALOGS[folder]
    if not folder.is_dir():
        raise CatalogError(f"{folder}: no catalog folder there")
    modules = sorted((folder / CATALOG_WORKLOADS).glob("*.py"))
    _check_requirements(folder)
    catalog, read = folder.name, []
    for file in (f for f in modules if not f.name.startswith("_")):
        module, sha256 = _run_module(file, f"blockbench_catalog_{catalog}.{file.stem}")
        source = Source(catalog, folder, file, sha256)
        read.append((_declared(module, str(file)), source))
    _add(read)  # all of the catalog's workloads, or none
    added = [w.name for declared, _ in read for w in declared]
    global IMPLS
    IMPLS = tuple(i for w in WORKLOADS.values() for i in w.impls)
    _CATALOGS[folder] = tuple(added)
    return _CATALOGS[folder]


def catalog_folders() -> list[Path]:
    """The folders of the catalogs read in this process that declare workloads: where the
    measurement jobs import them from."""
    return [folder for folder, names in _CATALOGS.items() if names]


def source_of(workload: str) -> Source:
    """Where `workload` is declared, and the hash of its module's text when it was read."""
    return SOURCES[workload]


def current_sha256(workload: str) -> str:
    """The hash of the workload's module as its file reads now (another edit since it was
    read changes it): what a run's later rounds are checked against."""
    return _hash(SOURCES[workload].file.read_bytes())


def impls_of(workload: str) -> dict[str, Impl]:
    return {i.name: i for i in WORKLOADS[workload].impls} if workload in WORKLOADS else {}


def check_term(device: Any, workload: Any, impl: Any, phase: Any = STEADY) -> Impl:
    """The implementation a cell (but for its size) names, or ValueError saying what is wrong
    with it: the one check of a cell's names, for a worker's cell, a claim's term and a
    published figure's cell alike."""
    if workload not in WORKLOADS:
        raise ValueError(f"no workload {workload!r} (known: {', '.join(sorted(WORKLOADS))})")
    impls = impls_of(workload)
    if impl not in impls:
        raise ValueError(f"{workload} has no impl {impl!r} (known: {', '.join(impls)})")
    if device not in DEVICES:
        raise ValueError(f"no device {device!r} (known: {', '.join(DEVICES)})")
    if device not in impls[impl].devices:
        raise ValueError(
            f"{workload}/{impl} does not run on {device} (only {', '.join(impls[impl].devices)})"
        )
    if phase not in PHASES:
        raise ValueError(f"no phase {phase!r} (known: {', '.join(PHASES)})")
    return impls[impl]


def lookup(device: str, workload: str, impl: str, size: int) -> tuple[Workload, Impl]:
    """Resolve a grid cell, or raise ValueError naming what is wrong with it."""
    entry = check_term(device, workload, impl)
    WORKLOADS[workload].validate_size(size)
    return WORKLOADS[workload], entry
