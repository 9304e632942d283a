"""The README's first screen, written from the committed reference runs, never by hand:
`blockbench front-page`.

A number typed into the README drifts from the run it came from. Two blocks are rebuilt from
each reference's claims.csv and raw records: the verdict map (claim x machine kind and setup)
and the run times beside the two commands. tests/test_docs.py fails when the README's copy
differs from what the references say.
"""

import argparse
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge.verdicts import fmt
from blockbench.present.claims_report import what_ran, without_marks
from blockbench.records.layout import raw_files
from blockbench.records.spec import METHOD_VERSION
from blockbench.records.store import read_json

MAP = (
    "<!-- verdict map: written by `blockbench front-page` -->",
    "<!-- end of the verdict map -->",
)
TIMES = ("<!-- run times: written by `blockbench front-page` -->", "<!-- end of the run times -->")
LIBRARIES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS"}
# A kind's folder holds its default run (`run/`, `repeat/`), a run of each other catalog
# (`<catalog>/run/`) and the articles' own setups (`paper/run/`, config/paper.yaml).
PAPER = "paper"
FIGURE = ("article_A.png", "Source A: what a timer sees of jnp.dot(x, x), article vs run")


@cache
def run_facts(run: Path) -> dict[str, Any]:
    """What a reader needs to place one run: its code, date, machine, libraries and time,
    read from its raw records (what each library used, not what was asked)."""
    (raw,) = [p for p in (run / "raw").iterdir() if p.is_dir()]
    records = [read_json(p) for p in raw_files(raw)]
    first = min(records, key=lambda r: r["started_at"])
    prov = first["provenance"]
    kernels = sorted(
        {
            f"{LIBRARIES.get(pool.get('internal_api'), pool.get('internal_api'))}"
            f" {pool.get('architecture')}"
            for r in records
            for pool in (r["provenance"].get("blas") or {}).get("threadpools", [])
            if pool.get("user_api") == "blas"
        }
    )
    forced = any("OPENBLAS_CORETYPE" in r["provenance"]["env"] for r in records)
    gpus = sorted(
        {r["provenance"]["device"]["model"] for r in records if r["cell"]["device"] != "cpu"}
    )
    host = prov["host"]
    return {
        "label": raw.name,
        "commit": (prov.get("git") or {}).get("commit", "unrecorded")[:7],
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


def columns(reference: Path) -> list[Column]:
    """Every kind's default and paper-setup references: today's method before older ones
    (each column names its method version), CPU-only kinds before those with a GPU."""
    found = []
    for kind in sorted(p for p in reference.iterdir() if (p / "run" / "claims.csv").exists()):
        others = sorted(
            p / "run"
            for p in kind.iterdir()
            if p.name not in ("run", "repeat", PAPER) and (p / "run" / "claims.csv").exists()
        )
        kit = any((kind / "run" / "raw").glob("*/kit.json"))  # the GPU kit's grid, not Snakemake's
        found.append(Column(kind, "GPU kit" if kit else "default", (kind / "run", *others)))
        if (kind / PAPER / "run" / "claims.csv").exists():
            found.append(Column(kind, PAPER, (kind / PAPER / "run",)))
    return sorted(
        found,
        key=lambda c: (bool(c.facts["gpus"]), c.facts["method"] != METHOD_VERSION, c.kind.name),
    )


def claims_of(column: Column, table: str = "claims.csv") -> pd.DataFrame:
    """The column's claims (or their parts: `claim_parts.csv`), every catalog's."""
    return pd.concat([pd.read_csv(run / table) for run in column.runs])


def cell(r: Any, parts: pd.DataFrame) -> str:
    """A claim's verdict and value, the size it was measured at where that is not the
    article's; for a claim not run, why, and what of it ran, in claims.md's words."""
    if r.verdict == "not_run":
        missing = sorted(set(re.findall(r"(\w+) not in this run", str(r.note))))
        why = f"no {' or '.join(m.upper() for m in missing)}" if missing else "not in the grid"
        ran = what_ran(parts[parts["claim_id"] == r.name])
        return f"not_run: {why}" + (f"; {ran}" if ran else "")
    said = f"{r.verdict} {fmt(r.measured)}".strip()
    at = re.match(r"measured at (\S+) \(article", str(r.setup))
    return said + (f" at {at.group(1)}" if at else "")


def head(column: Column, root: Path) -> str:
    """The kind, setup, method version, commit and date; another catalog's run of another
    commit or day names its own."""
    f = column.facts
    link = (column.kind / "README.md").relative_to(root)
    others = "".join(
        f"<br>{r.parent.name}: {run_facts(r)['commit']} · {run_facts(r)['date']}"
        for r in column.runs[1:]
        if (run_facts(r)["commit"], run_facts(r)["date"]) != (f["commit"], f["date"])
    )
    return (
        f"[`{column.kind.name}`]({link})<br>{column.setup} · method {f['method']}<br>"
        f"{f['commit']} · {f['date']}{others}"
    )


def verdict_map(cols: list[Column], root: Path) -> list[str]:
    """Claim x column, every catalog's claims, in the order the catalogs give them."""
    tables = [claims_of(c).set_index("claim_id") for c in cols]
    parts = [claims_of(c, "claim_parts.csv") for c in cols]
    ids = list(dict.fromkeys(i for t in tables for i in t.index))
    slugs = {i: t.loc[i, "slug"] for t in tables for i in t.index}
    rows = [["claim", *(head(c, root) for c in cols)], ["---"] * (len(cols) + 1)]
    for i in ids:
        rows.append(
            [f"{i} `{slugs[i]}`"]
            + [
                cell(t.loc[i].rename(i), p) if i in t.index else ""
                for t, p in zip(tables, parts, strict=True)
            ]
        )
    return ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]


def minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def took(run: Path) -> str:
    f = run_facts(run)
    return f"{minutes(f['measuring_s'])}, {f['processes']} processes"


def repeat_said(column: Column) -> str:
    """The default run's repeat (same commit, same hour): its time, and whether it gave the
    same verdicts."""
    repeat = column.kind / "repeat"
    if column.setup == PAPER or not (repeat / "claims.csv").exists():
        return ""
    one, two = (
        pd.read_csv(p / "claims.csv").set_index("claim_id")["verdict"]
        for p in (column.runs[0], repeat)
    )
    moved = [f"{i} {one[i]} then {two.get(i)}" for i in one.index if two.get(i) != one[i]]
    return f" (its repeat: {took(repeat)}; {'; '.join(moved) or 'the same verdicts'})"


def times(cols: list[Column]) -> list[str]:
    """One line a column: how long its measuring took, its machine and libraries."""
    lines = []
    for c in cols:
        f = c.facts
        where = f["cpu"] + "".join(f" + {g}" for g in f["gpus"])
        others = "".join(f"; the {r.parent.name} catalog {took(r)}" for r in c.runs[1:])
        lines.append(
            f"- `{c.kind.name}`, {c.setup}: {took(c.runs[0])}{repeat_said(c)}{others}."
            f" {where}; JAX {f['jax']}, NumPy {f['numpy']} on {f['blas']}."
        )
    return lines


def blocks(reference: Path, root: Path) -> dict[tuple[str, str], str]:
    """The generated Markdown of each block: the map (with one figure) and the run times."""
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
    return {
        MAP: "\n".join([MAP[0], "", *verdict_map(cols, root), "", *shown, MAP[1]]),
        TIMES: "\n".join([TIMES[0], "", *times(cols), "", TIMES[1]]),
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
    p.add_argument("--check", action="store_true", help="exit 1 where the README differs")
    args = p.parse_args(argv)
    readme = args.root / "README.md"
    text = new = readme.read_text()
    for marks, block in blocks(args.root / "results" / "reference", args.root).items():
        new = replaced(new, marks, block)
    if args.check:
        return int(new != text)
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
