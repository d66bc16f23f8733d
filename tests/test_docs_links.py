"""The documentation's links (none dead or leaving the repository) and the README's shape."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The two commands a new user copies first, verbatim.
README_START = [
    "    pip install -e . && tune --budget 500",
    '    pip install -e ".[test]" && pytest -q -n 2',
]
README_MAX_LINES = 200

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
# [text](target "title") and ![alt](target); the target may be in <...>.
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def doc_files(root: Path = ROOT) -> list[Path]:
    """The files a reader is sent through: README.md, docs/*.md, reports/h200/README.md."""
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [*files, root / "reports" / "h200" / "README.md"]


def _without_code_blocks(text: str) -> str:
    """`text` with its fenced and indented code blocks blanked (lines kept, for line counts)."""
    kept, fenced, indented, blank_before = [], False, False, True
    for line in text.splitlines():
        blank = not line.strip()
        if _FENCE.match(line):
            fenced, blank_before = not fenced, False
            kept.append("")
            continue
        # An indented block starts after a blank line and runs to the next line not indented.
        if line.startswith(("    ", "\t")) and not blank and (indented or blank_before):
            indented = True
        elif not blank:
            indented = False
        kept.append("" if fenced or (indented and not blank) else line)
        blank_before = blank
    return "\n".join(kept)


def _prose(text: str) -> str:
    """`text` without code blocks and with code spans blanked."""
    blanked = _CODE_SPAN.sub(lambda match: " " * len(match.group(0)), _without_code_blocks(text))
    return blanked


def links(text: str) -> list[str]:
    """Every link target in markdown `text`, in order."""
    prose = _prose(text)
    targets = [match.group(1) for match in _INLINE.finditer(prose)]
    targets += [match.group(1) for match in _REFERENCE.finditer(prose)]
    return [target[1:-1] if target.startswith("<") else target for target in targets]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of the headings of markdown file `path` (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    for line in _without_code_blocks(path.read_text(encoding="utf-8")).splitlines():
        heading = _HEADING.match(line)
        if heading:
            slug = _anchor(heading.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            if count:
                seen[f"{slug}-{count}"] = 1
    return set(seen)


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with each relative link of `path`, one line each (empty where none is)."""
    problems = []
    root = root.resolve()
    for target in links(path.read_text(encoding="utf-8")):
        if _SCHEME.match(target):
            continue  # https://..., mailto:...: outside the repository on purpose
        where, _, fragment = target.partition("#")
        where = where.split("?")[0]
        name = f"{path.relative_to(root)}: ({target})"
        if where.startswith("/"):
            problems.append(f"{name} is absolute; link relative to the file")
            continue
        resolved = (path.parent / where).resolve() if where else path.resolve()
        if not resolved.is_relative_to(root):
            problems.append(f"{name} leaves the repository")
        elif not resolved.exists():
            problems.append(f"{name} names no file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{name} names no heading of {resolved.relative_to(root)}")
    return problems


def test_every_relative_link_resolves_inside_the_repository():
    problems = [line for path in doc_files() for line in broken_links(path)]
    assert not problems, "\n".join(problems)


def test_every_docs_file_is_linked_from_the_readme_or_the_index():
    linked = {
        (path.parent / target.partition("#")[0]).resolve()
        for path in (ROOT / "README.md", ROOT / "docs" / "README.md")
        for target in links(path.read_text(encoding="utf-8"))
        if not _SCHEME.match(target)
    }
    unlinked = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not unlinked, unlinked


def test_readme_starts_with_the_two_commands_and_stays_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[:2] == README_START
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_checker_finds_dead_climbing_and_absolute_links(tmp_path):
    """The checker on a tree of its own: every kind of bad link is caught, good ones pass."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# Part one\n\n## Part `two`\n", encoding="utf-8")
    page = tmp_path / "docs" / "a.md"
    page.write_text(
        "# Top\n\n[ok](b.md) [ok](b.md#part-two) [ok](#top) [ok](https://github.com/apache/tvm)\n"
        "[dead](missing.md) [out](../../shared/x.md) [abs](/etc/passwd)\n"
        "[anchor](b.md#part-three) `[code](missing.md)`\n"
        "\n    [indented code](missing.md)\n\n```\n[fenced](missing.md)\n```\n"
        "[ref]: gone.md\n",
        encoding="utf-8",
    )
    problems = broken_links(page, tmp_path)
    assert [line.split(" (")[1].split(")")[0] for line in problems] == [
        "missing.md",
        "../../shared/x.md",
        "/etc/passwd",
        "b.md#part-three",
        "gone.md",
    ], problems
