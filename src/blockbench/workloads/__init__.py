"""Workloads, one module each: inputs, float64 check, implementations, and their declaration
(`WORKLOADS`, see `declare`). blockbench's own are the modules here, which any catalog may
name; a catalog's own sit in its folder's `workloads/` and join as the run names it.
`registry` collects both. Importing any of them does not import JAX: the functions load it
where they first run.

May import `records` and `errors` only."""
