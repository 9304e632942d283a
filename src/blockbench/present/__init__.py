"""Presenting: the figures (`figures`, `article_figures`, `version_figures`) and the claims
report (`claims_report`), drawn from what `judge` decided.

May import `judge` and the layers below it; never `run`, and never JAX."""
