"""Ready to publish: license, citation, the Snakemake catalog's standardized usage, the
configuration documented key by key, and the conda environment pinned like the lock."""

import datetime
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    assert f"\n## {title}\n" in text, title
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


# Citation File Format 1.2.0: its top-level keys, and the ones it requires.
CFF_KEYS = {
    "abstract",
    "authors",
    "cff-version",
    "commit",
    "contact",
    "date-released",
    "doi",
    "identifiers",
    "keywords",
    "license",
    "license-url",
    "message",
    "preferred-citation",
    "references",
    "repository",
    "repository-artifact",
    "repository-code",
    "title",
    "type",
    "url",
    "version",
}
CFF_REQUIRED = {"cff-version", "message", "title", "authors"}


def test_license_is_mit_and_the_readme_and_citation_say_so():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) \d{4} The blockbench maintainers$", text, re.M)
    assert "WITHOUT WARRANTY OF ANY KIND" in text
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["license"] == "MIT"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "[MIT License](LICENSE)" in readme_section("Citing and license")
    reasons = (ROOT / "docs/layout.md").read_text().split("\n## License\n", 1)[1]
    assert "[MIT License](../LICENSE), because" in reasons


def test_citation_cff_has_what_cff_1_2_0_requires():
    """cffconvert (which validates against the CFF schema) needs jsonschema < 4 and cannot
    share the lock's environment, so the suite checks the format's structure itself."""
    raw = (ROOT / "CITATION.cff").read_text()
    cff = yaml.safe_load(raw)
    assert cff["cff-version"] == "1.2.0"
    assert CFF_REQUIRED <= set(cff) <= CFF_KEYS, set(cff) ^ CFF_KEYS
    for key in ("message", "title", "abstract"):
        assert isinstance(cff[key], str) and cff[key].strip(), key
    assert cff.get("type", "software") in {"software", "dataset"}
    # the project's own maintainers, as an entity (persons would need family-names)
    assert cff["authors"] == [{"name": "The blockbench maintainers"}]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert str(cff["version"]) == project["version"]
    assert isinstance(cff["keywords"], list) and all(isinstance(k, str) for k in cff["keywords"])
    if "date-released" in cff:
        assert isinstance(cff["date-released"], datetime.date)
    # repository-neutral: no address of one code host
    assert not {"repository", "repository-code", "repository-artifact", "url"} & set(cff)
    assert "CITATION.cff" in readme_section("Citing and license")


def test_the_catalogs_standardized_usage():
    """The catalog lists a workflow under "standardized usage" when its definition is
    workflow/Snakefile, config/README.md explains the configuration, and
    .snakemake-workflow-catalog.yml gives the usage."""
    assert (ROOT / "workflow/Snakefile").is_file() and (ROOT / "config/README.md").is_file()
    # `snakemake` from the repository root reads the top-level Snakefile, which is only this
    top = [
        line
        for line in (ROOT / "Snakefile").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert top == ['workflow.include("workflow/Snakefile", overwrite_default_target=True)']
    usage = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text())["usage"]
    assert set(usage) == {"mandatory-flags", "software-stack-deployment", "report"}
    flags = usage["mandatory-flags"]
    assert flags["flags"] == "--resources measure_host=1"
    for words in ("scripts/bootstrap.py run", "environment.yml", "config/README.md"):
        assert words in flags["desc"], words
    stack = usage["software-stack-deployment"]
    assert set(stack) <= {"conda", "singularity", "singularity+conda"}
    assert stack["conda"] is True and usage["report"] is True


def test_profiles_find_the_report_stylesheet_where_snakedeploy_copies_them():
    """Snakemake reads a profile's path relative to the profile where the file is there."""
    for profile in ("default", "slurm"):
        config = yaml.safe_load((ROOT / f"profiles/{profile}/config.yaml").read_text())
        assert (ROOT / "profiles" / profile / config["report-stylesheet"]).is_file(), profile


def schema_keys(properties: dict, prefix: str = "") -> dict[str, dict]:
    """Every key of the config schema, named as config/README.md names it."""
    keys = {}
    for name, spec in properties.items():
        key = prefix + name
        if spec.get("type") == "object" and "properties" in spec:
            keys.update(schema_keys(spec["properties"], key + "."))
        else:
            keys[key] = spec
        if spec.get("type") == "array" and "properties" in spec.get("items", {}):
            keys[key + "[]"] = spec
            keys.pop(key)
            keys.update(schema_keys(spec["items"]["properties"], key + "[]."))
    return keys


def readme_keys() -> dict[str, str]:
    """The key table of config/README.md: key -> its default column."""
    text = (ROOT / "config/README.md").read_text()
    table = text.split("| key | default | meaning |\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines():
        match = re.match(r"^\| `([^`]+)` \| (.*?) \| ", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def test_config_readme_documents_every_schema_key_with_its_default():
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    keys = schema_keys(schema["properties"])
    documented = readme_keys()
    assert set(documented) == set(keys), set(documented) ^ set(keys)
    for key, column in documented.items():
        literal = re.fullmatch(r"`([^`]*)`", column)
        if literal and "default" in keys[key]:  # "see file", "all", "-": no single value
            assert yaml.safe_load(literal.group(1) or "''") == keys[key]["default"], key


def test_schema_defaults_are_the_default_config():
    """A module's caller that leaves a key out gets the schema's default: it must be what
    blockbench's own config/config.yaml says."""
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    keys = schema_keys(schema["properties"])
    for key, spec in keys.items():
        if "[]" in key or "default" not in spec or spec.get("type") == "object":
            continue
        value = config
        for part in key.split("."):
            value = value[part]
        assert value == spec["default"], key
    assert set(config) == set(schema["properties"])


# requirements.lock (PyPI names) -> environment.yml (conda-forge/bioconda names) where the
# conda package has another name; every other package has the same name in both.
CONDA_NAMES = {
    "matplotlib": "matplotlib-base",
    "seaborn": "seaborn-base",
    "snakemake": "snakemake-minimal",
    "fastjsonschema": "python-fastjsonschema",
    "tzdata": "python-tzdata",
}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock: Path) -> dict[str, str]:
    """A lock file's packages, by normalized name."""
    found = {}
    for line in lock.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.strip().split("==")
            found[normalized(name)] = version
    return found


def test_the_cuda_lock_is_the_cpu_lock_and_the_cuda_build_of_its_jax():
    """Every package the two locks share has one version; the CUDA lock adds JAX's CUDA 12
    plugin of the locked release and NVIDIA's CUDA 12 wheels, nothing else."""
    cpu, cuda = pins(ROOT / "requirements.lock"), pins(ROOT / "requirements-cuda12.lock")
    assert {name: cuda.get(name) for name in cpu} == cpu
    added = {name: version for name, version in cuda.items() if name not in cpu}
    assert added["jax-cuda12-plugin"] == added["jax-cuda12-pjrt"] == cpu["jax"] == cpu["jaxlib"]
    others = set(added) - {"jax-cuda12-plugin", "jax-cuda12-pjrt"}
    assert others and all(re.fullmatch(r"nvidia-[a-z-]+-cu12", name) for name in others), others


def test_the_cuda_environment_is_environment_yml_and_the_cuda_locks_additions():
    """What the GPU rules name under --sdm conda: conda-forge's packages as environment.yml
    has them, and from PyPI the CUDA plugin and NVIDIA wheels at the CUDA lock's versions."""
    cpu = yaml.safe_load((ROOT / "environment.yml").read_text())
    cuda = yaml.safe_load((ROOT / "environment-cuda12.yml").read_text())
    assert cuda["name"] == "blockbench-cuda12" and cuda["channels"] == cpu["channels"]
    conda_of = [d for d in cpu["dependencies"] if isinstance(d, str)]
    assert [d for d in cuda["dependencies"] if isinstance(d, str)] == conda_of
    (pip_cpu,) = [d["pip"] for d in cpu["dependencies"] if isinstance(d, dict)]
    (pip_cuda,) = [d["pip"] for d in cuda["dependencies"] if isinstance(d, dict)]
    locked = pins(ROOT / "requirements-cuda12.lock")
    added = {n: v for n, v in locked.items() if n not in pins(ROOT / "requirements.lock")}
    assert pip_cuda[: len(pip_cpu)] == pip_cpu
    assert dict(normalized_pin(s) for s in pip_cuda[len(pip_cpu) :]) == added


def normalized_pin(spec: str) -> tuple[str, str]:
    name, version = spec.split("==")
    return normalized(name), version


def test_environment_yml_pins_what_requirements_lock_pins():
    """conda is not on the test machine: the two files are compared name by name."""
    lock = pins(ROOT / "requirements.lock")
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "blockbench"
    assert env["channels"] == ["conda-forge", "bioconda", "nodefaults"]
    deps = env["dependencies"]
    pip = [d for d in deps if isinstance(d, dict)]
    assert len(pip) == 1 and set(pip[0]) == {"pip"}
    from_conda = {}
    for spec in (d for d in deps if isinstance(d, str)):
        if spec in ("pip", "python=3.11"):
            continue
        name, version = spec.split("==")
        from_conda[normalized(name)] = version
    from_pip = {}
    for spec in pip[0]["pip"]:
        # no -r, -e or paths: Snakemake copies the file elsewhere to build it (--sdm conda)
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[A-Za-z0-9_.+-]+", spec), spec
        name, version = spec.split("==")
        from_pip[normalized(name)] = version
    aliases = {normalized(conda): pypi for pypi, conda in CONDA_NAMES.items()}
    pinned = {aliases.get(name, name): version for name, version in from_conda.items()}
    assert not set(pinned) & set(from_pip), "pinned twice"
    pinned.update(from_pip)
    assert pinned == lock, {k: (pinned.get(k), lock.get(k)) for k in set(pinned) ^ set(lock)}
    assert len(from_conda) + len(from_pip) == len(lock)
    assert from_pip == {"shfmt-py": lock["shfmt-py"]}  # the one package conda lacks


def test_one_version_in_pyproject_changelog_citation_and_snakedeploy_lines():
    """The version a user cites, pins and reads about is one: pyproject's."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(citation["version"]) == version
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d)\)$", changelog, re.M)
    assert released[0] == (version, str(citation["date-released"])), released
    assert f"--tag v{version}" in (ROOT / "docs/module.md").read_text()
