#!/usr/bin/env python3
"""The GPU kit (see `--help` and docs/gpu.md): `blockbench gpu-kit`. Needs no Snakemake and
no installation: a GPU machine with JAX and NumPy runs it from a copy of the checkout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.pipeline.gpu_kit import main

sys.exit(main())
