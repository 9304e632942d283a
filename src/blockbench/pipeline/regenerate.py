"""Rebuild a committed run's tables, figures, claims and report from its raw JSON, measuring
nothing: `blockbench regenerate RUN_DIR`.

A judging change re-judges old runs (CHANGELOG.md), so a run's raw folder is all a reader
needs to see it through today's code. The raw files are copied into a scratch working
directory under the label the run was made with and the workflow runs there, so the
checkout's own results/ is never touched. Two refusals keep the rebuild honest: records of
another measuring method (METHOD_VERSION) name the commit that reads them, and a grid that
would measure anything (another config than the run's) names the cells it lacks.

A committed reference folder is rebuilt with the config its place names (`made_with`), and
`--publish` writes what the rebuild made back into it: its results are then the workflow's,
never a copy made by hand (tests/test_references.py rebuilds each one and compares).
"""

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from blockbench.pipeline import catalog_keep
from blockbench.present.claims_report import docs_from, legend
from blockbench.present.front_page import PAPER
from blockbench.records.layout import SEPARATOR, raw_files
from blockbench.records.methods import last_commit_of
from blockbench.records.spec import METHOD_VERSION
from blockbench.records.store import read_json, write_bytes_atomic

ROOT = Path(__file__).resolve().parents[3]  # the checkout whose workflow rebuilds the run
REFERENCE = ROOT / "results" / "reference"
DECISION = "rounds.json"
# A reference folder's results, as the workflow writes them under results/
PUBLISHED = {
    "claims.md": "claims.md",
    "claims.csv": "claims.csv",
    "claim_parts.csv": "tables/claim_parts.csv",
}
# The profile names it relative to itself, which Snakemake reads from the working directory.
STYLESHEET = "profiles/report.css"


class Refused(Exception):
    """The run cannot be rebuilt by this checkout; the message says what would."""


def raw_folder(run_dir: Path) -> Path:
    """The one run folder (devices, rounds.json) in RUN_DIR itself or in RUN_DIR/raw/."""
    if raw_files(run_dir):
        return run_dir
    inner = [p for p in sorted((run_dir / "raw").glob("*")) if p.is_dir() and raw_files(p)]
    if len(inner) != 1:
        found = ", ".join(p.name for p in inner) or "none"
        raise Refused(
            f"{run_dir}: expected one run's raw JSON in it or in one folder of raw/ (found:"
            f" {found})"
        )
    return inner[0]


def check_method(folder: Path) -> str:
    """The label the run was made with, after refusing records of another method."""
    versions: Counter[tuple[int, str]] = Counter()
    for path in raw_files(folder):
        record = read_json(path)
        git = (record.get("provenance") or {}).get("git") or {}
        versions[record["method_version"], git.get("commit") or "unrecorded"] += 1
    other = {v: n for v, n in versions.items() if v[0] != METHOD_VERSION}
    if other:
        version, commit = max(other, key=other.get)
        last = last_commit_of(version)
        code = f"the last code of method version {version}" if last else "the code that measured it"
        raise Refused(
            f"{folder} was measured by method version {version} (commit {commit}); this"
            f" checkout reads method version {METHOD_VERSION}. Rebuild it with {code}:"
            f" git checkout {last or commit}"
        )
    decision = folder / DECISION
    return read_json(decision)["run_label"] if decision.exists() else folder.name


def made_with(run_dir: Path) -> tuple[list[str], list[str]]:
    """(options, config pairs) a reference folder's place says its run was made with:
    `paper/run` the articles' setups (config/paper.yaml), `<catalog>/run` and
    `<catalog>/repeat` another catalog of config/claims/ (`claims=[...]`, as made), a GPU
    kit's run (its raw folder has kit.json) config/gpu-quick.yaml, any other the default."""
    where = run_dir.resolve()
    if where.parent.name == PAPER:
        return ["--configfile", str(ROOT / "config" / "paper.yaml")], []
    if any(where.glob("raw/*/kit.json")):
        return ["--configfile", str(ROOT / "config" / "gpu-quick.yaml")], []
    catalog = ROOT / "config" / "claims" / where.parent.name
    if where.parent.name != "articles" and (catalog / "claims.yaml").is_file():
        return [], [f"claims=[{catalog}]"]
    return [], []


def snakemake_args(
    out: Path, label: str, extra: list[str], pairs: tuple[str, ...] | list[str] = ()
) -> list[str]:
    """The workflow of this checkout, run in `out` under the run's own label; `extra`: its
    options; `pairs`: `key=value` of the config."""
    configfile = (
        [] if "--configfile" in extra else ["--configfile", str(ROOT / "config/config.yaml")]
    )
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(out),
        *configfile,
        *extra,
        "--config",
        *pairs,
        f"run_label={label}",
        "check_gpu=false",  # nothing is measured, so no GPU is needed
        "--rerun-triggers",
        "mtime",  # the copied files are the run's; code and params changed since, by design
    ]


def would_measure(args: list[str]) -> list[str]:
    """The files of the measure jobs a dry run lists (none, where the config is the run's)."""
    dry = subprocess.run([*args, "-n", "--cores", "1"], capture_output=True, text=True)
    if dry.returncode:
        raise Refused(f"the dry run failed:\n{dry.stderr[-3000:]}")
    rule, found = None, []
    for line in dry.stdout.splitlines():
        # a job, or one of a group's jobs (indented): `rule measure:`, `localrule tables:`
        head = re.match(r"^\s*(?:local)?(?:rule|checkpoint) (\w+):", line)
        rule = head.group(1) if head else rule
        if rule and rule.startswith("measure") and line.strip().startswith("output:"):
            found.append(line.split(":", 1)[1].strip())
    return found


def regenerate(
    run_dir: Path,
    out: Path,
    cores: int,
    extra: list[str],
    pairs: list[str] | tuple[str, ...] = (),
    targets: tuple[str, ...] = (),
) -> Path | None:
    """Copy the run's raw folder into `out` and rebuild everything from it, or only
    `targets`; the report's path (None: `targets` made none)."""
    folder = raw_folder(run_dir)
    label = check_method(folder)
    if out.resolve() == ROOT:
        raise Refused(f"--out {out} is the checkout: its results/ would be replaced")
    # A scratch folder: an earlier rebuild's claims and tables are newer than the copied raw
    # files (their times are kept), so Snakemake would keep them, judged by older code, and
    # another run's raw folder left there would join this one's tables.
    shutil.rmtree(out / "results", ignore_errors=True)
    shutil.copytree(folder, out / "results" / "raw" / label)
    # the catalogs the run kept beside its records, and judged (none kept: the shipped ones)
    kept = catalog_keep.kept_config(out / "results" / "raw" / label)
    if kept:
        pairs = [p for p in pairs if not p.startswith(("claims=", "only="))] + kept
    # a run of another JAX release: its label is the run's, measured under that release
    base, _, release = label.partition(SEPARATOR)
    if release:
        pairs = [*pairs, f"jax_versions=[{release}]"]
    args = snakemake_args(out, base, extra, pairs)
    missing = would_measure(args)
    if missing:
        raise Refused(
            f"with this config the workflow would measure {len(missing)} processes the run lacks"
            f" (first: {missing[0]}); pass the config the run was made with (--configfile)"
        )
    report = ["--report", "results/report.html", "--report-stylesheet", str(ROOT / STYLESHEET)]
    steps = [[*args, "--cores", str(cores), *targets]] + ([] if targets else [[*args, *report]])
    for step in steps:
        if subprocess.run(step).returncode:
            raise Refused(f"the workflow failed: {' '.join(step)}")
    return None if targets else out / "results" / "report.html"


def published(out: Path, run_dir: Path) -> dict[str, bytes]:
    """The text results a rebuild in `out` gives the reference folder `run_dir`, by name:
    claims.md with its links to docs/ made from the folder, as the claims stage makes them
    from `out`."""
    made = {name: (out / "results" / path).read_bytes() for name, path in PUBLISHED.items()}
    there, here = (docs_from(p / "claims.md") for p in (out / "results", run_dir))
    text = made["claims.md"].decode()
    # the legend is wrapped to its width with the link in it: made again, not edited
    text = text.replace("\n".join(legend(there)), "\n".join(legend(here)), 1)
    made["claims.md"] = text.replace(f"]({there}/", f"]({here}/").encode()
    return made


def publish(out: Path, run_dir: Path) -> None:
    """Write a rebuild's results into the reference folder it was made from, and the figures
    the folder keeps, each atomically."""
    figures = {
        f"figures/{p.name}": (out / "results" / "figures" / p.name).read_bytes()
        for p in sorted((run_dir / "figures").glob("*.png"))
    }
    for name, data in (published(out, run_dir) | figures).items():
        write_bytes_atomic(run_dir / name, data)


def default_out(run_dir: Path) -> Path:
    """results/regenerated/<the folder's path under results/reference, or its name>: one
    scratch folder a run, so two runs' rebuilds never share one (every kind has a `run/`)."""
    where = run_dir.resolve()
    name = (
        "-".join(where.relative_to(REFERENCE).parts)
        if where.is_relative_to(REFERENCE)
        else where.name
    )
    return Path("results/regenerated") / name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="blockbench regenerate", description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path, help="a run folder (results/reference/X or its raw/LABEL)")
    p.add_argument(
        "--out",
        type=Path,
        help="working directory (default: results/regenerated/<kind>-<setup>-<run>, one a run)",
    )
    p.add_argument("--cores", type=int, default=2)
    p.add_argument(
        "--configfile",
        help="the config the run was made with (default: what a reference folder's place says,"
        " else config.yaml)",
    )
    p.add_argument(
        "--publish",
        action="store_true",
        help="write the rebuilt claims.md, claims.csv, claim_parts.csv and the folder's figures"
        " into RUN_DIR",
    )
    args = p.parse_args(argv)
    run_dir = args.run_dir.resolve()
    out = (args.out or default_out(run_dir)).resolve()
    if args.publish and not (run_dir / "claims.csv").is_file():
        p.error(f"--publish writes into a reference folder (its claims.csv beside raw/): {run_dir}")
    extra, pairs = made_with(run_dir)
    if args.configfile:
        extra = ["--configfile", str(Path(args.configfile).resolve())]
    try:
        report = regenerate(run_dir, out, args.cores, extra, pairs)
    except Refused as e:
        print(f"blockbench regenerate: {e}", file=sys.stderr)
        return 2
    print(f"rebuilt from raw JSON, nothing measured: {out / 'results'} (report: {report})")
    if args.publish:
        publish(out, run_dir)
        print(f"published into {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
