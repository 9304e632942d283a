"""The GPU kit's archive: the run's folder packed after every process, and unpacked at home,
where every record is validated against the schema before any table reads it (the GPU
machine's image has no jsonschema, so records written there are not)."""

import tarfile
from pathlib import Path
from typing import Any

from blockbench.errors import InputError
from blockbench.pipeline.grid import ACCELERATORS
from blockbench.records import layout, store

MANIFEST = layout.KIT_MANIFEST


def versions(root: Path) -> dict[str, Any]:
    """The JAX, CUDA plugin and driver versions the GPU cells actually ran with, from the
    first GPU record that reached its device."""
    for path in layout.raw_files(root):
        record = store.read_json(path)
        device = record["provenance"].get("device") or {}
        if record["cell"]["device"] in ACCELERATORS and device:
            nvml = device.get("nvml") if isinstance(device.get("nvml"), dict) else {}
            packages = record["provenance"]["software"]["packages"]
            return {
                "packages": {k: v for k, v in packages.items() if k.startswith("jax")},
                "platform_version": device.get("platform_version"),
                "driver": nvml.get("driver"),
                "cuda_driver": nvml.get("cuda_driver"),
                "device": device.get("model"),
            }
    return {}


def pack(raw: Path, archive: Path, manifest: dict[str, Any]) -> None:
    """Every file of the run's folder (its measurements, the manifest, the rounds decision,
    the GPU check, the smoke cells, the host's kind) in one archive, written atomically."""
    store.write_json_atomic(raw / MANIFEST, manifest)
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f".{archive.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(p for p in raw.rglob("*") if p.is_file() and p.suffix == ".json"):
            tar.add(path, arcname=str(path.relative_to(raw.parent)))
    tmp.replace(archive)


def validated(raw: Path) -> int:
    """Check every measurement of a run's folder against the schema; the count, or
    InputError naming the first file that breaks it (or that nothing can check here)."""
    if not store.can_validate():
        raise InputError(
            "unpacking validates every record and needs jsonschema: run it with the project's "
            "environment (.venv/bin/blockbench gpu-kit --unpack ..., which "
            "python3 scripts/bootstrap.py test or run installs)"
        )
    files = layout.raw_files(raw)
    for path in files:
        try:
            store.validate(store.read_json(path))
        except store.SchemaError as exc:
            raise InputError(f"{path}: not a blockbench measurement (schema): {exc}") from exc
    return len(files)


def unpack(archive: Path, raw_root: Path) -> Path:
    """Extract a kit archive under `raw_root` (results/raw); return the run's directory.
    Measurements already there are kept (a part measured again never overwrites a result);
    the manifest and the rounds decision are the archive's."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        labels = {Path(m.name).parts[0] for m in members}
        if len(labels) != 1:
            raise ValueError(f"{archive}: expected one run's directory, found {sorted(labels)}")
        newer = (MANIFEST, Path(layout.DECISION).name)
        fresh = [m for m in members if not (raw_root / m.name).exists() or m.name.endswith(newer)]
        tar.extractall(raw_root, members=fresh, filter="data")
    return raw_root / labels.pop()
