"""The README's first screen, written from the committed reference runs
(results/reference/<kind>/run and /repeat), never by hand: `blockbench front-page`.

A number typed into the README drifts from the run it came from; this block is rebuilt from
each reference's claims.csv and raw records, and tests/test_docs.py fails when the README's
copy differs from what the references say.
"""

import argparse
import re
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from blockbench.judge.wording import fmt, value_ci
from blockbench.records.layout import raw_files
from blockbench.records.spec import METHOD_VERSION
from blockbench.records.store import read_json

BEGIN = "<!-- front page: written by `blockbench front-page` from results/reference/ -->"
END = "<!-- end of the front page -->"
LIBRARIES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS"}
FIGURES = {
    "A": "Source A: dispatch, blocked and np.asarray times of jnp.dot(x, x), article vs run",
    "B": "Source B: tests B to E relative to np.dot, article vs run",
    "C": "Source C: matrix product and SELU by device and phase, article vs run",
    "D": "Source D: loop, convolve and scan, and the compile time of jit(loop), article vs run",
}


@cache
def run_facts(run: Path) -> dict[str, Any]:
    """What a reader needs to place one run: its code, date, machine and libraries, read
    from its raw records (what each library used, not what was asked)."""
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
    forced = sorted(
        {k for r in records for k in r["provenance"]["env"] if k == "OPENBLAS_CORETYPE"}
    )
    gpus = sorted(
        {r["provenance"]["device"]["model"] for r in records if r["cell"]["device"] != "cpu"}
    )
    return {
        "label": raw.name,
        "commit": (prov.get("git") or {}).get("commit", "unrecorded")[:7],
        "method": first["method_version"],
        "started": datetime.fromtimestamp(first["started_at"], UTC).strftime("%Y-%m-%d %H:%M"),
        "processes": len(records),
        "cpu": f"{prov['host']['cpu_model']}, {prov['host']['cpu_count_logical']} logical CPUs"
        + (f" ({prov['host']['cpu_signature']})" if prov["host"].get("cpu_signature") else ""),
        "gpus": gpus,
        "jax": prov["software"]["packages"].get("jax"),
        "numpy": prov["software"]["packages"].get("numpy"),
        "blas": " and ".join(kernels) or "unrecorded",
        "forced": bool(forced),
    }


def _decides(r: Any, parts: pd.DataFrame) -> str:
    """What is compared, and where the verdict rests on another part, that part: a failing
    one for not_reproduced, the missing device for not_run."""
    said = f"{r.metric} ({r.condition})"
    if r.verdict == "not_reproduced":
        own = parts[(parts["claim_id"] == r.claim_id) & (parts["outcome"] == "fails")]
        said += "".join(
            f"; fails: {p.part} {value_ci(p.measured, p.ci_low, p.ci_high)} ({p.condition})"
            for p in own.itertuples()
            if p.part != r.metric
        )
    missing = sorted(set(re.findall(r"(\w+) not in this run", str(r.note))))
    if r.verdict == "not_run" and missing:
        said += f"; no {' or '.join(m.upper() for m in missing)} in this run"
    return said


def verdict_table(run: Path, repeat: Path | None) -> list[str]:
    """One row a claim: the run's verdict and value beside the article's, and the repeat's."""
    claims = pd.read_csv(run / "claims.csv")
    parts = pd.read_csv(run / "claim_parts.csv")
    again = (
        {}
        if repeat is None
        else {r.claim_id: r for r in pd.read_csv(repeat / "claims.csv").itertuples()}
    )
    head = ["claim", "verdict", "measured [95% CI]", "article", "what decides it (rule)", "setup"]
    if again:
        head.append("repeat run")
    rows = [head, ["---"] * len(head)]
    for r in claims.itertuples():
        said = f"{r.verdict}" + (f" ({r.confidence})" if isinstance(r.confidence, str) else "")
        row = [
            f"{r.claim_id} `{r.slug}`",
            said,
            value_ci(r.measured, r.ci_low, r.ci_high),
            fmt(r.article) if isinstance(r.article, float) else "",
            _decides(r, parts),
            r.setup if isinstance(r.setup, str) else "",
        ]
        if again:
            o = again.get(r.claim_id)
            row.append(
                "" if o is None else f"{o.verdict} {value_ci(o.measured, o.ci_low, o.ci_high)}"
            )
        rows.append([str(c).replace("|", "/").strip() for c in row])
    return ["| " + " | ".join(row) + " |" for row in rows]


def _figures(run: Path, root: Path) -> list[str]:
    shown = {k: run / "figures" / f"article_{k}.png" for k in FIGURES}
    cells = [
        f'<td><img src="{path.relative_to(root)}" alt="{FIGURES[k]}"></td>'
        for k, path in shown.items()
        if path.exists()
    ]
    pairs = ["<tr>\n" + "\n".join(cells[i : i + 2]) + "\n</tr>" for i in range(0, len(cells), 2)]
    return ["<table>", *pairs, "</table>"] if cells else []


def kinds(reference: Path) -> list[Path]:
    """Each machine kind's folder with a reference run of today's method, CPU-only kinds
    first: a run of an older method measured another way, and its folder (listed in
    results/reference/README.md) says so itself."""
    found = sorted(p for p in reference.iterdir() if (p / "run" / "claims.csv").exists())
    today = [p for p in found if run_facts(p / "run")["method"] == METHOD_VERSION]
    return sorted(today, key=lambda p: bool(run_facts(p / "run")["gpus"]))


def block(reference: Path, root: Path) -> str:
    """The generated Markdown: per kind, what ran where, its figures and its verdicts."""
    root, reference = root.resolve(), reference.resolve()
    lines = [BEGIN]
    for n, kind in enumerate(kinds(reference)):
        f = run_facts(kind / "run")
        where = f["cpu"] + (f", {', '.join(f['gpus'])}" if f["gpus"] else "")
        blas = f"NumPy's BLAS ran {f['blas']}" + (
            " (forced by OPENBLAS_CORETYPE)" if f["forced"] else " (as installed)"
        )
        repeat = kind / "repeat"
        again = repeat if (repeat / "claims.csv").exists() else None
        lines += [
            "",
            f"**[`{kind.name}`]({(kind / 'README.md').relative_to(root)})**: run `{f['label']}`,"
            f" method version {f['method']}, commit {f['commit']}, {f['started']} UTC,"
            f" {f['processes']} worker processes on {where}; JAX {f['jax']}, NumPy"
            f" {f['numpy']}, {blas}."
            + (
                f" A repeat of the same commit, run `{run_facts(repeat)['label']}`, is shown"
                " beside it: what one run's intervals do not cover."
                if again is not None
                else ""
            ),
            "",
        ]
        if n == 0:
            lines += [*_figures(kind / "run", root), ""]
        lines += verdict_table(kind / "run", again)
    return "\n".join([*lines, "", END])


def replaced(readme: str, new: str) -> str:
    """The README with its generated block swapped for `new`."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"the README has no generated block ({BEGIN} ... {END})")
    head, rest = readme.split(BEGIN, 1)
    return head + new + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="blockbench front-page", description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=Path("."), help="the checkout (default: .)")
    p.add_argument("--check", action="store_true", help="exit 1 where the README differs")
    args = p.parse_args(argv)
    readme = args.root / "README.md"
    text = readme.read_text()
    new = replaced(text, block(args.root / "results" / "reference", args.root))
    if args.check:
        return int(new != text)
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
