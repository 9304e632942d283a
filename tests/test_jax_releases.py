"""JAX's API as releases after the installable one may shape it (0.11.2 on the GPU image, 0.12):
faked where the release cannot be installed here, read through blockbench.measure.jax_compat
(docs/gpu.md, "Which JAX", says what was checked in JAX's changelog and source)."""

from types import SimpleNamespace

import pytest

from blockbench.measure import jax_compat, provenance


@pytest.mark.parametrize("name", ["gpu", "cuda", "rocm"])
def test_a_gpu_reads_as_gpu_whether_jaxlib_names_it_gpu_or_by_its_plugin(name, monkeypatch):
    """jaxlib maps "cuda" and "rocm" to "gpu" through a shim its source marks for removal."""
    monkeypatch.setattr(provenance, "nvml_gpu", lambda bus: {"driver": "580.159.04"})
    monkeypatch.setattr(provenance, "cuda_ordinal", lambda dev: 0)
    monkeypatch.setattr(provenance, "cuda_pci_bus_id", lambda ordinal: "00000000:19:00.0")
    client = SimpleNamespace(platform_version="cuda 13000")
    dev = SimpleNamespace(
        platform=name,
        id=0,
        device_kind="NVIDIA H100 80GB HBM3",
        client=client,
        compute_capability="9.0",
        memory_stats=lambda: {"peak_bytes_in_use": 1},
    )
    info = provenance.device(dev, "gpu")
    assert info["platform"] == "gpu" and info["compute_capability"] == "9.0"
    assert info["nvml"] == {"driver": "580.159.04"} and info["platform_version"] == "cuda 13000"
    assert provenance.describe_device(dev) == "gpu:0 (NVIDIA H100 80GB HBM3)"
    assert jax_compat.platform(SimpleNamespace(platform="cpu")) == "cpu"


class ValuesOnly:
    """A config whose options are in its registry of values and not attributes: a release
    that stopped making each option a property must not read as `default` precision."""

    def __init__(self) -> None:
        self.values = {"jax_default_matmul_precision": "highest", "jax_enable_x64": False}


class AttributesOnly:
    """An old release's config: options as attributes, no registry."""

    jax_default_matmul_precision = "float32"


def test_an_option_is_read_from_the_registry_else_as_an_attribute(monkeypatch):
    monkeypatch.setattr(jax_compat, "jax", SimpleNamespace(config=ValuesOnly()))
    assert jax_compat.option("jax_default_matmul_precision") == "highest"
    assert provenance.matmul_precision() == "highest"
    assert jax_compat.option("jax_enable_compilation_cache") is None  # no such option
    monkeypatch.setattr(jax_compat, "jax", SimpleNamespace(config=AttributesOnly()))
    assert jax_compat.option("jax_default_matmul_precision") == "float32"
    assert jax_compat.option("jax_enable_x64") is None


def test_the_installed_release_has_the_registry_and_agrees_with_its_attributes():
    import jax

    for name in ("jax_default_matmul_precision", "jax_enable_x64", "jax_compilation_cache_dir"):
        assert name in jax.config.values
        assert jax_compat.option(name) == getattr(jax.config, name)
