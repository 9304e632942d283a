"""The documentation holds together: every relative link and image resolves (a `#anchor` to a
heading of its target, as GitHub makes them), the README stays a first screen, every docs page
can be reached from it, the files, modules and tests the docs name exist, and nothing in the
repository points outside it. Reads files only: well under a second."""

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

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
    r"^(?:src|tests|scripts|benchmarks|config|workflow|profiles|docs)/[\w./-]+$"
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
    """`src/...`, `tests/...`, `benchmarks/...` and `blockbench.x.y` in code spans: a renamed
    module or test must take its documentation along."""
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
