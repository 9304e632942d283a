"""The figures a run draws, by name: what the workflow's targets list when it parses, which
must not import the plotting libraries (blockbench.present.figures draws them; a test holds
the two to the same names)."""

ARTICLE_FIGURES = ("article_A", "article_B", "article_C", "article_D")
NAMES = (*ARTICLE_FIGURES, "time_vs_size", "speedup_vs_size", "phases", "claims", "rule_parts")
