"""The README is a door and the docs hold together: every relative link in README.md, AGENTS.md
and docs/**/*.md names a file (or folder) of the repository, and a `#anchor` names a heading
of its target (GitHub's slugs); the README stays short.

External links (any `scheme:`) are not fetched. Links inside code (fenced blocks, code spans)
are text, not links. Headings are ATX (`# ...`); the docs use no other kind.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

ROOT = Path(__file__).resolve().parents[2]

README_MAX_LINES = 160
README_MAX_LINE_LENGTH = 200

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]+(?:\([^\s()]*\))?)(?:\s+\"[^\"]*\")?\s*\)"
)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_NOT_IN_SLUG = re.compile(r"[^\w\- ]")


def documents(root: Path) -> list[Path]:
    """The pages whose links are checked."""
    pages = [root / "README.md", root / "AGENTS.md", *sorted((root / "docs").rglob("*.md"))]
    return [page for page in pages if page.is_file()]


def _prose(text: str) -> Iterator[tuple[int, str]]:
    """`text` without its fenced code blocks, as (first line number, paragraph) pairs."""
    fence: str | None = None
    start, lines = 0, []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(1)
        if match or not line.strip():
            if lines:
                yield start, "\n".join(lines)
            lines = []
            continue
        if not lines:
            start = number
        lines.append(line)
    if lines:
        yield start, "\n".join(lines)


def _without_code_spans(paragraph: str) -> str:
    """The paragraph with each code span blanked (same length, so offsets keep their lines)."""
    return _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), paragraph)


def links(text: str) -> list[tuple[int, str]]:
    """Every link target of a markdown page, with its line number."""
    found: list[tuple[int, str]] = []
    for start, paragraph in _prose(text):
        prose = _without_code_spans(paragraph)
        for pattern in (_INLINE_LINK, _REFERENCE):
            for match in pattern.finditer(prose):
                target = match.group(1).removeprefix("<").removesuffix(">")
                found.append((start + prose.count("\n", 0, match.start()), target))
    return sorted(found)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: the rendered text in lower case, punctuation
    dropped (letters, digits, `_`, `-` and spaces stay), spaces as hyphens."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # links: text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    return _NOT_IN_SLUG.sub("", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, duplicates numbered as GitHub does (`x`, `x-1`)."""
    seen: dict[str, int] = {}
    result: set[str] = set()
    for _start, paragraph in _prose(text):
        for line in paragraph.splitlines():
            match = _HEADING.match(line)
            if match is None:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(root: Path, pages: Iterable[Path]) -> list[str]:
    """`page:line: target: why` for every relative link that does not resolve."""
    problems: list[str] = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for line, target in links(text):
            if _SCHEME.match(target) or target.startswith("//"):
                continue  # external: not fetched
            path_part, _, anchor = target.partition("#")
            where = f"{page.relative_to(root)}:{line}: {target}"
            resolved = (page.parent / unquote(path_part)).resolve() if path_part else page
            if not resolved.is_relative_to(root):
                problems.append(f"{where}: outside the repository")
            elif not resolved.exists():
                problems.append(f"{where}: no such file")
            elif anchor:
                if resolved.suffix != ".md":
                    problems.append(f"{where}: an anchor into a file that is not markdown")
                elif unquote(anchor) not in anchors(resolved.read_text(encoding="utf-8")):
                    problems.append(f"{where}: no heading with that anchor")
    return problems


# -- the repository ------------------------------------------------------------------------


def test_every_relative_link_resolves() -> None:
    pages = documents(ROOT)
    assert ROOT / "README.md" in pages
    assert ROOT / "docs" / "index.md" in pages
    problems = broken_links(ROOT, pages)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_readme_is_a_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    long = [
        (n, len(line))
        for n, line in enumerate(lines, start=1)
        if len(line) > README_MAX_LINE_LENGTH
    ]
    assert not long, f"README.md lines over {README_MAX_LINE_LENGTH} characters: {long}"


def test_every_page_of_docs_is_reachable_from_the_index() -> None:
    docs = ROOT / "docs"
    reached: set[Path] = set()
    todo = [docs / "index.md"]
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != ".md" or not page.is_file():
            continue
        reached.add(page)
        for _line, target in links(page.read_text(encoding="utf-8")):
            path_part = target.partition("#")[0]
            if path_part and not _SCHEME.match(target):
                todo.append((page.parent / unquote(path_part)).resolve())
    unreached = sorted(str(p.relative_to(ROOT)) for p in docs.rglob("*.md") if p not in reached)
    assert not unreached, f"pages no link from docs/index.md leads to: {unreached}"


# -- the checker itself: it must be able to fail --------------------------------------------


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## The `compass serve` flags\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# Title\n\n"
        "[ok](docs/other.md) and [ok too](docs/other.md#the-compass-serve-flags),\n"
        "[here](#title), [a folder](docs/), [web](https://example.com/nowhere.md).\n\n"
        "[gone](docs/missing.md) and [bad anchor](docs/other.md#no-such-heading)\n"
        "and [no heading here](#nowhere).\n\n"
        "```md\n[in a fence](docs/missing-too.md)\n```\n\n"
        "`[in a code span](docs/missing-three.md)`\n\n"
        "[ref]: docs/missing-ref.md\n"
    )
    assert broken_links(tmp_path, [page]) == [
        "README.md:6: docs/missing.md: no such file",
        "README.md:6: docs/other.md#no-such-heading: no heading with that anchor",
        "README.md:7: #nowhere: no heading with that anchor",
        "README.md:15: docs/missing-ref.md: no such file",
    ]


def test_the_checker_refuses_a_link_out_of_the_repository(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "outside.md").write_text("# Outside\n")
    page = tmp_path / "repo" / "README.md"
    page.write_text("[out](../outside.md)\n")
    assert broken_links(tmp_path / "repo", [page]) == [
        "README.md:1: ../outside.md: outside the repository"
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "4. `RespondToAsk` — atomic, all questions in one request",
            "4-respondtoask--atomic-all-questions-in-one-request",
        ),
        ("`bench.h2_abuse`", "benchh2_abuse"),
        (
            "`compass agent-bridge`: what both transports share",
            "compass-agent-bridge-what-both-transports-share",
        ),
        (
            "Many replicas: PgBouncer in transaction mode",
            "many-replicas-pgbouncer-in-transaction-mode",
        ),
        ("See [the spec](spec.md) *now*", "see-the-spec-now"),
    ],
)
def test_slugs_are_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_duplicate_headings_are_numbered() -> None:
    assert anchors("# Tools\n\n## Tools\n\n### Tools\n\n```\n# Tools\n```\n") == {
        "tools",
        "tools-1",
        "tools-2",
    }
