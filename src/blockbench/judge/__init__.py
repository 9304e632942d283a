"""Judging: measurement files into tables (`aggregate`); what a run measured as the claims
read it (`run_view`) and its intervals (`uncertainty`, `scales`); each claim part judged
against its rule from the claims catalogs (`claim_rules`, `part_evaluators`, `part_result`);
`verdicts`, where a claim becomes its verdict and its confidence, and the claims table; the
between-run term, studies and pooling (`between_runs`, `studies`, `study_making`,
`pooling`); and the values of the articles' figures (`article_points`). The claims stage
judges once; everything later reads its tables.

May import `measure` (its sample statistics), `workloads`, `records` and `errors`; never
`present` or `run`, and never JAX."""
