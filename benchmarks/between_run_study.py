#!/usr/bin/env python3
"""A between-run study from several runs (config/between_run/<kind>.yaml): `blockbench
study`, runnable from a checkout without installation (see `--help`,
blockbench.run.make_study).

    .venv/bin/python benchmarks/between_run_study.py RUN_DIR[=LABEL] RUN_DIR[=LABEL] ...
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.run.make_study import main

sys.exit(main())
