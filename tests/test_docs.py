"""The documentation holds together: every relative link and image resolves (a `#anchor` to a
heading of its target, as GitHub makes them), the README stays a first screen, every docs page
can be reached from it, the files, modules and tests the docs name exist, and nothing in the
repository points outside it. What the docs name is checked against what exists: config keys
and their defaults against the config schema, commands and their options against the
parsers, README sections against its headings, the workload modules against the registry,
and commits and paths in git history against git. Figures quoted from a committed run are
compared with that run's records. Reads files only (and asks git): a few seconds at most."""

import argparse
import csv
import json
import math
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import unquote

import pytest
import yaml

from blockbench.pipeline.kit_estimate import KIT

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 120
# The developers' notes kept beside the repository, which nothing in it may name. Assembled
# here so that this file does not name them itself.
OUTSIDE = (
    ".." + "/shared",
    *(name + ".md" for name in ("CLAIMS", "MEASURING", "SLURM", "GPU_REVIEW", "STYLE", "AUDIT")),
)
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target); the text may wrap, the target may carry a "title"
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]*)\"", re.I)
HTML_ID = re.compile(r"\b(?:id|name)=\"([^\"]+)\"")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...
# Repository paths and blockbench modules named in code spans (`src/...`, `blockbench.x.y`)
NAMED_PATH = re.compile(
    r"^(?:src|tests|scripts|benchmarks|config|workflow|profiles|docs|results/reference)/[\w./-]+$"
)
NAMED_MODULE = re.compile(r"^blockbench(?:\.\w+)+$")


def doc_files(root: Path = ROOT) -> list[Path]:
    """The documentation: the README, docs/, config/README.md and the reference runs' READMEs."""
    found = [root / "README.md", root / "config" / "README.md", *sorted(root.glob("docs/*.md"))]
    reference = root / "results" / "reference"
    if reference.is_dir():
        found += sorted(
            p for p in reference.rglob("README.md") if "raw" not in p.relative_to(reference).parts
        )
    return [p for p in found if p.is_file()]


def unfenced(text: str) -> str:
    """The text with fenced code blocks blanked out, line breaks kept (so that positions
    still give line numbers)."""
    lines, inside = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            inside = not inside
            lines.append("")
        else:
            lines.append("" if inside else line)
    return "\n".join(lines)


def prose(text: str) -> str:
    """The text without fenced blocks and code spans: where links live."""
    paragraphs = unfenced(text).split("\n\n")
    blank = [CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), p) for p in paragraphs]
    return "\n\n".join(blank)


def code_spans(text: str) -> Iterator[tuple[int, str]]:
    """(line, content) of every code span outside fenced blocks."""
    joined = unfenced(text)
    for paragraph_start, paragraph in _paragraphs(joined):
        for m in CODE_SPAN.finditer(paragraph):
            line = joined.count("\n", 0, paragraph_start + m.start()) + 1
            yield line, " ".join(m.group(2).split())


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    for part in text.split("\n\n"):
        yield start, part
        start += len(part) + 2


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower-cased, punctuation dropped, spaces to
    hyphens (inline code and link text count as text)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a Markdown file offers: its headings' slugs (a repeated one numbered, as
    GitHub does) and explicit HTML ids."""
    text = unfenced(path.read_text())
    seen: dict[str, int] = {}
    found = set(HTML_ID.findall(text))
    for line in text.split("\n"):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> Iterator[tuple[int, str]]:
    """(line, target) of every link and image in a Markdown file's prose."""
    text = prose(path.read_text())
    for pattern in (LINK, HTML_LINK):
        for m in pattern.finditer(text):
            yield text.count("\n", 0, m.start()) + 1, m.group(1)


def resolve(source: Path, target: str, root: Path) -> tuple[Path | None, str]:
    """The file a relative link points to (None for an external one) and its anchor."""
    if EXTERNAL.match(target):
        return None, ""
    path, _, anchor = target.partition("#")
    resolved = (source.parent / unquote(path)).resolve() if path else source.resolve()
    return resolved, anchor


def broken_links(files: list[Path], root: Path = ROOT) -> list[str]:
    """Every relative link or image among `files` that does not resolve, as 'file:line: why'."""
    problems, cache = [], {}
    for source in files:
        for line, target in links(source):
            where = f"{source.relative_to(root)}:{line}: {target!r}"
            if not target:
                problems.append(f"{where} is empty")
                continue
            resolved, anchor = resolve(source, target, root)
            if resolved is None:
                continue
            if not resolved.is_relative_to(root.resolve()):
                problems.append(f"{where} points outside the repository")
            elif not resolved.exists():
                problems.append(f"{where} does not exist")
            elif anchor:
                if resolved.suffix != ".md":
                    problems.append(f"{where}: an anchor into a file that is not Markdown")
                elif anchor not in cache.setdefault(resolved, anchors(resolved)):
                    problems.append(f"{where}: no heading with that anchor")
    return problems


def git_files(root: Path = ROOT) -> list[str] | None:
    """Files git tracks, and new ones it does not ignore; None outside a git checkout."""
    if not shutil.which("git") or not (root / ".git").exists():
        return None
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return [name for name in out.stdout.decode().split("\0") if name]


def test_every_link_and_image_resolves():
    problems = broken_links(doc_files())
    assert not problems, "\n".join(problems)


def test_no_link_points_at_an_ignored_file():
    """A link to a generated file (results/report.html) would resolve only where a run made
    it; committed documentation links committed files."""
    if git_files() is None:
        pytest.skip("not a git checkout")
    root = ROOT.resolve()
    targets = set()
    for source in doc_files():
        for _, target in links(source):
            resolved, _ = resolve(source, target, ROOT)
            if resolved is not None and resolved.is_relative_to(root) and resolved.exists():
                targets.add(str(resolved.relative_to(root)))
    out = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=ROOT,
        input="\n".join(sorted(targets)),
        capture_output=True,
        text=True,
    )
    assert not out.stdout.strip(), f"links to ignored files:\n{out.stdout}"


def test_the_readme_is_a_first_screen():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_every_docs_page_is_reachable_from_the_readme():
    docs = set((ROOT / "docs").glob("*.md"))
    assert docs, "no docs pages"
    seen, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for _, target in links(page):
            resolved, _ = resolve(page, target, ROOT)
            if resolved is not None and resolved.suffix == ".md" and resolved.is_file():
                todo.append(resolved)
    assert not docs - seen, sorted(str(p.relative_to(ROOT)) for p in docs - seen)


def test_the_files_modules_and_tests_the_docs_name_exist():
    """`src/...`, `tests/...`, `benchmarks/...`, `results/reference/...` and `blockbench.x.y`
    in code spans: a renamed module, test or reference folder must take its documentation
    along (what lives only in git history is named by `git show COMMIT:PATH`)."""
    problems = []
    for source in doc_files():
        for line, span in code_spans(source.read_text()):
            where = f"{source.relative_to(ROOT)}:{line}: `{span}`"
            if NAMED_PATH.match(span) and not (ROOT / span.rstrip("/")).exists():
                problems.append(f"{where} does not exist")
            elif NAMED_MODULE.match(span) and not module_exists(span):
                problems.append(f"{where} is no module of src/blockbench")
    assert not problems, "\n".join(problems)


def module_exists(name: str) -> bool:
    """`blockbench.judge.claims` (a module or package), or one name inside such a module
    (`blockbench.measure.sampling.in_turn`)."""
    parts = name.split(".")
    for end in (len(parts), len(parts) - 1):
        base = ROOT / "src" / Path(*parts[:end])
        if end >= 2 and (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
            if end == len(parts):
                return True
            source = base.with_suffix(".py").read_text()
            return re.search(rf"\b{re.escape(parts[-1])}\b", source) is not None
    return len(parts) == 1


def test_nothing_in_the_repository_points_outside_it():
    names = git_files()
    if names is None:
        pytest.skip("not a git checkout")
    problems = []
    for name in names:
        if name.startswith("results/reference/") and "/raw/" in name:
            continue
        path = ROOT / name
        if not path.is_file():  # deleted in the work tree
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary
            continue
        for needle in OUTSIDE:
            at = data.find(needle.encode())
            if at >= 0:
                line = data.count(b"\n", 0, at) + 1
                problems.append(f"{name}:{line} names {needle}")
    assert not problems, "\n".join(problems)


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The link check on a small tree: a broken link, a missing image, a wrong anchor, an
    anchor into a heading that is only in a code block, and a link out of the tree are
    found; a good link, a good anchor and links in code are not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "# A page\n\n## The VM's two speeds (`slow`)\n\n```bash\n# not a heading\n```\n"
    )
    (tmp_path / "README.md").write_text(
        "See [the page](docs/page.md), [its section](docs/page.md#the-vms-two-speeds-slow)\n"
        "and `[not a link](nowhere.md)`.\n\n"
        "```\n[nor this](nowhere.md)\n```\n\n"
        "Broken: [gone](docs/gone.md), ![image](img.png), [bad anchor](docs/page.md#speeds),\n"
        "[code heading](docs/page.md#not-a-heading), [out](../elsewhere/x.md),\n"
        '<img src="docs/missing.png" alt="x">\n'
    )
    problems = broken_links([tmp_path / "README.md"], root=tmp_path)
    assert len(problems) == 6, problems
    for bad in ("gone.md", "img.png", "#speeds", "#not-a-heading", "elsewhere", "missing.png"):
        assert any(bad in p for p in problems), (bad, problems)
    assert slug("Coverage: is a 95% interval a 95% interval?") == (
        "coverage-is-a-95-interval-a-95-interval"
    )

    # What the docs name, on a small tree of its own: a schema, a key table, a bootstrap, a
    # workloads folder, a committed run of an older method and a page that gets each wrong
    root = tmp_path / "named"
    (root / "workflow/schemas").mkdir(parents=True)
    (root / SCHEMA).write_text(
        yaml.safe_dump(
            {
                "type": "object",
                "properties": {
                    "repeats": {"type": "integer", "minimum": 1, "default": 3},
                    "partial_claims": {"type": "boolean", "default": False},
                    "matmul_precision": {"enum": ["default", "highest"], "default": "default"},
                    "sampling": {"type": "object", "properties": {"min_samples": {"default": 5}}},
                    "workloads": {
                        "type": "array",
                        "default": [],
                        "items": {"properties": {"name": {}, "accelerator_sizes": {"default": []}}},
                    },
                },
            }
        )
    )
    (root / "config").mkdir()
    (root / "config/README.md").write_text(
        f"{KEY_TABLE_HEADER}\n|---|---|---|\n"
        "| `repeats` | `4` | a wrong default |\n"
        "| `workloads[].accelerator_sizes` | matmul `[5000]` | words where the schema has one |\n"
        "| `partial_claims` | `false` | " + "a cell too long to scan " * 30 + "|\n"
        "| `cluster.cpus` | `null` | no such key |\n"
        "| `workloads[]` | `[]` | right |\n| `workloads[].name` | - | right |\n"
        "| `sampling.min_samples` | `5` | right |\n"
    )
    (root / "scripts").mkdir()
    (root / "scripts/bootstrap.py").write_text(
        'if not argv or argv[0] not in ("run", "test", "regenerate"):\n    pass\n'
    )
    (root / "src/blockbench/records").mkdir(parents=True)
    (root / "src/blockbench/records/spec.py").write_text("METHOD_VERSION = 11\n")
    old_run = root / "results/reference/old/run/raw/v1/cpu/w/i/1"
    old_run.mkdir(parents=True)
    (old_run / "0.json").write_text(json.dumps({"method_version": 1, "provenance": {}}))
    (root / "README.md").write_text("# x\n\n## Running it\n\n**Stopping and resuming.** Again.\n")
    page = root / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(
        "Keys: `sampling.min_sample`, the config key `partial_claim`,\n"
        "`matmul_precision: fastest`,\n"
        "`partial_claims` (default true), `kit.part_s` and `sampling.py` (a file, not a key).\n\n"
        "Commands: `python3 scripts/bootstrap.py build`, `blockbench studies`,\n"
        "`blockbench compare --format x`, `run --config repeats=many`.\n\n"
        "```bash\n"
        "python3 scripts/bootstrap.py run --config partial_claim=true\n"
        "python3 scripts/bootstrap.py regenerate results/reference/old/run\n"
        "```\n\n"
        'See the README, "The two commands", and "Stopping and resuming" in\n'
        "[the README](../README.md).\n"
    )
    problems = config_key_problems([page], root)
    for bad in (
        "`sampling.min_sample` is no key",
        "config key `partial_claim`",
        "'fastest' is not one of",
        "`partial_claims` is said to default to True",
        "README.md:3: `repeats` defaults to 3, not 4",
        "README.md:4: `workloads[].accelerator_sizes` defaults to `[]`",
        "README.md:5: a cell of",
        "README.md:6: `cluster.cpus` is no key",
        "no row for `matmul_precision`",
    ):
        assert sum(bad in p for p in problems) == 1, (bad, problems)
    assert len(problems) == 9, problems
    problems = command_problems([page], root)
    for bad in (
        "the bootstrap has no 'build'",
        "blockbench has no command 'studies'",
        "`blockbench compare` has no --format",
        "repeats=many",
        "no config key 'partial_claim'",
        "measured by method version 1",
    ):
        assert sum(bad in p for p in problems) == 1, (bad, problems)
    assert len(problems) == 6, problems
    problems = section_problems([page], root)
    assert problems == ["docs/page.md: the README has no section 'The two commands'"], problems
    # git history: a path no commit holds, and a commit that does not exist
    if git(ROOT, "rev-parse", "HEAD") is not None:
        page.write_text(
            "`git show 6ab2eca:no/such/file.md`\n\n```bash\ngit checkout 0000000\n```\n"
        )
        problems = history_problems([page], ROOT)
        assert len(problems) == 2 and "no/such/file.md" in problems[0], problems
    # the workload modules docs/layout.md names
    workloads = root / "src/blockbench/workloads"
    workloads.mkdir(parents=True)
    (workloads / "a.py").write_text('WORKLOADS = (Workload("a"),)\n')
    (workloads / "b.py").write_text('WORKLOADS = (Workload("b"), Workload("b_f16"))\n')
    (root / "docs/layout.md").write_text("- One module per workload: `a.py`, `c.py`.\n- More.\n")
    problems = layout_workload_problems(root)
    assert problems == [
        "docs/layout.md: `b.py` is not named",
        "docs/layout.md: `c.py` declares no workload",
        "docs/layout.md: `b_f16` (in `b.py`) is not named",
    ], problems

    # Figures quoted from committed runs: each page with one figure changed by hand
    for kind, said, changed, caught in (
        ("epyc-zen3-2cpu", "109 [54.7, 218]", "110 [54.7, 218]", "110 [54.7, 218] is no part's"),
        ("epyc-zen3-2cpu", "| 135 |", "| 136 |", "run/ has 135 processes"),
        (
            "epyc-zen3-2cpu",
            "Not reproduced: A2, D1.",
            "Not reproduced: A2, D3.",
            "D3 is inconclusive",
        ),
        ("epyc-zen3-2cpu", "28 of 28 comparisons", "27 of 28 comparisons", "in 28 of 28"),
        ("epyc-zen3-2cpu", "59% and 57%", "68% and 68%", "run/'s cores read 59% and 57%"),
        ("h200-gpu-quick", "in 518 s", "in 522 s", "'67 worker processes in 518 s'"),
        (
            "h200-gpu-quick",
            "holds, 26.1 [",
            "fails, 26.1 [",
            "'fails, 26.1 [24.8, 27.5]' is not run/'s",
        ),
    ):
        copy = tmp_path / "figures" / kind
        if not copy.exists():
            shutil.copytree(ROOT / REFERENCE / kind, copy, ignore=shutil.ignore_patterns("*.png"))
        readme = (ROOT / REFERENCE / kind / "README.md").read_text()
        assert said in readme, said
        (copy / "README.md").write_text(readme.replace(said, changed, 1))
        problems = reference_readme_problems(copy, tmp_path)
        assert problems and all(caught in p for p in problems), (changed, problems)
    for page, problems_of, said, changed, caught in (
        (
            CLAIMS_PAGE,
            claims_page_problems,
            "and 2.2 [1.8, 2.7] in the",
            "and 2.3 [1.8, 2.7] in the",
            "2.3 [1.8, 2.7] is no part of C1 in results/reference/xeon-m207-2cpu/repeat",
        ),
        (
            CLAIMS_PAGE,
            claims_page_problems,
            "Reproduced (>=97.5%): 1.9 [1.55",
            "Reproduced: 1.9 [1.55",
            "C1, 'Reference run.': its confidence is '>=97.5%'",
        ),
        (
            CLAIMS_PAGE,
            claims_page_problems,
            "**Reference run.** Not reproduced (>=97.5%): 1.01",
            "**Reference run.** Reproduced (>=97.5%): 1.01",
            "A2, 'Reference run.': not_reproduced in",
        ),
        (METHOD_PAGE, method_page_problems, "141 s of measuring", "140 s of measuring", "141 s of"),
        (
            METHOD_PAGE,
            method_page_problems,
            "for C1, steady time only, 4 first",
            "for C1, steady time only, 3 first",
            "C1 start with 4, not 3",
        ),
        (
            GPU_PAGE,
            gpu_page_problems,
            "took 4.2 to 6.9 s",
            "took 4.7 to 6.0 s",
            "4.2 to 6.9 s a process",
        ),
    ):
        text = (ROOT / page).read_text()
        assert said in text, said
        copy = tmp_path / page.name
        copy.write_text(text.replace(said, changed, 1))
        problems = problems_of(ROOT, copy)
        assert problems and all(caught in p for p in problems), (changed, problems)


def test_the_statistics_page_gives_the_codes_numbers():
    """Wherever docs/statistics.md names `SIMS` (simulated studies per setting of the
    between-run coverage test), `MIN_UNSTUDIED` (runs pooled with no study) or
    `MIN_PROCESS_VALUES` (a study's size below which a slow mode may hide), the number it
    gives in that sentence is the one in the code."""
    text = " ".join((ROOT / "docs" / "statistics.md").read_text().split())
    judge = ROOT / "src" / "blockbench" / "judge"
    constants = {
        "SIMS": ROOT / "tests" / "test_between_run.py",
        "MIN_UNSTUDIED": judge / "between_runs.py",
        "MIN_PROCESS_VALUES": judge / "studies.py",
    }
    for name, path in constants.items():
        value = re.search(rf"^{name} = (\d+)", path.read_text(), re.M).group(1)
        mentions = [m.start() for m in re.finditer(rf"`{name}`", text)]
        assert mentions, f"docs/statistics.md does not name {name}"
        for at in mentions:
            sentence = re.split(r"[.:;] ", text[max(0, at - 200) : at])[-1]
            numbers = re.findall(r"\b\d+\b", sentence)
            assert numbers and numbers[-1] == value, (name, value, sentence)


def test_the_readmes_front_page_is_what_the_references_say(tmp_path):
    """The verdict map and the run times on the README are written from the committed
    references by `blockbench front-page`; a hand edit or a new reference without a rewrite
    fails here (the fix: `blockbench front-page`)."""
    from blockbench.present import front_page

    if git(ROOT, "rev-parse", "--is-shallow-repository") != "false\n":
        pytest.skip("no whole git history here: the references' index names commits from it")
    assert front_page.main(["--root", str(ROOT), "--check"]) == 0, "run: blockbench front-page"
    text = (ROOT / "README.md").read_text()
    begin, end = front_page.MAP
    shown = text.split(begin, 1)[1].split(end, 1)[0]
    assert text.index(begin) < len(text) // 4  # on the first screen
    columns = front_page.columns(ROOT / "results/reference")
    assert len({c.kind for c in columns}) >= 2  # a map across machine kinds
    # every catalog's claims are rows
    assert re.search(r"^\| A1 ", shown, re.M) and re.search(r"^\| J1 ", shown, re.M)
    # and the check can fail: one number changed by hand
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "results/reference", copy / "results/reference")
    first = re.search(r"reproduced \d", shown).group(0)
    (copy / "README.md").write_text(text.replace(first, first + "0", 1))
    assert front_page.main(["--root", str(copy), "--check"]) == 1


def test_the_first_screen_has_no_sentence_over_25_words():
    """What blockbench does, the two commands and the verdict map, read without stumbling:
    the prose down to the map's end (tables and code aside)."""
    from blockbench.present import front_page

    text = (ROOT / "README.md").read_text().split(front_page.MAP[1], 1)[0]
    prose = "\n".join(
        line
        for line in unfenced(text).splitlines()
        if not line.startswith(("#", "|", "<!--", "!["))
    )
    sentences = re.split(r"(?<=[.:;])\s+", " ".join(prose.split()))
    long = [x for x in sentences if len(x.split()) > 25]
    assert not long, long


def test_the_map_says_what_of_a_claim_not_run_ran():
    """A claim not run shows why and how its measured parts came out, never a value of its
    own nor "hold" where one part straddles its rule."""
    import pandas as pd

    from blockbench.present import front_page

    claim = pd.Series(
        {"verdict": "not_run", "note": "x: gpu not in this run (devices: cpu)", "setup": ""},
        name="C6",
    )
    parts = pd.DataFrame(
        {
            "claim_id": ["C6", "C6", "C6", "C5"],
            "outcome": ["holds", "inconclusive", "not_run", "holds"],
            "indicative": [False] * 4,
        }
    )
    said = front_page.cell(claim, parts)
    assert said == "not_run: no GPU; 2 of 3 parts ran: holds, inconclusive"


# --- What the docs name: config keys, commands, README sections, modules, git history ---

SCHEMA = Path("workflow/schemas/config.schema.yaml")
NO_DEFAULT = "(no default)"
# Objects whose keys the schema leaves open, and the settings that name them
OPEN_KEYS = {"kit": KIT}
# `sampling.min_samples`, `cluster.account`, `workloads[].accelerator_sizes`, `kit.part_s`
KEY_PATH = re.compile(r"^(?:workloads\[\]|sampling|cluster|kit)(?:\.[a-z_]+)*$")
FILE_SUFFIXES = {"py", "yaml", "yml", "md", "json", "csv", "parquet", "png", "svg", "smk", "gz"}
# `partial_claims: true`, `check_gpu=false`: a value given to a key, checked where the key is
# one of the config's (a claims file's `repeats: 4` validates as the config's would)
KEY_VALUE = re.compile(r"^([a-z][a-z_]*)(?::\s+|=)(\S.*)$")
PLACEHOLDER = re.compile(r"^(?:<[^>]*>|[A-Z][A-Z_]*|\.\.\.|value)$")
# "the config key `between_run`"
NAMED_KEY = re.compile(r"\bconfig(?:uration)? keys? `([^`]+)`")
# "`partial_claims` (default false)", "`between_run` names the folder (default
# `config/between_run`", "`check_gpu`, on by default", "`cell_phases: every` (the default)"
STATED_DEFAULT = re.compile(
    r"`(?P<key>[a-z_.\[\]]+)`(?P<gap>[^`.;]{0,60}?)"
    r"(?:\(default:? (?:`(?P<code>[^`]+)`|(?P<word>[\w.-]+))|, (?P<onoff>on|off) by default)"
)
DEFAULT_PAIR = re.compile(r"`(?P<key>[a-z_.\[\]]+): (?P<code>[^`]+)`,? \(?(?:the )?default\b")
YAML_SCALAR = re.compile(r"^(?:true|false|null|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)$")
# The key table of config/README.md, and the longest cell a reader scans
KEY_TABLE_HEADER = "| key | default | meaning |"
MAX_CELL = 500


@cache
def config_schema(root: Path = ROOT) -> dict[str, Any]:
    return yaml.safe_load((root / SCHEMA).read_text())


@cache
def schema_validator(root: Path = ROOT) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(config_schema(root))


@cache
def records(raw: Path) -> list[dict[str, Any]]:
    """Every measurement record under `raw` (a run folder, or its raw/<label>), read once."""
    return [json.loads(p.read_text()) for p in sorted(raw.glob("**/[0-9]*.json"))]


def config_keys(root: Path = ROOT) -> tuple[dict[str, Any], set[str]]:
    """Every key path the config schema names (`repeats`, `sampling.min_samples`,
    `workloads[]`, `workloads[].sampling.max_time_s`) with its default (NO_DEFAULT where it has
    none), and those that are only objects of such keys (`sampling`, `cluster`)."""
    keys: dict[str, Any] = {}
    containers: set[str] = set()

    def walk(node: dict[str, Any], prefix: str) -> None:
        for name, sub in (node.get("properties") or {}).items():
            path = prefix + name
            keys[path] = sub.get("default", NO_DEFAULT)
            item = sub.get("items") or {}
            if "properties" in item:  # a list of blocks
                keys[path + "[]"] = keys[path]
                containers.add(path)
                walk(item, path + "[].")
            elif "properties" in sub:
                containers.add(path)
                walk(sub, path + ".")

    walk(config_schema(root), "")
    for key, named in OPEN_KEYS.items():
        keys.update({f"{key}.{name}": NO_DEFAULT for name in named})
    return keys, containers


def is_key_path(span: str) -> bool:
    return bool(KEY_PATH.match(span)) and span.rsplit(".", 1)[-1] not in FILE_SUFFIXES


def unquoted(raw: str) -> str:
    """A shell word as the shell hands it over (`'[cpu,gpu]'` -> `[cpu,gpu]`)."""
    try:
        return " ".join(shlex.split(raw))
    except ValueError:
        return raw


def bad_value(key: str, raw: str, root: Path = ROOT) -> str | None:
    """Why `raw` (YAML, as a --config value or a config file gives it) is no value of the
    top-level config key `key`; None where it is one, or a placeholder."""
    raw = raw.strip()
    if PLACEHOLDER.match(raw):
        return None
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return f"{raw!r} is not YAML"
    errors = list(schema_validator(root).iter_errors({key: value}))
    return errors[0].message if errors else None


def stated(code: str | None, word: str | None, onoff: str | None) -> tuple[bool, Any]:
    """The default a doc states, if it is a value (a code span, a YAML scalar, on/off)."""
    if onoff:
        return True, onoff == "on"
    if code is not None:
        try:
            return True, yaml.safe_load(code)
        except yaml.YAMLError:
            return True, code
    if word and YAML_SCALAR.match(word):
        return True, yaml.safe_load(word)
    return False, None


def config_key_problems(files: list[Path], root: Path = ROOT) -> list[str]:
    """Every config key a doc names in a code span (`partial_claims: true`, `sampling.warmup_s`,
    `workloads[].accelerator_sizes`, "the config key `between_run`", the key table of
    config/README.md) is the schema's, each value it gives one the schema takes, and each
    default it states the schema's. A bare `name` is left alone: it may be anything."""
    keys, _ = config_keys(root)
    top = {k for k in keys if "." not in k and not k.endswith("[]")}
    problems = []
    for source in files:
        text = source.read_text()
        rel = source.relative_to(root)
        for line, span in code_spans(text):
            where = f"{rel}:{line}: `{span}`"
            if is_key_path(span) and span not in keys:
                problems.append(f"{where} is no key of {SCHEMA}")
            pair = KEY_VALUE.match(span)
            if pair and pair[1] in top and (why := bad_value(pair[1], unquoted(pair[2]), root)):
                problems.append(f"{where}: {why}")
        joined = unfenced(text)
        for m in NAMED_KEY.finditer(joined):
            if m[1] not in keys:
                line = joined.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{line}: config key `{m[1]}` is not in {SCHEMA}")
        for pattern in (STATED_DEFAULT, DEFAULT_PAIR):
            for m in pattern.finditer(re.sub(r"[ \t]*\n[ \t]*", " ", joined)):
                key = m["key"]
                if key not in keys:
                    continue
                named, value = stated(
                    m["code"], m.groupdict().get("word"), m.groupdict().get("onoff")
                )
                if named and value != keys[key]:
                    problems.append(
                        f"{rel}: `{key}` is said to default to {value!r}; the schema's default:"
                        f" {keys[key]!r}"
                    )
    return problems + key_table_problems(root)


def table_rows(text: str, header: str) -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of every row of the Markdown table under `header`."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() != header:
            continue
        for j in range(i + 2, len(lines)):
            if not lines[j].startswith("|"):
                break
            yield j + 1, [c.strip() for c in re.split(r"(?<!\\)\|", lines[j].strip())[1:-1]]


def key_table_problems(root: Path = ROOT, readme: Path = Path("config/README.md")) -> list[str]:
    """config/README.md's key table: a row for every key of the schema, each key the
    schema's, each default the schema's (a code span, or words where the schema has none),
    and no cell longer than a reader scans (MAX_CELL characters: prose goes under it)."""
    path = root / readme
    if not path.is_file():
        return []
    keys, containers = config_keys(root)
    problems, seen = [], set()
    for line, cells in table_rows(path.read_text(), KEY_TABLE_HEADER):
        where = f"{readme}:{line}"
        key = cells[0].strip("`")
        seen.add(key)
        if key not in keys:
            problems.append(f"{where}: `{key}` is no key of {SCHEMA}")
            continue
        default, schema_default = cells[1], keys[key]
        if re.fullmatch(r"`[^`]+`", default):
            value = yaml.safe_load(default.strip("`"))
            if value != schema_default:
                problems.append(f"{where}: `{key}` defaults to {schema_default!r}, not {value!r}")
        elif schema_default is not NO_DEFAULT:
            problems.append(f"{where}: `{key}` defaults to `{schema_default!r}` (the schema's)")
        for cell in cells:
            if len(cell) > MAX_CELL:
                problems.append(f"{where}: a cell of {len(cell)} characters (at most {MAX_CELL})")
    # a list of blocks has its row as `workloads[]`; an open object's keys are told in its row
    wanted = {
        k
        for k in keys
        if k in OPEN_KEYS
        or (k not in containers and k + "[]" not in keys and k.split(".")[0] not in OPEN_KEYS)
    }
    problems += [f"{readme}: no row for `{k}`" for k in sorted(wanted - seen)]
    return problems


def test_the_config_keys_and_defaults_the_docs_name_are_the_schemas():
    problems = config_key_problems(doc_files())
    assert not problems, "\n".join(problems)


# A command a doc gives, at the start of a line or span or after `;`, `&&` or `|` (variables
# set before it): the bootstrap's, the GPU kit's script, `blockbench` (installed, or `python
# -m blockbench`) and Snakemake (whose `--config` values are checked)
COMMAND = re.compile(
    r"(?:^|(?<=[;&|(]))\s*(?:[A-Z_]+=\S*\s+)*(?:python3?\s+(?:-u\s+)?)?"
    r"(?P<prog>scripts/bootstrap\.py|scripts/gpu_run\.py|-m\s+blockbench"
    r"|(?:\.venv[\w-]*/bin/)?blockbench|(?:\.venv[\w-]*/bin/)?snakemake)"
    r"(?=\s|$)(?P<rest>[^;&|#`]*)"
)
# `git checkout 598f60e`, `git worktree add ../v9 e0da943`: the commit a rebuild runs at
CHECKOUT = re.compile(
    r"\bgit\s+(?:checkout|switch\s+--detach|worktree\s+add\s+\S+)\s+([0-9a-f]{7,40})\b"
)
GIT_SHOW = re.compile(r"\bgit show ([0-9a-f]{7,40}(?:~\d+|\^)*):(\S+)")


def command_lines(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, text, the code block's lines before it) of every line of a fenced or indented
    code block (a line ending in a backslash joined with the next) and every code span."""
    lines = text.split("\n")
    inside, block, i = False, [], 0
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            inside, block = not inside, []
        elif inside or (line.startswith("    ") and not line.lstrip().startswith(("-", "|"))):
            first = i
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i].strip()
            yield first + 1, line, list(block)
            block.append(line)
        i += 1
    for line, span in code_spans(text):
        yield line, span, []


def words(rest: str) -> list[str]:
    try:
        return shlex.split(rest)
    except ValueError:  # a quote the span or line leaves open
        return rest.split()


def bootstrap_commands(root: Path = ROOT) -> set[str]:
    source = (root / "scripts/bootstrap.py").read_text()
    return set(re.findall(r'"(\w+)"', re.search(r"argv\[0\] not in \(([^)]*)\)", source)[1]))


@cache
def blockbench_parser(command: str) -> argparse.ArgumentParser:
    """The parser `blockbench COMMAND` parses its options with, caught as it parses."""
    from blockbench.pipeline.cli import COMMANDS

    class Parsed(Exception):
        pass

    def grab(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        raise Parsed(self)

    entry = COMMANDS[command]
    with mock.patch.object(argparse.ArgumentParser, "parse_args", grab):
        try:
            getattr(import_module(entry.module), entry.function)([])
        except Parsed as caught:
            return caught.args[0]
    raise AssertionError(f"`blockbench {command}` parsed no options")


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def method_version(root: Path = ROOT) -> int:
    spec = (root / "src/blockbench/records/spec.py").read_text()
    return int(re.search(r"^METHOD_VERSION = (\d+)", spec, re.M)[1])


@cache
def measured_by(raw: Path) -> tuple[int, str]:
    """The method version and commit most of a run's records name."""
    seen: dict[tuple[int, str], int] = {}
    for record in records(raw):
        git = (record.get("provenance") or {}).get("git") or {}
        key = (record.get("method_version", 1), git.get("commit") or "unrecorded")
        seen[key] = seen.get(key, 0) + 1
    return max(seen, key=seen.get) if seen else (0, "")


def git(root: Path, *args: str) -> str | None:
    """git's output, or None where it fails (or this is no checkout)."""
    if not shutil.which("git") or not (root / ".git").exists():
        return None
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def rebuild_problem(run_dir: str, before: list[str], root: Path = ROOT) -> str | None:
    """A rebuild of a committed run measured by another method than this checkout's must
    first check out a commit that reads that method, has `regenerate` and holds that run."""
    folder = root / run_dir
    raws = [p for p in sorted((folder / "raw").glob("*")) if p.is_dir()]
    if not run_dir.startswith("results/reference/") or len(raws) != 1:
        return None
    version, commit = measured_by(raws[0])
    today = method_version(root)
    if version in (0, today):
        return None
    checkouts = [m[1] for line in before for m in CHECKOUT.finditer(line)]
    if not checkouts:
        return (
            f"measured by method version {version} (commit {commit[:7]}), which this checkout's"
            f" {today} refuses: check out a commit that reads it first, in the same code block"
        )
    at = checkouts[-1]
    spec = git(root, "show", f"{at}:src/blockbench/records/spec.py")
    if spec is None:  # no checkout to ask
        return None
    found = re.search(r"^METHOD_VERSION = (\d+)", spec, re.M)
    if not found or int(found[1]) != version:
        return f"{at} reads method version {found and found[1]}, not the run's {version}"
    # the workflow layer's folder, `pipeline/`, was `run/` before issue 76
    homes = (f"{at}:src/blockbench/{layer}/regenerate.py" for layer in ("pipeline", "run"))
    if all(git(root, "cat-file", "-e", home) is None for home in homes):
        return f"{at} has no `regenerate`"
    raw = f"{run_dir.rstrip('/')}/raw"
    if label_tree(root, at, raw) != label_tree(root, "HEAD", raw):  # the same records
        return f"{at} holds other records in {raw} than this checkout's"
    return None


def label_tree(root: Path, commit: str, raw: str) -> str | None:
    """The git tree of the one run folder under `raw` at `commit`, whatever its name."""
    listing = git(root, "ls-tree", f"{commit}:{raw}") or ""
    trees = [line.split()[2] for line in listing.splitlines() if line.split()[1] == "tree"]
    return trees[0] if len(trees) == 1 else None


def config_value_problems(args: list[str], where: str, keys: dict, root: Path) -> list[str]:
    """The `KEY=VALUE` words after a `--config`: each a top-level key of the config, each
    value one the schema takes (a word without `=`, a file for the GPU kit, is left alone)."""
    problems = []
    for word in args[args.index("--config") + 1 :] if "--config" in args else []:
        if word.startswith("-"):
            break
        key, _, value = word.partition("=")
        if not value or key == "key":
            continue
        if key not in keys or "." in key or key.endswith("[]"):
            problems.append(f"{where}: no config key {key!r}")
        elif why := bad_value(key, value, root):
            problems.append(f"{where}: {key}={value}: {why}")
    return problems


def command_problems(files: list[Path], root: Path = ROOT) -> list[str]:
    """Every command a doc gives names a subcommand that exists and options its parser takes;
    its `--config` values are the config's keys with values the schema takes; a rebuild of a
    run of another method version checks out, before it, a commit that reads it."""
    from blockbench.pipeline.cli import COMMANDS

    bootstrap, problems = bootstrap_commands(root), []
    keys, _ = config_keys(root)
    for source in files:
        rel = source.relative_to(root)
        for line, text, before in command_lines(source.read_text()):
            found = list(COMMAND.finditer(text))
            if not found and "--config" in text:  # `run --config partial_claims=true`
                args = words(text[text.index("--config") :])
                where = f"{rel}:{line}: `{' '.join(text.split())}`"
                problems += config_value_problems(args, where, keys, root)
            for m in found:
                prog, args = m["prog"], words(m["rest"])
                where = f"{rel}:{line}: `{' '.join(m.group(0).split())}`"
                problems += config_value_problems(args, where, keys, root)
                if prog.endswith("snakemake"):
                    continue
                if prog.endswith("gpu_run.py"):
                    command, args = "gpu-kit", ["gpu-kit", *args]
                elif not args or PLACEHOLDER.match(args[0]) or args[0] == "--help":
                    continue
                elif prog.endswith("bootstrap.py"):
                    if args[0] not in bootstrap:
                        problems.append(f"{where}: the bootstrap has no {args[0]!r}")
                        continue
                    if args[0] != "regenerate":  # Snakemake's options, pytest's
                        continue
                    command = "regenerate"
                else:
                    command = args[0]
                    if command not in COMMANDS:
                        problems.append(f"{where}: blockbench has no command {command!r}")
                        continue
                parser = blockbench_parser(command)
                known = options(parser) | {"--help"}
                for word in args[1:]:
                    if word.startswith("--") and word.split("=")[0] not in known:
                        problems.append(f"{where}: `blockbench {command}` has no {word}")
                if command == "regenerate":
                    given = [w for w in args[1:] if not PLACEHOLDER.match(w)]
                    try:
                        run_dir = str(parser.parse_known_args(given)[0].run_dir)
                    except SystemExit:
                        continue
                    # a checkout before it in its code block, or in its line (`git checkout X
                    # && ... regenerate ...`)
                    earlier = [*before, text[: m.start()]]
                    if why := rebuild_problem(run_dir, earlier, root):
                        problems.append(f"{where}: {why}")
    return problems


def test_the_commands_the_docs_give_exist():
    problems = command_problems(doc_files())
    assert not problems, "\n".join(problems)


# "README, "Running it"", "the README's "What it finds"", ""Stopping and resuming" in [the
# README]": a section of the top-level README; "see "Where the variance lives" below": one of
# the page's own
README_SECTION = re.compile(
    r"""(?<![\w/-])README(?:'s)?,?\s+["“]([^"”]+)["”]"""
    r"""|["“]([^"”]+)["”],?\s+in\s+\[?(?:the\s+)?README\b"""
)
PAGE_SECTION = re.compile(r"""\b(?:see|under)\s+["“]([^"”]+)["”]\s+(?:below|above)""")
BOLD_HEAD = re.compile(r"^\*\*([^*]+?)[.:]?\*\*", re.M)


def sections(path: Path) -> list[str]:
    """A Markdown file's section names: its headings and its paragraphs' bold run-in heads
    (`**Stopping and resuming.**`), as a reader sees them."""
    text = unfenced(path.read_text())
    names = [m[2] for line in text.split("\n") if (m := HEADING.match(line))]
    names += BOLD_HEAD.findall(text)
    return [re.sub(r"`|!?\[([^\]]*)\]\([^)]*\)", lambda m: m[1] or "", n).strip() for n in names]


def names_section(name: str, found: list[str]) -> bool:
    """`name` is a section, or the start of one's heading ("Where the variance lives" of
    "Where the variance lives (how `repeats` was chosen)")."""
    name = name.strip().rstrip(".").lower()
    return any(s.lower() == name or s.lower().startswith(name + " (") for s in found)


def section_problems(files: list[Path], root: Path = ROOT) -> list[str]:
    """Every README section a doc (or a config file's comment) names by its title exists."""
    readme = sections(root / "README.md")
    problems = []
    for source in files:
        text = source.read_text()
        if source.suffix == ".md":
            text = unfenced(text)
        joined = re.sub(r"\s*\n\s*#?\s*", " ", text)  # a YAML comment wraps too
        for pattern, found in ((README_SECTION, readme), (PAGE_SECTION, None)):
            for m in pattern.finditer(joined):
                name = next(g for g in m.groups() if g)
                if not names_section(name, found if found is not None else sections(source)):
                    whose = "the README" if found is not None else source.name
                    problems.append(f"{source.relative_to(root)}: {whose} has no section {name!r}")
    return problems


def test_the_readme_sections_the_docs_name_exist():
    files = [*doc_files(), *sorted((ROOT / "config").glob("*.yaml"))]
    problems = section_problems(files)
    assert not problems, "\n".join(problems)


def shown(path: Path, root: Path) -> Path:
    return path.relative_to(root) if path.is_relative_to(root) else path


def history_problems(files: list[Path], root: Path = ROOT) -> list[str]:
    """Every `git show COMMIT:PATH` a doc gives shows a file, and every commit a doc checks
    out exists: what lives only in history is reached by the command the doc gives."""
    if git(root, "rev-parse", "HEAD") is None:
        return []
    problems = []
    for source in files:
        for line, span in code_spans(source.read_text()):
            for ref in GIT_SHOW.finditer(span):
                if git(root, "cat-file", "-e", f"{ref[1]}:{ref[2]}") is None:
                    problems.append(f"{shown(source, root)}:{line}: no {ref[1]}:{ref[2]}")
        for line, text, _ in command_lines(source.read_text()):
            for ref in CHECKOUT.finditer(text):
                if git(root, "cat-file", "-e", f"{ref[1]}^{{commit}}") is None:
                    problems.append(f"{shown(source, root)}:{line}: no commit {ref[1]}")
    return problems


def test_what_the_docs_show_from_git_history_exists():
    if git(ROOT, "rev-parse", "--is-shallow-repository") != "false\n":
        pytest.skip("no whole git history here (a shallow clone, or no checkout)")
    problems = history_problems(doc_files())
    assert not problems, "\n".join(problems)


def workload_modules(root: Path = ROOT) -> dict[str, list[str]]:
    """Each module of src/blockbench/workloads/ and of a shipped catalog's workloads/ that
    declares workloads, with their names (the first argument of each `Workload(...)` in its
    `WORKLOADS`), read without importing."""
    import ast

    found = {}
    own = sorted((root / "src/blockbench/workloads").glob("*.py"))
    for path in own + sorted(root.glob("config/claims/*/workloads/*.py")):
        tree = ast.parse(path.read_text())
        names = [
            node.args[0].value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "Workload"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ]
        if names:
            found[path.stem] = names
    return found


def layout_workload_problems(root: Path = ROOT, page: Path = Path("docs/layout.md")) -> list[str]:
    """docs/layout.md's bullet of workload modules names every module that declares
    workloads, and each workload whose name is not its module's."""
    text = (root / page).read_text()
    bullet = re.search(r"^- One module per workload.*?(?=^- |\Z)", text, re.M | re.S)
    if not bullet:
        return [f'{page}: no bullet "- One module per workload"']
    named = set(re.findall(r"`(\w+)\.py`", bullet[0]))
    spans = set(re.findall(r"`(\w+)`", bullet[0]))
    modules = workload_modules(root)
    problems = [f"{page}: `{m}.py` is not named" for m in sorted(set(modules) - named)]
    problems += [f"{page}: `{m}.py` declares no workload" for m in sorted(named - set(modules))]
    for module, names in modules.items():
        problems += [
            f"{page}: `{n}` (in `{module}.py`) is not named"
            for n in names
            if n != module and n not in spans
        ]
    return problems


def test_layout_names_every_workload_module():
    problems = layout_workload_problems()
    assert not problems, "\n".join(problems)


# --- Figures quoted from committed runs, compared with the runs' records ---

REFERENCE = Path("results/reference")
# The reference READMEs whose every figure below is checked against their runs
CHECKED_READMES = ("epyc-zen3-2cpu", "h200-gpu-quick", "xeon-m207-2cpu")
NUMBER = r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?"
# `2.16 [1.93, 2.42]`: a value and its 95% interval, as claims.md prints them
TRIPLE = re.compile(rf"({NUMBER}) \[({NUMBER}), ({NUMBER})\]")
IDS = r"[A-Z]\d+(?:-[A-Z]?\d+)?"
VERDICT_LIST = re.compile(
    rf"\b(Reproduced|Not reproduced|Inconclusive|Not run): ({IDS}(?:, {IDS})*)"
)
VERDICTS = {
    "Reproduced": "reproduced",
    "Not reproduced": "not_reproduced",
    "Inconclusive": "inconclusive",
    "Not run": "not_run",
}
KIT_LOG = re.compile(
    r"^part 1: (\d+) process\(es\) in (\d+) s; 0 of the first stage's (\d+) left"
    r"(?:.*?; (\d+) added round\(s\) cut by time)?",
    re.M,
)


def same(said: str, value: str | float) -> bool:
    """A number a doc prints is the value to claims.md's 3 significant figures."""
    try:
        return math.isclose(float(said), float(f"{float(value):.3g}"), rel_tol=1e-9)
    except ValueError:
        return False


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def runs_of(kind: Path) -> dict[str, Path]:
    """A reference kind's runs by folder (`run`, `repeat`, `paper/run`)."""
    return {
        str(p.parent.relative_to(kind)): p.parent for p in sorted(kind.rglob("claim_parts.csv"))
    }


def triples(run: Path, claim: str | None = None) -> list[tuple[str, str, str, str]]:
    """(value, low, high, outcome) of every part of `run` with an interval."""
    return [
        (r["measured"], r["ci_low"], r["ci_high"], r["outcome"])
        for r in read_rows(run / "claim_parts.csv")
        if r["ci_low"] and (claim is None or r["claim_id"] == claim)
    ]


def matches(found: re.Match, parts: list[tuple[str, str, str, str]]) -> list[str]:
    """The outcomes of the parts whose value and interval a doc's `v [lo, hi]` prints."""
    return [p[3] for p in parts if all(same(found[i + 1], p[i]) for i in range(3))]


def expand(ids: str) -> list[str]:
    """`B1, C2-C6` -> B1, C2, C3, C4, C5, C6."""
    out = []
    for item in ids.split(", "):
        first, _, last = item.partition("-")
        if not last:
            out.append(first)
            continue
        letter, start = first[0], int(first[1:])
        out += [f"{letter}{n}" for n in range(start, int(last.lstrip(letter)) + 1)]
    return out


def verdicts_of(run: Path) -> dict[str, dict[str, str]]:
    return {r["claim_id"]: r for r in read_rows(run / "claims.csv")}


def held(a: Path, b: Path) -> tuple[int, int]:
    """Of the parts both runs measured with an interval, how often one run's interval holds
    the other's value, and of how many comparisons."""

    def parts(run: Path) -> dict[tuple[str, str], tuple[float, float, float]]:
        return {
            (r["claim_id"], r["part"]): (
                float(r["measured"]),
                float(r["ci_low"]),
                float(r["ci_high"]),
            )
            for r in read_rows(run / "claim_parts.csv")
            if r["ci_low"]
        }

    pa, pb = parts(a), parts(b)
    both = sorted(set(pa) & set(pb))
    holds = sum(x[1] <= y[0] <= x[2] for k in both for x, y in ((pa[k], pb[k]), (pb[k], pa[k])))
    return holds, 2 * len(both)


def minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s"


def core_shares(run: Path) -> list[int]:
    """Per core, the percentage of a run's on-core speed windows that ran slow, by the rule
    the claims stage reads them with (`blockbench.measure.core_speed`)."""
    from blockbench.measure.core_speed import ON_CORE, Window, summarize

    windows = [
        Window(int(w["core"]), w["call_s"], w["cpu_share"])
        for record in records(run / "raw")
        for w in record["provenance"].get("core_speed") or []
        if isinstance(w, dict) and w["cpu_share"] >= ON_CORE
    ]
    return [round(100 * s.slow_share) for s in summarize(windows)]


def phase_values(runs: Any, cell: str, phase: str, key: str = "median_s") -> list[float]:
    """A phase's `key` in every process of `cell` (`gpu/matmul/jax/5000`) of the runs."""
    return [
        record["phases"][phase][key]
        for run in runs
        for raw in run.glob(f"raw/*/{cell}")
        for record in records(raw)
        if phase in record["phases"]
    ]


def span(values: list[float], digits: int = 1, scale: float = 1) -> str:
    low, high = (f"{v * scale:.{digits}f}" for v in (min(values), max(values)))
    return low if low == high else f"{low} to {high}"


def kit_figures(runs: Any) -> list[str]:
    """What the GPU reference says of its cells, as its records give it over both runs: the
    copy and the product of B2, the cold first call of C3 and the smoke cell's compile, the
    jit SELU of C5."""
    runs = list(runs)
    smoke = [json.loads(next(r.glob("raw/*/smoke.json")).read_text()) for r in runs]
    compiles = [s["phases"]["compile"]["median_s"] for s in smoke]
    loops = set(phase_values(runs, "gpu/selu/jax_jit/1000000", "steady", "loops"))
    return [
        f"took {span(phase_values(runs, 'gpu/matmul/jax_numpy_input/10000', 'host_to_device'), 2)}"
        " s a process; the product took"
        f" {span(phase_values(runs, 'gpu/matmul/jax/10000', 'steady'), 2)} s",
        "the first call at 5000 took"
        f" {span(phase_values(runs, 'gpu/matmul/jax/5000', 'first_call'))} s a process",
        f"compile alone took {span(compiles, 2)} s",
        f"took {span(sorted(loops), 0)} calls a sample and read"
        f" {span(phase_values(runs, 'gpu/selu/jax_jit/1000000', 'steady'), 0, 1e6)} µs a call",
    ]


def reference_readme_problems(kind: Path, root: Path = ROOT) -> list[str]:
    """What a reference README quotes from its runs is what their records say: every value
    with its interval is a part's, each outcome beside one that part's, the verdict lists
    each run's, the processes, start and measuring time of its table each run's, how often
    one run's intervals hold the other's values, and what a GPU kit's log and `kit.json`
    say of its processes and its worker starts."""
    from blockbench.present.front_page import run_facts

    readme = kind / "README.md"
    text = readme.read_text()
    flat = " ".join(text.split())
    rel = readme.relative_to(root)
    runs = runs_of(kind)
    every = [t for run in runs.values() for t in triples(run)]
    problems = [
        f"{rel}: {m[0]} is no part's value and interval in {', '.join(runs)}"
        # a trend's steps quoted in code (`1000->5000 unclear 2 [0.762, 5.26]`) are judged
        # again from the records by tests/test_trend_steps.py
        for m in TRIPLE.finditer(re.sub(r"`[^`]*->[^`]*`", "", flat))
        if not matches(m, every)
    ]
    defaults = [runs[r] for r in ("run", "repeat") if r in runs]
    for m in VERDICT_LIST.finditer(flat):
        for claim in expand(m[2]):
            for run in defaults:
                got = verdicts_of(run).get(claim, {}).get("verdict")
                if got != VERDICTS[m[1]]:
                    problems.append(f"{rel}: {claim} is {got} in {run.name}/, not {m[1]!r}")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        link = re.match(r"\| \[`([\w/]+)/`\]\(\1/claims\.md\)", line)
        if not link or link[1] not in runs:
            continue
        header = next(lines[j] for j in range(i, -1, -1) if not lines[j - 1].startswith("|"))
        columns = [c.strip() for c in header.strip("|").split("|")]
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        facts = run_facts(runs[link[1]])
        for column, cell in zip(columns, cells, strict=False):
            if (
                column == "worker processes"
                and int(re.match(r"\d+", cell)[0]) != facts["processes"]
            ):
                problems.append(f"{rel}: {link[1]}/ has {facts['processes']} processes, not {cell}")
            if column == "measuring" and cell != minutes(facts["measuring_s"]):
                problems.append(f"{rel}: {link[1]}/ measured {minutes(facts['measuring_s'])}")
            if column == "started (UTC)":
                from datetime import UTC, datetime

                first = min(r["started_at"] for r in records(runs[link[1]] / "raw"))
                start = datetime.fromtimestamp(first, UTC)
                if cell != start.strftime("%H:%M"):
                    problems.append(f"{rel}: {link[1]}/ started at {start:%H:%M}, not {cell}")
    for i, line in enumerate(lines):  # a table of parts, a column per run: `holds, 26.1 [...]`
        if not line.startswith("|") or lines[i - 1].startswith("|") or "run" not in line:
            continue
        columns = [  # `run`, `` `run/` ``, [`run/`](run/claims.md)
            re.sub(r"^\[`?([\w/]+?)/?`?\]\(.*\)$", r"\1", c.strip()).strip("`/")
            for c in line.strip("|").split("|")
        ]
        for row in lines[i + 2 :]:
            if not row.startswith("|"):
                break
            for column, cell in zip(columns, row.strip("|").split("|"), strict=False):
                said = re.match(rf"\s*(holds|fails|inconclusive), ({TRIPLE.pattern})", cell)
                if said and column in runs:
                    outcomes = matches(TRIPLE.search(cell), triples(runs[column]))
                    if said[1] not in outcomes:
                        problems.append(f"{rel}: {cell.strip()!r} is not {column}/'s: {outcomes}")
    if len(defaults) == 2 and "comparisons" in flat:
        h, n = held(*defaults)
        if f"{h} of {n} comparisons" not in flat:
            problems.append(f"{rel}: each run's interval holds the other's value in {h} of {n}")
    for name, run in runs.items():
        for log in run.glob("*.log"):
            m = KIT_LOG.search(log.read_text())
            if not m:
                continue
            n, s, first, cut = int(m[1]), m[2], int(m[3]), m[4]
            wanted = [
                f"{n} worker processes in {s} s",
                f"{first} in the first stage and {n - first} rounds on demand",
            ]
            wanted += [f"{cut} more rounds were cut"] if cut else []
            starts = json.loads(next(run.glob("raw/*/kit.json")).read_text())["starts_s"]
            wanted.append(f"{starts['cpu']:.1f} s (CPU) and {starts['gpu']:.1f} s (GPU)")
            problems += [
                f"{rel}: {name}/ (its log): not said {w!r}" for w in wanted if w not in flat
            ]
    kits = [run for run in runs.values() if any(run.glob("raw/*/kit.json"))]
    if kits:
        problems += [
            f"{rel}: not said, from the runs: {w!r}" for w in kit_figures(kits) if w not in flat
        ]
    if "of its two cores' windows" in flat:
        for name in ("run", "repeat"):
            shares = core_shares(runs[name])
            said = " and ".join(f"{s}%" for s in shares)
            if said not in flat:
                problems.append(f"{rel}: {name}/'s cores read {said} of their windows slow")
    return problems


@pytest.mark.parametrize("kind", CHECKED_READMES)
def test_the_reference_readmes_quote_their_runs(kind):
    problems = reference_readme_problems(ROOT / REFERENCE / kind)
    assert not problems, "\n".join(problems)


# docs/claims.md's paragraphs of measured results, and the committed runs each quotes: the
# first run of each pair, then its repeat ("... in the repeat")
CLAIMS_PAGE = Path("docs/claims.md")
QUOTED_RUNS = {
    "Reference run.": ("xeon-m207-2cpu/run", "xeon-m207-2cpu/repeat"),
    "At the articles' setups.": ("xeon-m207-2cpu/paper/run",),
    "On a GPU.": ("h200-gpu-quick/run", "h200-gpu-quick/repeat"),
}
RESULT = re.compile(
    r"\*\*(?P<head>" + "|".join(re.escape(h) for h in QUOTED_RUNS) + r")\*\*\s+"
    r"(?P<body>.*?)(?=\*\*[A-Z][^*]*\.\*\*|$)"
)
LEAD = re.compile(r"^(Reproduced|Not reproduced|Inconclusive|Not run)(?: \((>=[^)]*\)?)\))?")
ERROR = re.compile(rf"worst relative error ({NUMBER})")
CLAUSE = re.compile(r"[;()]|\. ")


def claims_page_problems(root: Path = ROOT, page: Path = CLAIMS_PAGE) -> list[str]:
    """Every result docs/claims.md quotes under a claim is that claim's in the run it names:
    the verdict it opens with (in each run it quotes) and the confidence beside it, each value
    and interval (the repeat's where it says so) and each check's worst error."""
    text = (root / page).read_text()
    problems = []
    for section in re.split(r"^### ", unfenced(text), flags=re.M)[1:]:
        claim = section.split()[0]
        if not re.fullmatch(r"[A-Z]\d+", claim):
            continue
        flat = " ".join(section.split())
        for m in RESULT.finditer(flat):
            runs = [root / REFERENCE / r for r in QUOTED_RUNS[m["head"]]]
            body, where = m["body"], f"{page}: {claim}, {m['head']!r}"
            lead = LEAD.match(body)
            if not lead:
                problems.append(f"{where} opens with no verdict")
                continue
            for run in runs:
                row = verdicts_of(run)[claim]
                if row["verdict"] != VERDICTS[lead[1]]:
                    problems.append(f"{where}: {row['verdict']} in {run.relative_to(root)}")
            confidence = verdicts_of(runs[0])[claim]["confidence"]
            if (lead[2] or "") != (confidence if confidence.startswith(">=") else ""):
                problems.append(f"{where}: its confidence is {confidence!r}, not {lead[2]!r}")
            spans = list(TRIPLE.finditer(body))
            for i, t in enumerate(spans):
                # its clause, between the values beside it and the nearest `;`, `. `, `(`, `)`
                before = body[spans[i - 1].end() if i else 0 : t.start()]
                after = body[t.end() : spans[i + 1].start() if i + 1 < len(spans) else None]
                clause = re.split(CLAUSE, before)[-1] + re.split(CLAUSE, after)[0]
                run = runs[-1] if "repeat" in clause and len(runs) > 1 else runs[0]
                if not matches(t, triples(run, claim)):
                    problems.append(
                        f"{where}: {t[0]} is no part of {claim} in {run.relative_to(root)}"
                    )
            for e in ERROR.finditer(body):
                checks = [
                    r["measured"]
                    for r in read_rows(runs[0] / "claim_parts.csv")
                    if r["claim_id"] == claim and r["kind"] == "check"
                ]
                if not any(same(e[1], c) for c in checks):
                    problems.append(f"{where}: worst error {e[1]}, the run's {checks}")
    flat = " ".join(text.split())
    gpu = runs_of(root / REFERENCE / GPU_KIND).values()
    for said, figure in (("first call at 5000 took", 1), ("compile alone took", 2)):
        if said in flat and (wanted := kit_figures(gpu)[figure]) not in flat:
            problems.append(f"{page}: not said, from {GPU_KIND}: {wanted!r}")
    return problems


def test_the_claims_page_quotes_the_reference_runs():
    problems = claims_page_problems()
    assert not problems, "\n".join(problems)


METHOD_PAGE = Path("docs/method.md")
# The run docs/method.md times a run's processes by (its claims.md, "Where the measuring time
# went"), and the components it quotes, as that table names them
TIMED_RUN = Path("xeon-m207-2cpu/run")
TIME_LINE = re.compile(
    r"^Time: (\d+) worker processes measured for (\d+) s"
    r" \((\d+) s of it, \d+%, inside timed calls\)",
    re.M,
)
WORKER_START = "the worker's start and imports (NumPy, JAX)"
JOB_START = "the job's start: Python, the parent's imports and lock"
BETWEEN = "between two processes: Snakemake, the rounds checkpoint"


def method_page_problems(root: Path = ROOT, page: Path = METHOD_PAGE) -> list[str]:
    """docs/method.md's figures of the reference run's time are its claims.md's, and the
    first processes each bullet of "The default grid's settings" gives a claim are what
    `repeats` and the claims' settings give it."""
    text = " ".join((root / page).read_text().split())
    run = root / REFERENCE / TIMED_RUN
    report = (run / "claims.md").read_text()
    n, measuring, timed = TIME_LINE.search(report).groups()
    component = {  # its table's rows: component, seconds, share, median a process
        c[0]: (float(c[1]), float(c[3]))
        for line in report.split("\n")
        if len(c := [x.strip() for x in line.strip().strip("|").split("|")]) == 4
        and re.fullmatch(r"[\d.]+", c[1])
    }
    worker, job, between = component[WORKER_START], component[JOB_START], component[BETWEEN]
    followers = {}
    for record in records(run / "raw"):
        config = record["provenance"]["config"]
        if config.get("block"):
            key = (config["block"], config["repeat"])
            followers[key] = followers.get(key, -1) + 1
    wanted = [
        f"{n} processes, {measuring} s of measuring, {timed} s of it inside timed calls",
        f"a median {worker[1]:.2f} s a process",
        f"the lock) {job[1]:.2f} s: {round(worker[0] + job[0])} s of the run",
        f"Snakemake's {between[1]:.2f} s and the job's {job[1]:.2f} s for the"
        f" {sum(followers.values())} of the {n} processes",
    ]
    problems = [f"{page}: not said, from {TIMED_RUN}: {w!r}" for w in wanted if w not in text]
    # B3 with equal cores: the reference kind's values
    equal = text.split("## Equal cores for NumPy and XLA", 1)[1].split(" ## ", 1)[0]
    b3 = [t for r in runs_of(run.parent).values() for t in triples(r, "B3")]
    problems += [
        f"{page}: {m[0]} is no B3 part of {run.parent.name}"
        for m in TRIPLE.finditer(equal)
        if not matches(m, b3)
    ]
    config = yaml.safe_load((root / "config/config.yaml").read_text())
    claims = yaml.safe_load((root / "config/claims/articles/claims.yaml").read_text())
    firsts = {
        c["id"]: max(
            (s.get("repeats", config["repeats"]) for s in c.get("settings", [])),
            default=config["repeats"],
        )
        for c in claims
    }
    words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    settings = text.split("## The default grid's settings", 1)[1].split(" ## ", 1)[0]
    for head in re.findall(r"- \*\*(.+?)\*\*", settings):
        count = re.search(r"\b(\d+|one|two|three|four|five|six) (?:first )?process", head)
        named = re.findall(r"\b[A-D]\d\b", head)
        if count and named:  # a cell takes the most any claim that reads it asks
            said, most = words.get(count[1]) or int(count[1]), max(firsts[c] for c in named)
            if said != most:
                problems.append(
                    f"{page}: {head!r}: {', '.join(named)} start with {most}, not {said}"
                )
    return problems


def test_the_method_page_quotes_the_reference_run_and_the_settings():
    problems = method_page_problems()
    assert not problems, "\n".join(problems)


GPU_PAGE = Path("docs/gpu.md")
GPU_KIND = Path("h200-gpu-quick")


def gpu_page_problems(root: Path = ROOT, page: Path = GPU_PAGE) -> list[str]:
    """What docs/gpu.md says real hardware confirmed is in the GPU reference's logs and
    records: the check's line, the clocks, the measured precision, the worker starts, the cold
    first call at 5000, the smoke cell's compile and the jit SELU's loop count and time."""
    text = " ".join((root / page).read_text().split())
    runs = list(runs_of(root / REFERENCE / GPU_KIND).values())
    logs = [next(r.glob("*.log")).read_text() for r in runs]
    starts = [json.loads(next(r.glob("raw/*/kit.json")).read_text())["starts_s"] for r in runs]
    wanted = [
        *sorted({f"`{log.split(chr(10), 1)[0]}`" for log in logs}),
        *sorted(
            {f"({c} MHz SM)" for log in logs for c in re.findall(r"NVML before: SM (\d+) MHz", log)}
        ),
        f"worker starts of {span([s['cpu'] for s in starts])} s (CPU) and"
        f" {span([s['gpu'] for s in starts])} s (GPU)",
        *kit_figures(runs)[1:],
    ]
    problems = [f"{page}: not said, from {GPU_KIND}: {w!r}" for w in wanted if w not in text]
    if "`matmul_precision: highest` measured as float32" in text:
        problems += [
            f"{page}: a log of {GPU_KIND} reads no float32 product asked `highest`"
            for log in logs
            if "measured float32 (asked highest)" not in log
        ]
    return problems


def test_the_gpu_page_quotes_the_gpu_reference():
    problems = gpu_page_problems()
    assert not problems, "\n".join(problems)


def test_docs_layout_names_every_module_of_the_package():
    """docs/layout.md is the map of the package: a module it does not name is one a
    contributor cannot find, and a name it keeps after a module moved points nowhere."""
    text = (ROOT / "docs/layout.md").read_text()
    package = ROOT / "src/blockbench"
    modules = {
        p.name
        for p in package.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py") and "workloads" not in p.parts
    }
    named = set(re.findall(r"`(\w+\.py)`", text))
    assert sorted(m for m in modules if m not in named) == []
    tree = {p.name for p in ROOT.rglob("*.py") if ".venv" not in p.parts}
    assert sorted(n for n in named if n not in tree) == []
