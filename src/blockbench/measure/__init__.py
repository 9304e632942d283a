"""Measuring one grid cell: the parent command (`parent`) checks the cell, takes the host's
lock, watches the rest of the host (`host_load`) and starts a worker process (`worker`),
which times each phase (`cell`, `harness`, `sampling`, `stats`) with the kernel's view of
every sample (`disturbance`) on chosen cores (`cores`) and records what the number was
measured on (`provenance`, `slurm_job`, `probe`). `core_speed` checks whether a machine's
cores keep their speed; `host_check` prints it and the host's state before a run.

May import `workloads`, `records` and `errors`; never `judge`, `present` or `run`. Only the
worker of a JAX cell imports JAX."""
