"""Measuring one grid cell: the parent command (`parent`) checks the cell, takes the host's
lock and starts a worker process (`worker`), which times each phase (`cell`, `harness`,
`sampling`) with the kernel's view of every sample (`disturbance`) on chosen cores
(`cores`) and records what the number was measured on (`provenance`).

May import `workloads`, `records` and `errors`; never `judge`, `present` or `run`. Only the
worker of a JAX cell imports JAX."""
