"""Judging: measurement files into tables (`aggregate`), intervals (`resampling`), the
between-run term and pooling (`random_effects`, `studies`, `pooling`), and each claim's
verdict from the rules of config/claims.yaml (`claim_rules`, `claims`, `verdicts`).

May import `measure` (its sample statistics), `workloads`, `records` and `errors`; never
`present` or `run`, and never JAX."""
