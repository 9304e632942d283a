"""The README's first screen and the references' index, written from the committed reference
runs, never by hand: `blockbench front-page`.

A number typed into the README drifts from the run it came from. Three blocks are rebuilt
from each reference's claims.csv and raw records: the verdict map (claim x machine kind and
setup, each claim's headline part with its 95% interval), also written as
results/reference/verdict_map.csv; the run times beside the two commands; and the table of
reference runs in results/reference/README.md. tests/test_docs.py fails when a copy differs
from what the references say.
"""

import argparse
import os
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge.part_result import PartResult
from blockbench.judge.verdicts import headline, value_ci
from blockbench.present.verdict_tables import what_ran, without_marks
from blockbench.records.layout import raw_files
from blockbench.records.methods import last_commit_of
from blockbench.records.spec import METHOD_VERSION
from blockbench.records.store import read_json, write_bytes_atomic

MAP = (
    "<!-- verdict map: written by `blockbench front-page` -->",
    "<!-- end of the verdict map -->",
)
TIMES = ("<!-- run times: written by `blockbench front-page` -->", "<!-- end of the run times -->")
INDEX = (
    "<!-- reference runs: written by `blockbench front-page` -->",
    "<!-- end of the reference runs -->",
)
MAP_CSV = "verdict_map.csv"
LIBRARIES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS"}
# A kind's folder holds its default run (`run/`, `repeat/`), a run of each other catalog
# (`<catalog>/run/`) and the articles' own setups (`paper/run/`, config/paper.yaml).
PAPER = "paper"
RELEASE = re.compile(r"jax-(\d[\d.]*)")  # a kind's folder of the default grid under a release
FIGURE = ("article_A.png", "Source A: what a timer sees of jnp.dot(x, x), article vs run")


@cache
def run_facts(run: Path) -> dict[str, Any]:
    """A committed run's facts (raw_facts), from the one raw folder its `raw/` holds."""
    (raw,) = [p for p in (run / "raw").iterdir() if p.is_dir()]
    return raw_facts(raw)


@cache
def raw_facts(raw: Path) -> dict[str, Any]:
    """What a reader needs to place one run: its code, date, machine, libraries and time,
    read from its raw records (what each library used, not what was asked). A GPU is one a
    process measured on: a process not run there records none."""
    records = [read_json(p) for p in raw_files(raw)]
    first = min(records, key=lambda r: r["started_at"])
    prov = first["provenance"]
    kernels = sorted(
        {
            f"{LIBRARIES.get(pool.get('internal_api'), pool.get('internal_api'))}"
            f" {pool.get('architecture')}"
            for r in records
            for pool in (r["provenance"].get("blas") or {}).get("threadpools") or []
            if pool.get("user_api") == "blas"
        }
    )
    forced = any("OPENBLAS_CORETYPE" in r["provenance"]["env"] for r in records)
    gpus = sorted(
        {
            r["provenance"]["device"]["model"]
            for r in records
            if r["cell"]["device"] != "cpu" and r["status"] == "ok"
        }
    )
    host = prov["host"]
    return {
        "label": raw.name,
        "commit": ((prov.get("git") or {}).get("commit") or "unrecorded")[:7],
        "method": first["method_version"],
        "date": datetime.fromtimestamp(first["started_at"], UTC).strftime("%Y-%m-%d"),
        "processes": len(records),
        # first process's start to the last one's end: the measuring, without the venv,
        # Snakemake's start and the report
        "measuring_s": max(r["finished_at"] or r["started_at"] for r in records)
        - first["started_at"],
        "cpu": without_marks(host["cpu_model"])
        + f", {host['cpu_count_logical']} CPUs"
        + (f" ({host['cpu_signature']})" if host.get("cpu_signature") else ""),
        "gpus": gpus,
        "jax": prov["software"]["packages"].get("jax"),
        "numpy": prov["software"]["packages"].get("numpy"),
        "blas": (" and ".join(kernels) or "unrecorded")
        + (", forced by OPENBLAS_CORETYPE" if forced else ", as installed"),
    }


@dataclass(frozen=True)
class Column:
    """One column of the map: a machine kind's reference at one setup, its runs one per
    catalog (their claims are the column's rows)."""

    kind: Path
    setup: str
    runs: tuple[Path, ...]

    @property
    def facts(self) -> dict[str, Any]:
        return run_facts(self.runs[0])


def kinds(reference: Path) -> list[Path]:
    """Each machine kind's folder with a default reference run of today's method, CPU-only
    kinds first (the kind `blockbench claims` times a plan against)."""
    found = sorted(p for p in reference.iterdir() if (p / "run" / "claims.csv").exists())
    today = [p for p in found if run_facts(p / "run")["method"] == METHOD_VERSION]
    return sorted(today, key=lambda p: bool(run_facts(p / "run")["gpus"]))


def release_of(folder: Path) -> str | None:
    """The JAX release a kind's `jax-<version>/` folder was measured under (None: not one;
    `jax-docs/` is a catalog's)."""
    found = RELEASE.fullmatch(folder.name)
    return found[1] if found else None


def columns(reference: Path) -> list[Column]:
    """Every kind's default, paper-setup and other-release references (a `jax-<version>/`
    folder: the default grid under that JAX release): today's method before older ones (each
    column names its method version), CPU-only kinds before those with a GPU."""
    found = []
    for kind in sorted(p for p in reference.iterdir() if (p / "run" / "claims.csv").exists()):
        subs = sorted(p for p in kind.iterdir() if (p / "run" / "claims.csv").exists())
        others = [p / "run" for p in subs if p.name != PAPER and not release_of(p)]
        kit = any((kind / "run" / "raw").glob("*/kit.json"))  # the GPU kit's grid, not Snakemake's
        found.append(Column(kind, "GPU kit" if kit else "default", (kind / "run", *others)))
        found += [Column(kind, f"JAX {release_of(p)}", (p / "run",)) for p in subs if release_of(p)]
        if (kind / PAPER / "run" / "claims.csv").exists():
            found.append(Column(kind, PAPER, (kind / PAPER / "run",)))
    return sorted(
        found,
        key=lambda c: (bool(c.facts["gpus"]), c.facts["method"] != METHOD_VERSION, c.kind.name),
    )


def claims_of(column: Column, table: str = "claims.csv") -> pd.DataFrame:
    """The column's claims (or their parts: `claim_parts.csv`), every catalog's."""
    return pd.concat(
        [
            claims_table(run) if table == "claims.csv" else pd.read_csv(run / table)
            for run in column.runs
        ]
    )


# HEADED = the claims tables whose row shows the part its verdict rests on: made since
# verdicts.headline (they keep the interval a part was decided on beside its 95% CI)
HEADED = "decided_low"
SHOWN = ("measured", "ci_low", "ci_high", "setup")
# what headline reads of a part in an older parts table (None where it was empty)
FIGURES = ("measured", "ci_low", "ci_high", "size", "article_size")


def claims_table(run: Path) -> pd.DataFrame:
    """A run's claims table as the map shows it. An older table headed each claim with its
    first part; there the part today's rule picks (blockbench.judge.verdicts.headline) is
    read from its parts table, with the values the code of its method judged it on."""
    claims = pd.read_csv(run / "claims.csv")
    if HEADED in claims:
        return claims
    parts = pd.read_csv(run / "claim_parts.csv")
    for i, r in claims.iterrows():
        rows = parts[parts["claim_id"] == r["claim_id"]]
        if rows.empty:
            continue
        judged = [
            PartResult(
                p.part,
                p.outcome,
                condition=p.condition,
                scale=p.scale,
                **{k: None if pd.isna(getattr(p, k)) else getattr(p, k) for k in FIGURES},
            )
            for p in rows.itertuples()
        ]
        head = rows.iloc[judged.index(headline(r["verdict"], judged))]
        claims.loc[i, ["metric", *SHOWN]] = [head["part"], *(head[k] for k in SHOWN)]
    return claims


def cell(r: Any, parts: pd.DataFrame) -> str:
    """A claim's verdict and its headline part's value with its 95% interval, the part named
    where the claim has several, the size it was measured at where that is not the article's;
    for a claim not run, why, and what of it ran, in claims.md's words."""
    mine = parts[parts["claim_id"] == r.name]
    if r.verdict == "not_run":
        missing = sorted(set(re.findall(r"(\w+) not in this run", str(r.note))))
        why = f"no {' or '.join(m.upper() for m in missing)}" if missing else "not in the grid"
        ran = what_ran(mine)
        return f"not_run: {why}" + (f"; {ran}" if ran else "")
    said = f"{r.verdict} {value_ci(r.measured, r.ci_low, r.ci_high)}".strip()
    at = re.match(r"measured at (\S+) \(article", str(r.setup))
    part = f": {r.metric}" if mine["part"].nunique() > 1 else ""
    return said + (f" at {at.group(1)}" if at else "") + part


def judged_by(run: Path) -> str:
    """Which code judged a run's committed results: a run of today's method is rebuilt by
    this checkout's (tests/test_references.py), an older one keeps its method's judging."""
    f = run_facts(run)
    return "this checkout" if f["method"] == METHOD_VERSION else f"method {f['method']}'s code"


def made_by(run: Path) -> str:
    """`method 11 · 0dc308a · 2026-11-28`: the code that measured a run, and when."""
    f = run_facts(run)
    return f"method {f['method']} · {f['commit']} · {f['date']}"


def head(column: Column, root: Path) -> str:
    """The kind and setup; per catalog, the method, commit and date that measured it and the
    code that judged it."""
    link = Path(os.path.relpath(column.kind / "README.md", root)).as_posix()
    catalogs = "".join(
        f"<br>{catalog(r)}: {made_by(r)}, judged by {judged_by(r)}" for r in column.runs
    )
    return f"[`{column.kind.name}`]({link})<br>{column.setup}{catalogs}"


# The catalog of a claims table older than its `catalog` column: there was one then
FIRST_CATALOG = "articles"


def catalog(run: Path) -> str:
    """The catalog a column's run measured: its claims table says."""
    table = pd.read_csv(run / "claims.csv")
    return str(table["catalog"].iloc[0]) if "catalog" in table else FIRST_CATALOG


def verdict_map(cols: list[Column], root: Path) -> tuple[list[str], pd.DataFrame]:
    """Claim x column, every catalog's claims, in the order the catalogs give them: as
    Markdown, and as one row per (column, claim) for the CSV."""
    head_row, *rows = map_cells(
        [head(c, root) for c in cols],
        [claims_of(c) for c in cols],
        [claims_of(c, "claim_parts.csv") for c in cols],
    )
    markdown = [
        "| " + " | ".join(str(c).replace("|", "/") for c in row) + " |"
        for row in [head_row, ["---"] * len(head_row), *rows]
    ]
    return markdown, pd.DataFrame(
        [
            {
                "kind": c.kind.name,
                "setup": c.setup,
                **claim_row(r, run_facts(run), judged_by(run)),
            }
            for c in cols
            for run in c.runs
            for r in claims_table(run).itertuples()
        ]
    )


def map_cells(
    heads: list[str], claims: list[pd.DataFrame], parts: list[pd.DataFrame]
) -> list[list[str]]:
    """The map's cells, its head row first: a row per claim of any column, in the order the
    columns give them, a column per claims table (with its parts table); empty where a
    column lacks the claim. A run's own map (present/run_map.py) puts itself first."""
    tables = [t.set_index("claim_id") for t in claims]
    ids = list(dict.fromkeys(i for t in tables for i in t.index))
    slugs = {i: t.loc[i, "slug"] for t in tables for i in t.index}
    rows = [["claim", *heads]]
    for i in ids:
        rows.append(
            [f"{i} `{slugs[i]}`"]
            + [
                cell(t.loc[i].rename(i), p) if i in t.index else ""
                for t, p in zip(tables, parts, strict=True)
            ]
        )
    return rows


def claim_row(r: Any, facts: dict[str, Any], judged: str) -> dict[str, Any]:
    """One claim of one run as the map's CSV gives it: its verdict, the part its headline
    is, that part's value and 95% interval, and the code that measured (`facts`, run_facts)
    and judged it."""
    f = facts
    return {
        "catalog": getattr(r, "catalog", FIRST_CATALOG),
        "claim_id": r.claim_id,
        "slug": r.slug,
        "verdict": r.verdict,
        "confidence": r.confidence if isinstance(r.confidence, str) else "",
        "part": r.metric if isinstance(r.metric, str) else "",
        "measured": r.measured,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "setup_note": r.setup if isinstance(r.setup, str) else "",
        "run_label": f["label"],
        "method": f["method"],
        "measured_by": f["commit"],
        "date": f["date"],
        "judged_by": judged,
    }


def minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def took(run: Path) -> str:
    f = run_facts(run)
    return f"{minutes(f['measuring_s'])}, {f['processes']} processes"


def repeat_said(run: Path) -> str:
    """A run's repeat (`repeat/` beside its `run/`: same commit, same hour): its time, and
    whether it gave the same verdicts."""
    repeat = run.parent / "repeat"
    if run.name != "run" or not (repeat / "claims.csv").exists():
        return ""
    one, two = (
        pd.read_csv(p / "claims.csv").set_index("claim_id")["verdict"] for p in (run, repeat)
    )
    moved = [f"{i} {one[i]} then {two.get(i)}" for i in one.index if two.get(i) != one[i]]
    return f" (its repeat: {took(repeat)}; {'; '.join(moved) or 'the same verdicts'})"


def times(cols: list[Column]) -> list[str]:
    """One line a column: how long its measuring took, its machine and libraries."""
    lines = []
    for c in cols:
        f = c.facts
        where = f["cpu"] + "".join(f" + {g}" for g in f["gpus"])
        others = "".join(
            f"; the {r.parent.name} catalog {took(r)}{repeat_said(r)}" for r in c.runs[1:]
        )
        lines.append(
            f"- `{c.kind.name}`, {c.setup}: {took(c.runs[0])}{repeat_said(c.runs[0])}{others}."
            f" {where}; JAX {f['jax']}, NumPy {f['numpy']} on {f['blas']}."
        )
    return lines


def run_folders(reference: Path) -> list[Path]:
    """Every committed run: a folder holding one run's raw records beside its results."""
    return sorted(p.parent for p in reference.rglob("raw") if (p.parent / "claims.csv").exists())


def index(reference: Path) -> list[str]:
    """One row a committed run: where it is, its label, the code that measured and judged
    it, how long it took, its machine and libraries, and the command that rebuilds it."""
    rows = [
        "| folder | run | measured by | judged by | processes | machine | rebuilt by |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in run_folders(reference):
        f, where = run_facts(run), run.relative_to(reference).as_posix()
        rebuild = f"`python3 scripts/bootstrap.py regenerate results/reference/{where}`"
        if f["method"] != METHOD_VERSION:  # today's code refuses it: its method's last code
            commit = last_commit_of(f["method"]) or f["commit"]
            rebuild = f"`git checkout {commit} && {rebuild.strip('`')}`"
        machine = f["cpu"] + "".join(f" + {g}" for g in f["gpus"]) + f"; {f['blas']}"
        rows.append(
            f"| [`{where}`]({where}/claims.md) | `{f['label']}` | {made_by(run)} |"
            f" {judged_by(run)} | {f['processes']} | {machine} | {rebuild} |"
        )
    return rows


def blocks(reference: Path, root: Path) -> tuple[dict[tuple[str, str], str], pd.DataFrame]:
    """The generated Markdown of each README block (the map, with one figure, and the run
    times), and the map as one row per (column, claim)."""
    root, reference = root.resolve(), reference.resolve()
    cols = columns(reference)
    figure = next(
        (
            c.runs[0] / "figures" / FIGURE[0]
            for c in cols
            if (c.runs[0] / "figures" / FIGURE[0]).exists()
        ),
        None,
    )
    shown = [f"![{FIGURE[1]}]({figure.relative_to(root)})", ""] if figure else []
    markdown, table = verdict_map(cols, root)
    return {
        MAP: "\n".join([MAP[0], "", *markdown, "", *shown, MAP[1]]),
        TIMES: "\n".join([TIMES[0], "", *times(cols), "", TIMES[1]]),
    }, table


def written(root: Path) -> dict[Path, str]:
    """Every file `front-page` writes, as it would write it now: the README and the
    references' index with their blocks replaced, and the map's CSV."""
    reference = root / "results" / "reference"
    readme = root / "README.md"
    text = readme.read_text()
    generated, table = blocks(reference, root)
    for marks, block in generated.items():
        text = replaced(text, marks, block)
    listed = reference / "README.md"
    rows = "\n".join([INDEX[0], "", *index(reference.resolve()), "", INDEX[1]])
    return {
        readme: text,
        listed: replaced(listed.read_text(), INDEX, rows),
        reference / MAP_CSV: table.to_csv(index=False, float_format="%.6g"),
    }


def replaced(readme: str, marks: tuple[str, str], new: str) -> str:
    """The README with one generated block swapped for `new`."""
    begin, end = marks
    if begin not in readme or end not in readme:
        raise ValueError(f"the README has no generated block ({begin} ... {end})")
    before, rest = readme.split(begin, 1)
    return before + new + rest.split(end, 1)[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="blockbench front-page", description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=Path("."), help="the checkout (default: .)")
    p.add_argument("--check", action="store_true", help="exit 1 where a written file differs")
    args = p.parse_args(argv)
    files = written(args.root)
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path} differs from what the references say", file=sys.stderr)
        return int(bool(stale))
    for path in stale:
        write_bytes_atomic(path, files[path].encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
