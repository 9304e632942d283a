#!/usr/bin/env python3
"""Does each core of this machine keep its speed? `blockbench core-speed`, runnable from a
checkout without installation (what it times and why: blockbench.measure.host_check).

    .venv/bin/python benchmarks/core_speed.py [--seconds 30] [--window-s 0.15]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.measure.host_check import speed_check

sys.exit(speed_check())
