"""Test-only: a Python that imports what the lent GPU machine's image has, and no more.

Put this folder first on PYTHONPATH (tests/fake_gpu.py's `image_env` does) and every package
below, which requirements.lock has and the image lacks, fails to import as it would there.
The GPU kit and every worker it starts then run on the image's packages, while the test
runner that starts them keeps its own. A new import of one of these in the kit's path fails
the rehearsal (tests/test_gpu_kit.py) instead of a GPU session.

The list: the GPU image as read on 2026-11-17 (Python 3.12.3, JAX 0.11.2 with
jax-cuda13-plugin and jax-cuda13-pjrt 0.11.2, NumPy 2.5.2, driver 580.159.04; pandas, SciPy,
PyYAML, psutil, threadpoolctl, nvidia-ml-py, py-cpuinfo present; no Snakemake, no jsonschema,
no package registry), by import name.
"""

import importlib.abc
import sys

READ_ON = "2026-11-17"
NOT_ON_THE_IMAGE = frozenset(
    {
        "annotated_types",
        "argparse_dataclass",
        "black",
        "conda_inject",
        "configargparse",
        "connection_pool",
        "docutils",
        "dpath",
        "fastjsonschema",
        "git",  # gitpython
        "gitdb",
        "greenlet",
        "humanfriendly",
        "immutables",
        "jsonschema",
        "jsonschema_specifications",
        "jupyter_core",
        "nbformat",
        "platformdirs",
        "pulp",
        "pydantic",
        "pydantic_core",
        "pytokens",
        "referencing",
        "rpds",  # rpds-py
        "ruff",
        "shfmt",  # shfmt-py
        "smart_open",
        "smmap",
        "snakefmt",
        "snakemake",
        "snakemake_executor_plugin_slurm",
        "snakemake_interface_common",
        "snakemake_interface_executor_plugins",
        "snakemake_interface_logger_plugins",
        "snakemake_interface_report_plugins",
        "snakemake_interface_scheduler_plugins",
        "snakemake_interface_storage_plugins",
        "sqlalchemy",
        "sqlmodel",
        "tenacity",
        "throttler",
        "traitlets",
        "typing_inspection",
        "tzdata",
        "yte",
    }
)


class NotOnTheImage(importlib.abc.MetaPathFinder):
    """Asked first for every import: a package the image lacks fails as a missing one."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in NOT_ON_THE_IMAGE:
            raise ModuleNotFoundError(
                f"No module named {name!r} (not on the GPU image read {READ_ON})", name=name
            )
        return None


sys.meta_path.insert(0, NotOnTheImage())
