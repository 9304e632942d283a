"""Presenting: the figures (`figures`, `article_figures`, `version_figures`) and the claims
report (`claims_report`, `stops`), drawn from what `judge` decided; runs compared side by
side (`run_comparison`); the README's first screen from the reference runs (`front_page`).

May import `judge` and the layers below it; never `run`, and never JAX."""
