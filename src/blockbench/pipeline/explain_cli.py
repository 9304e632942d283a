"""`blockbench explain CLAIM [RUN_DIR]`: one claim of a run taken apart, in the report's words.

It prints the claim, its verdict, the part its verdict rests on (the claims table's headline,
blockbench.judge.verdicts.headline) with its value and 95% interval against its rule and the
article's figure, what each side of each of its ratio parts is made of, phase by phase, with
each phase's share of its side's time (blockbench.present.claim_anatomy, which the anatomy
figures draw), and the same part on each committed reference that has the claim.

RUN_DIR (default `results`) is a run's folder, holding claims.csv and tables/, or a
committed reference's run folder (results/reference/<kind>/run), holding claims.csv,
claim_parts.csv and raw/: a reference keeps no tables, so its cells are rebuilt from its raw
JSON, measuring nothing.
"""

import argparse
import sys
from pathlib import Path

import pandas as pd

from blockbench.errors import InputError
from blockbench.judge import aggregate
from blockbench.judge.claim import Claim
from blockbench.judge.claim_rules import figures, read_claims
from blockbench.judge.verdicts import part_line
from blockbench.pipeline.catalog_keep import SHIPPED, kept_catalogs
from blockbench.pipeline.regenerate import REFERENCE
from blockbench.present import claim_anatomy
from blockbench.present.claim_anatomy import Anatomy, part_result
from blockbench.present.front_page import claims_of, claims_table, columns
from blockbench.records.layout import CATALOGS, raw_files

PARTS = ("claim_parts.csv", "tables/claim_parts.csv")  # a reference's, then a run's
MEASUREMENTS = "tables/measurements.parquet"
INDENT = "  "


def read_claims_table(run_dir: Path) -> pd.DataFrame:
    """The run's claims table; a reference's as the README's map reads it (an older table's
    headline part picked by today's rule: blockbench.present.front_page.claims_table)."""
    if not (run_dir / "claims.csv").is_file():
        raise InputError(
            f"{run_dir}: no claims.csv (a run's folder holds claims.csv and tables/, a "
            "reference's claims.csv, claim_parts.csv and raw/)"
        )
    if (run_dir / PARTS[0]).is_file():
        return claims_table(run_dir)
    return pd.read_csv(run_dir / "claims.csv")


def read_parts(run_dir: Path) -> pd.DataFrame:
    for name in PARTS:
        if (run_dir / name).is_file():
            return pd.read_csv(run_dir / name)
    raise InputError(f"{run_dir}: no {' or '.join(PARTS)}")


def catalog_paths(run_dir: Path, table: pd.DataFrame) -> list[Path]:
    """The catalogs the run judged: as its raw folders list them (catalogs.json, copies of
    those blockbench does not ship beside it), else the shipped ones its claims table names."""
    raws = sorted(run_dir.glob(f"raw/*/{CATALOGS}"))
    paths = [path for listed in raws for path in kept_catalogs(listed.parent)]
    if paths:
        return list(dict.fromkeys(paths))
    names = table["catalog"].dropna().unique() if "catalog" in table else ["articles"]
    for name in names:
        if not (SHIPPED / str(name)).is_dir():
            raise InputError(f"{run_dir}: catalog {name!r} is neither kept by the run nor shipped")
    return [SHIPPED / str(name) for name in names]


def read_cells(run_dir: Path) -> pd.DataFrame:
    """The run's measurements table, or for a reference its cells rebuilt from raw/."""
    if (run_dir / MEASUREMENTS).is_file():
        return pd.read_parquet(run_dir / MEASUREMENTS)
    files = [
        f for raw in sorted((run_dir / "raw").glob("*")) if raw.is_dir() for f in raw_files(raw)
    ]
    if not files:
        raise InputError(f"{run_dir}: neither {MEASUREMENTS} nor raw JSON under raw/")
    return aggregate.cells(aggregate.processes(files))


def the_claim(table: pd.DataFrame, claim_id: str, run_dir: Path) -> pd.DataFrame:
    """The claim's rows of the claims table (one per run label), or a refusal naming the ids
    there are."""
    rows = table[table["claim_id"] == claim_id]
    if rows.empty:
        known = ", ".join(dict.fromkeys(table["claim_id"].astype(str)))
        raise InputError(f"no claim {claim_id!r} in {run_dir / 'claims.csv'} (known: {known})")
    return rows


def _said(value: object) -> str:
    return "" if claim_anatomy.missing(value) else str(value)


def verdict_words(row: pd.Series) -> str:
    """'not_reproduced (>=97.5%)': a verdict with its confidence, as the tables print it."""
    confidence = _said(row.get("confidence"))
    return f"{row['verdict']}" + (f" ({confidence})" if confidence else "")


def anatomy_lines(found: list[Anatomy], run_label: str) -> list[str]:
    """Each ratio part's sides in one run, phase by phase, as the anatomy figure says them."""
    mine = [a for a in found if a.run_label == run_label]
    if not mine:
        return []
    out = [f"what each side's time is made of (the figure anatomy_{mine[0].claim_id}):"]
    for a in mine:
        at = f" at {a.size}" if a.size is not None else ""
        head = " (the part its verdict rests on)" if a.headline else ""
        out.append(f"{INDENT}{a.part.name}{at}{head}:")
        said = a.lines() or [f"not run: {a.result.detail or 'none of its cells measured'}"]
        out += [f"{INDENT * 2}{line}" for line in said]
    return out


def run_lines(claim: Claim, row: pd.Series, parts: pd.DataFrame, found: list[Anatomy]) -> list[str]:
    """One run's verdict of the claim, the part it rests on, and its anatomy."""
    label = str(row["run_label"])
    out = [f"run {label}: {verdict_words(row)}"]
    if reason := _said(row.get("note")):
        out.append(f"{INDENT}why: {reason}")
    metric = _said(row.get("metric"))
    mine = parts[(parts["run_label"] == row["run_label"]) & (parts["claim_id"] == claim.id)]
    rested = mine[mine["part"] == metric]
    out.append(f"the part its verdict rests on: {metric}")
    if not rested.empty:
        out.append(f"{INDENT}{part_line(part_result(rested.iloc[0].to_dict()))}")
    part = next((p for p in claim.parts if p.name == metric), None)
    if part is not None and part.article_says:
        out.append(f"{INDENT}the article: {part.article_says}")
    return out + anatomy_lines(found, label)


def reference_lines(claim_id: str, part: str, reference: Path) -> list[str]:
    """The same part on each committed reference that has the claim."""
    out = []
    for column in columns(reference) if reference.is_dir() else []:
        parts = claims_of(column, "claim_parts.csv")
        rows = parts[(parts["claim_id"] == claim_id) & (parts["part"] == part)]
        if rows.empty:
            continue  # a reference without the claim (or the part)
        verdicts = claims_of(column)
        verdict = verdicts[verdicts["claim_id"] == claim_id]
        said = verdict_words(verdict.iloc[0]) if not verdict.empty else ""
        for r in rows.to_dict("records"):
            line = part_line(part_result(r))
            out.append(f"{INDENT}{column.kind.name}, {column.setup}: {said}; {line}")
    return ["on the committed references (the same part):", *out] if out else []


def explain(claim_id: str, run_dir: Path, reference: Path = REFERENCE) -> list[str]:
    """What `blockbench explain` prints."""
    table = read_claims_table(run_dir)
    rows = the_claim(table, claim_id, run_dir)
    parts = read_parts(run_dir)
    paths = catalog_paths(run_dir, table)
    claims = read_claims(paths)
    claim = next((c for c in claims if c.id == claim_id), None)
    if claim is None:
        raise InputError(f"claim {claim_id!r} is in {run_dir / 'claims.csv'}, not its catalogs")
    out = [f"{claim.id} `{claim.slug}` ({claim.source}): {claim.statement}"]
    found: list[Anatomy] = []
    if claim_anatomy.ratio_parts(claim):
        try:
            cells = read_cells(run_dir)
            found = claim_anatomy.anatomies(claim, claims, cells, parts, figures(paths))
        except InputError as exc:  # records of another method, say: the verdicts still read
            out.append(f"its cells could not be read here: {exc}")
    for _, row in rows.iterrows():
        out += run_lines(claim, row, parts, found)
    metric = _said(rows.iloc[0].get("metric"))
    return out + reference_lines(claim_id, metric, reference)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="blockbench explain",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("claim", help="a claim's id, as the run's claims.csv names it (A1, D1, ...)")
    p.add_argument(
        "run_dir",
        nargs="?",
        type=Path,
        default=Path("results"),
        help="a run's folder (claims.csv, tables/) or a reference's run folder (default: results)",
    )
    p.add_argument(
        "--references",
        type=Path,
        default=REFERENCE,
        help="the committed references to set beside it (default: the checkout's)",
    )
    args = p.parse_args(argv)
    try:
        lines = explain(args.claim, args.run_dir, args.references)
    except InputError as exc:
        print(f"blockbench explain: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
