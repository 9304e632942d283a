#!/usr/bin/env python3
"""Measure one grid cell and write its JSON (see `--help`): `blockbench measure`, runnable
from a checkout without installation (a cluster node, the GPU image)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.measure.parent import main

sys.exit(main())
