"""blockbench: blocking-correct re-measurement of published JAX vs NumPy speed claims.

The package is cut into layers; a module imports only from its own layer and the ones
listed after it (tests/test_layers.py checks it):

- `pipeline`: the workflow layer: the grid a config asks for, the order of its jobs, the
  stages the Snakemake rules call, JAX releases, SLURM, the GPU kit and the `blockbench`
  command (`pipeline.cli`, which imports each tool only when it runs). Nothing imports it but
  the workflow, the scripts, the benchmarks and `python -m blockbench` (`__main__`, above
  every layer).
- `present`: figures and the claims report, drawn from what `judge` decided.
- `judge`: from measurement files to tables, intervals, between-run studies, pooled runs
  and each claim's verdict.
- `measure`: one cell, in and around its worker process: timing, sampling, the machine's
  state, the parent command that runs the worker.
- `workloads`: the articles' workloads, each declared once in its own module; the registry
  collects them. Importing it does not import JAX.
- `records`: the data model every layer shares: what the parent tells the worker, the
  measurement file (schema, atomic writes) and where results live.
- `errors`: the error a user can fix, reported as one line.
"""

__version__ = "0.1.0"
