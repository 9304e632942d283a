"""Snakemake job: the check every GPU cell of a run waits for (blockbench.measure.gpu_ready).
A machine that cannot run GPU cells ends this job with the cause, in its log and on the
console, and no GPU cell starts."""

import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from blockbench.measure import gpu_ready

with open(snakemake.log[0], "w") as log, redirect_stdout(log), redirect_stderr(log):
    status = gpu_ready.main(["--out", snakemake.output[0]])
if status != 0:
    print(Path(snakemake.log[0]).read_text().strip(), file=sys.stderr)
sys.exit(status)
