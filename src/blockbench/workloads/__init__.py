"""The catalogs' workloads, one module each: inputs, float64 check, implementations, and
their declaration (`WORKLOADS`, see `declare`); `registry` collects them. Importing any of
them does not import JAX: the functions load it where they first run.

May import `records` and `errors` only."""
