"""Judging: measurement files into tables (`aggregate`); what a run measured as the claims
read it (`run_view`) and its intervals (`uncertainty`); each claim part judged against its
rule from the claims catalogs and the articles' numbers (`claim_rules`, `articles`,
`part_evaluators`, `part_result`); `verdicts`, where a claim becomes its verdict and its
confidence, and the claims table; the between-run term, studies and pooling
(`between_runs`, `studies`, `study_build`, `pooling`); and how many rounds each part needs
(`stopping`). The claims stage judges once; everything later reads its tables.

May import `measure` (its sample statistics), `workloads`, `records` and `errors`; never
`present` or `run`, and never JAX."""
