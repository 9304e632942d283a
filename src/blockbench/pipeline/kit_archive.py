"""The GPU kit's archive: the run's folder packed after every process, and unpacked at home,
where every record is validated against the schema before any table reads it (the GPU
machine's image has no jsonschema, so records written there are not)."""

import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

from blockbench.errors import InputError
from blockbench.pipeline.grid import ACCELERATORS
from blockbench.records import layout, store

MANIFEST = layout.KIT_MANIFEST
# How a process the kit left out for time is recorded: `unavailable` with this reason, so
# that no job measures it at home, and the kit's next part measures it (never counted done).
LEFT_OUT = "left out for time"


def left_out(path: Path) -> bool:
    """Whether the record at `path` stands in for a process the kit left out for time."""
    record = store.read_json(path)
    return record["status"] == "unavailable" and record["reason"].startswith(LEFT_OUT)


def versions(root: Path) -> dict[str, Any]:
    """The JAX, CUDA plugin, driver and NVIDIA library versions, and the GPU (UUID, power
    limit), the GPU cells actually ran with, from the first GPU record that reached its
    device."""
    for path in layout.raw_files(root):
        record = store.read_json(path)
        device = record["provenance"].get("device") or {}
        if record["cell"]["device"] in ACCELERATORS and device:
            nvml = device.get("nvml") if isinstance(device.get("nvml"), dict) else {}
            after = record["provenance"].get("device_after") or {}
            packages = record["provenance"]["software"]["packages"]
            return {
                "packages": {k: v for k, v in packages.items() if k.startswith("jax")},
                "platform_version": device.get("platform_version"),
                "driver": nvml.get("driver"),
                "cuda_driver": nvml.get("cuda_driver"),
                "device": device.get("model"),
                "gpu_uuid": nvml.get("uuid"),
                "power_limit_w": nvml.get("power_limit_w"),
                "nvidia_libraries": after.get("nvidia_libraries"),
            }
    return {}


def process(member: str) -> bool:
    """Whether an archive member is a process's record (<label>/<device>/.../<repeat>.json),
    not the manifest, the decision or another file of the run's folder."""
    path = PurePosixPath(member)
    return len(path.parts) == len(PurePosixPath(layout.IN_RUN_GLOB).parts) + 1 and path.match(
        layout.IN_RUN_GLOB
    )


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
    Measurements already there are kept (a part measured again never overwrites a result),
    but not a process left out for time, which a later part measured; the manifest and the
    rounds decision are the archive's."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        labels = {Path(m.name).parts[0] for m in members}
        if len(labels) != 1:
            raise ValueError(f"{archive}: expected one run's directory, found {sorted(labels)}")
        newer = (MANIFEST, Path(layout.DECISION).name)
        fresh = [
            m
            for m in members
            if not (here := raw_root / m.name).exists()
            or m.name.endswith(newer)
            or (process(m.name) and left_out(here))
        ]
        tar.extractall(raw_root, members=fresh, filter="data")
    return raw_root / labels.pop()
