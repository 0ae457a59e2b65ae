"""HTML to readable Markdown for `web_fetch`, with the standard library's `html.parser`.

Kept: headings, paragraphs, line breaks, links (made absolute against the page URL), emphasis, inline
code, preformatted blocks (fenced, whitespace kept), lists (nested, numbered), block quotes, tables (as
pipe rows), image alt text, and the page <title>. Dropped: scripts, styles, templates, SVG, forms'
controls, navigation chrome is NOT guessed at (no readability heuristics: what is on the page is shown).

Must not: execute or fetch anything, or fail on malformed HTML (the parser is lenient; output is best
effort).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

_SKIP = frozenset(
    {"script", "style", "noscript", "template", "svg", "head", "iframe", "canvas", "select", "button"}
)
_BLOCK = frozenset(
    {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "form", "figure",
     "figcaption", "address", "details", "summary", "dl", "dt", "dd", "table", "fieldset"}
)  # fmt: skip
_VOID = frozenset(
    {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}
)


class _Converter(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.out: list[str] = []
        self.title = ""
        self._in_title = False
        self._skip = 0
        self._pre = 0
        self._lists: list[list[int]] = []  # one [counter] per open list; counter -1 for <ul>
        self._links: list[str | None] = []
        self._quotes: list[list[str]] = []  # outputs suspended by open <blockquote>s
        self._cells = 0

    # -- output helpers --
    def _newlines(self, count: int) -> None:
        """End the current line(s) so that `count` line breaks precede what comes next."""
        if not self.out:
            return
        tail = "".join(self.out[-4:])
        have = len(tail) - len(tail.rstrip("\n"))
        self.out.append("\n" * max(0, count - have))

    def _emit(self, text: str) -> None:
        if self._in_title:  # <title> sits in the skipped <head>: checked first
            self.title += text
            return
        if self._skip:
            return
        if self._pre:
            self.out.append(text)
            return
        text = re.sub(r"\s+", " ", text)
        if not text.strip():
            if self.out and not self.out[-1].endswith((" ", "\n")):
                self.out.append(" ")
            return
        if self.out and self.out[-1].endswith("\n"):
            text = text.lstrip()
        self.out.append(text)

    # -- parser callbacks --
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "title":
            self._in_title = True
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self._skip += 1
            return
        if self._skip:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._newlines(2)
            self.out.append("#" * int(tag[1]) + " ")
        elif tag in _BLOCK:
            self._newlines(2)
        elif tag == "br":
            self.out.append("\n")
        elif tag == "hr":
            self._newlines(2)
            self.out.append("---")
            self._newlines(2)
        elif tag == "pre":
            self._newlines(2)
            self.out.append("```\n")
            self._pre += 1
        elif tag == "code" and not self._pre:
            self.out.append("`")
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("*")
        elif tag == "blockquote":  # collected apart, then every line gets its "> "
            self._quotes.append(self.out)
            self.out = []
        elif tag in ("ul", "ol"):
            self._newlines(1 if self._lists else 2)
            self._lists.append([0 if tag == "ol" else -1])
        elif tag == "li":
            self._newlines(1)
            depth = max(len(self._lists) - 1, 0)
            counter = self._lists[-1] if self._lists else [-1]
            if counter[0] >= 0:
                counter[0] += 1
                self.out.append("   " * depth + f"{counter[0]}. ")
            else:
                self.out.append("  " * depth + "- ")
        elif tag == "a":
            href = attr.get("href")
            usable = href and not href.strip().lower().startswith(("javascript:", "#"))
            self._links.append(urljoin(self.base_url, href.strip()) if usable and href else None)
            if self._links[-1]:
                self.out.append("[")
        elif tag == "img":
            alt = (attr.get("alt") or "").strip()
            if alt:
                self.out.append(f"![{alt}]")
        elif tag == "tr":
            self._newlines(1)
            self._cells = 0
        elif tag in ("td", "th"):
            self.out.append("| " if self._cells == 0 else " | ")
            self._cells += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self._skip = max(0, self._skip - 1)
            return
        if self._skip:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") or tag in _BLOCK:
            self._newlines(2)
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            if not "".join(self.out[-1:]).endswith("\n"):
                self.out.append("\n")
            self.out.append("```")
            self._newlines(2)
        elif tag == "code" and not self._pre:
            self.out.append("`")
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("*")
        elif tag == "blockquote" and self._quotes:
            quoted = re.sub(r"\n{3,}", "\n\n", "".join(self.out)).strip()
            self.out = self._quotes.pop()
            self._newlines(2)
            self.out.append("\n".join(f"> {line}" if line else ">" for line in quoted.split("\n")))
            self._newlines(2)
        elif tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            self._newlines(1 if self._lists else 2)
        elif tag == "a" and self._links:
            href = self._links.pop()
            if href:
                self.out.append(f"]({href})")
        elif tag == "tr":
            self.out.append(" |")

    def handle_data(self, data: str) -> None:
        self._emit(data)


def html_to_markdown(html: str, base_url: str) -> tuple[str, str | None]:
    """(Markdown text, page title or None) of an HTML document."""
    converter = _Converter(base_url)
    try:
        converter.feed(html)
        converter.close()
    except (AssertionError, ValueError):  # html.parser's rare hard failures on broken markup
        pass
    while converter._quotes:  # an unclosed <blockquote>: keep its text
        converter.handle_endtag("blockquote")
    text = "".join(converter.out)
    text = re.sub(r"[ \t]+\n", "\n", text)  # trailing spaces
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = re.sub(r"\s+", " ", converter.title).strip() or None
    return text, title
