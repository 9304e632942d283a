"""The figures a run draws, by name: what the workflow's targets list when it parses, which
must not import the plotting libraries (blockbench.present.figures draws them; a test holds
the two to the same names).

Each catalog of claims has a figure of its own: drawn by hand for the articles' catalog (one
per source), else the generic one, `catalog_<name>`, of its claim parts against their rules
and published figures."""

from collections.abc import Iterable

ARTICLE_FIGURES = ("article_A", "article_B", "article_C", "article_D")
# Catalogs whose sources have figures drawn by hand (blockbench.present.article_figures).
HAND_DRAWN = {"articles": ARTICLE_FIGURES}
# The figures of every run, whatever its catalogs.
EVERY_RUN = ("time_vs_size", "speedup_vs_size", "phases", "claims", "rule_parts")
GENERIC = "catalog_"


def names(catalogs: Iterable[str]) -> list[str]:
    """The figures of a run of these catalogs, in the order given, then every run's."""
    own = [n for c in dict.fromkeys(catalogs) for n in HAND_DRAWN.get(c, (GENERIC + c,))]
    return [*own, *EVERY_RUN]


def catalog_of(name: str) -> str | None:
    """The catalog a generic figure is of (None: not a generic figure)."""
    return name.removeprefix(GENERIC) if name.startswith(GENERIC) else None
