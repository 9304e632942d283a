"""Loaded by every Python process of an off-Linux test (tests/test_off_linux.py puts this folder
on PYTHONPATH): Linux's facilities taken away from blockbench's own code, as on macOS.

- no `os.sched_setaffinity` / `os.sched_getaffinity` (no pinning, no affinity to read);
- no /proc and no /sys for blockbench's modules (no per-task counters, no cgroup, no
  governors); the libraries keep theirs, as they have their own ways on other systems.
"""

import builtins
import io
import os
import sys

for name in ("sched_setaffinity", "sched_getaffinity"):
    if hasattr(os, name):
        delattr(os, name)

HIDDEN = ("/proc", "/sys")


# the standard library's own wrappers between the caller and the file
WRAPPERS = {"pathlib", "io", "os", "genericpath", "posixpath", "shutil"}


def _asked_by_blockbench() -> bool:
    """Whether the code that asked (the first frame outside the standard library's file
    wrappers) is blockbench's own: psutil, NumPy and JAX keep their own ways to the system."""
    frame = sys._getframe(3)  # past this function, _hidden and the refusing wrapper
    while frame is not None and frame.f_globals.get("__name__") in WRAPPERS:
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__", "").startswith("blockbench")


def _hidden(path) -> bool:
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        return False
    return text.startswith(HIDDEN) and _asked_by_blockbench()


def _refusing(real):
    def call(path=".", *args, **kwargs):
        if _hidden(path):
            raise FileNotFoundError(2, "not on this platform (tests/off_linux)", str(path))
        return real(path, *args, **kwargs)

    return call


builtins.open = io.open = _refusing(io.open)
for name in ("listdir", "scandir", "stat"):
    setattr(os, name, _refusing(getattr(os, name)))
os.environ["BLOCKBENCH_OFF_LINUX"] = "1"  # so a test can see this file was loaded
