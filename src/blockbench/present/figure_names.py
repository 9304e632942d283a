"""The figures a run draws, by name: what the workflow's targets list when it parses, which
must not import the plotting libraries (blockbench.present.figures draws them; a test holds
the two to the same names).

Each catalog of claims has a figure of its own: drawn by hand for the articles' catalog (one
per source), else the generic one, `catalog_<name>`, of its claim parts against their rules
and published figures. Each claim with a ratio part has its anatomy, `anatomy_<ID>`: what
each side's time is made of, phase by phase (blockbench.present.anatomy_figures)."""

from collections.abc import Iterable

from blockbench.judge.claim import RATIO, Claim

ARTICLE_FIGURES = ("article_A", "article_B", "article_C", "article_D")
# Catalogs whose sources have figures drawn by hand (blockbench.present.article_figures).
HAND_DRAWN = {"articles": ARTICLE_FIGURES}
# The figures of every run, whatever its catalogs.
EVERY_RUN = ("time_vs_size", "speedup_vs_size", "phases", "claims", "rule_parts", "verdict_map")
GENERIC = "catalog_"
ANATOMY = "anatomy_"


def names(catalogs: Iterable[str], claims: Iterable[Claim] = ()) -> list[str]:
    """The figures of a run of these catalogs, in the order given, then every run's, then
    the anatomy of each of `claims` (the run's) that has a ratio part."""
    own = [n for c in dict.fromkeys(catalogs) for n in HAND_DRAWN.get(c, (GENERIC + c,))]
    return [*own, *EVERY_RUN, *anatomies(claims)]


def anatomies(claims: Iterable[Claim]) -> list[str]:
    """`anatomy_<ID>` for each claim with a ratio part, in the claims' order: a trend, a
    growth or a check has no two sides to take apart."""
    return [ANATOMY + c.id for c in claims if any(p.kind == RATIO for p in c.parts)]


def claim_of(name: str) -> str | None:
    """The claim an anatomy figure is of (None: not an anatomy figure)."""
    return name.removeprefix(ANATOMY) if name.startswith(ANATOMY) else None


def catalog_of(name: str) -> str | None:
    """The catalog a generic figure is of (None: not a generic figure)."""
    return name.removeprefix(GENERIC) if name.startswith(GENERIC) else None
