#!/usr/bin/env python3
"""Several runs' claims.csv, claim by claim (an A/A check of the whole pipeline): `blockbench
compare`, runnable from a checkout without installation (see `--help`,
blockbench.present.run_comparison).

    .venv/bin/python benchmarks/compare_runs.py RUN_A/claims.csv RUN_B/claims.csv [...]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.present.run_comparison import main

sys.exit(main())
