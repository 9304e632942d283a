#!/usr/bin/env python3
"""The host's state on one screen, before measuring: `blockbench host-check`, runnable from
a checkout without installation (exit status 1: something would slow the cells or NumPy's
BLAS).

    .venv/bin/python scripts/host_check.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.measure.host_check import state_check

sys.exit(state_check())
