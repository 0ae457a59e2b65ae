"""The documentation holds together: the README stays a short front door that opens with the two commands,
the rest lives in docs/, and every relative link of the README, of the docs pages and of the other READMEs
leads to a file that exists (and, for a link into a Markdown page, to one of its headings, with GitHub's
anchors). Links to the web are not followed: the test needs no network."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 200
DOCS_MIN_PAGES = 6
# What CI and a newcomer run first: the README's first code block, exactly.
TWO_COMMANDS = (
    "make demo    # the main job: the bridge, offline, on the embedded scripted model, driven by a terminal "
    "client\nmake test    # the whole test suite: ruff, mypy --strict, pytest, and the VS Code extension "
    "(unit, integration, code-server e2e)"
)


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def checked_pages() -> list[Path]:
    others = [REPO / "vscode-extension" / "README.md", *sorted((REPO / "packaging").rglob("README.md"))]
    return [README, *doc_pages(), *(page for page in others if page.exists())]


FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]+)\"", re.IGNORECASE)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """The page's lines outside fenced code blocks, numbered from 1."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match is not None:
            if fence is None:
                fence = match.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def links(text: str) -> Iterator[tuple[int, str]]:
    """Every link target of the page's prose (inline links and images, reference definitions, HTML)."""
    for number, line in prose_lines(text):
        definition = REFERENCE_DEFINITION.match(line)
        if definition is not None:
            yield number, definition.group(1)
            continue
        prose = CODE_SPAN.sub("", line)
        for pattern in (INLINE_LINK, HTML_LINK):
            for match in pattern.finditer(prose):
                yield number, match.group(1)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (links as their words, no code or emphasis marks),
    lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match is None:
            continue
        anchor = github_anchor(match.group(2))
        found.add(anchor if seen[anchor] == 0 else f"{anchor}-{seen[anchor]}")
        seen[anchor] += 1
    return found


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """What is wrong with the page's relative links, one line each (`page:line: target: problem`)."""
    problems = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if SCHEME.match(target) or target.startswith("//"):
            continue  # the web, mail: not followed
        path_part, _, fragment = target.partition("#")
        path_part = unquote(path_part.split("?", 1)[0])
        resolved = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}:{number}: {target}"
        if not resolved.exists():
            problems.append(f"{where}: no such file")
        elif not resolved.is_relative_to(root):
            problems.append(f"{where}: outside the repository")
        elif fragment and resolved.suffix == ".md" and unquote(fragment).lower() not in anchors(resolved):
            problems.append(f"{where}: no heading #{fragment} in {resolved.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", checked_pages(), ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    # The checker itself, on pages of its own: what it must find, and what it must leave alone.
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "outside.md").write_text("# Outside\n", encoding="utf-8")
    (root / "install.md").write_text("# Install\n\n## The API key, and login\n", encoding="utf-8")
    page = root / "probe.md"
    page.write_text(
        "# Probe\n\n## A `code` heading: yes\n\n"
        "[ok](install.md#the-api-key-and-login) [ok](#a-code-heading-yes) [web](https://example.com/x)\n"
        "[gone](no-such-page.md) [bad anchor](install.md#no-such-heading) ![gone](img/none.png)\n"
        "[outside](../outside.md)\n"
        "```\n[in code](nowhere.md)\n```\n`[in a code span](nowhere.md)`\n",
        encoding="utf-8",
    )
    problems = [problem.split(": ", 1)[1] for problem in broken_links(page, root=root)]
    assert problems == [
        "no-such-page.md: no such file",
        "install.md#no-such-heading: no heading #no-such-heading in install.md",
        "img/none.png: no such file",
        "../outside.md: outside the repository",
    ]


def test_every_docs_page_is_linked_from_the_readme_or_another_page() -> None:
    targets: set[Path] = set()
    for page in [README, *doc_pages()]:
        for _, target in links(page.read_text(encoding="utf-8")):
            if not SCHEME.match(target):
                path_part = unquote(target.partition("#")[0])
                if path_part:
                    targets.add((page.parent / path_part).resolve())
    orphans = [str(page.relative_to(REPO)) for page in doc_pages() if page.resolve() not in targets]
    assert orphans == []


def test_the_readme_is_a_short_front_door_and_docs_hold_the_rest() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move details into docs/"
    assert len(doc_pages()) >= DOCS_MIN_PAGES, [str(page) for page in doc_pages()]


def test_the_readme_opens_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first_block = re.search(r"^```[^\n]*\n(.*?)\n```", text, re.DOTALL | re.MULTILINE)
    assert first_block is not None
    assert first_block.group(1) == TWO_COMMANDS
    assert text[: first_block.start()].count("\n") < 30, "the two commands must stay near the top"
