"""Judging: measurement files into tables (`aggregate`); what a run measured as the claims
read it (`run_view`) and its intervals (`uncertainty`, `scales`); each claim part judged
against its rule from the claims catalogs (`claim_rules`, `claims`, `part_result`) and the
claims table (`verdicts`); the between-run term, studies and pooling (`between_runs`,
`studies`, `study_making`, `pooling`); the values of the articles' figures
(`article_points`); and the words of a judgment (`wording`). The claims stage judges once;
everything later reads its tables.

May import `measure` (its sample statistics), `workloads`, `records` and `errors`; never
`present` or `run`, and never JAX."""
