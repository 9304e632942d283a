#!/usr/bin/env python3
"""The host's state on one screen, before measuring: what blockbench.measure.host_state reads
for every core this process may use, and what in it would slow the cells or NumPy's BLAS
(exit status 1).

    .venv/bin/python scripts/host_check.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from blockbench.measure import cores, host_state, provenance

allowed = cores.allowed()
state = host_state.read(allowed)
print(f"CPU: {provenance.cpu_model()}, {len(allowed)} cores this process may use")
print(*host_state.describe(state), sep="\n")
# what NumPy's BLAS will run here, and whether the environment chose it
facts = {"env": provenance.environment(), "blas": provenance.blas()}
forced = provenance.blas_warnings(facts, blas_cell=True)
print(*(forced or ["NumPy's BLAS picks its own kernel"]), sep="\n")
print("whether the cores keep their speed: python3 benchmarks/core_speed.py")
sys.exit(1 if host_state.speed_warnings(state) or forced else 0)
