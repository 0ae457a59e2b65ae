"""Markdown text for cards: fenced and ```console blocks the text cannot close, terminal output cleaned
of ANSI escapes and carriage-return redraws, single-line titles, links and code spans, the `content` text
block, and the explicit markers that cut text in the middle or keep only its tail.

Must not: know paths, cards or the update around a block; these are plain functions of text.
"""

from __future__ import annotations

import re
from typing import Final

from .wire import LIVE_OUTPUT_TAIL_CHARS, MAX_TITLE_CHARS, ContentItem, ToolCallContent

_BACKTICK_RUN: Final = re.compile(r"`+")
_ANSI: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_INFO_STRING_JUNK: Final = re.compile(r"[^\w+#.\-]")


def utf8_len(text: str) -> int:
    # str.isascii() is O(1) in CPython, which keeps the live-output path cheap.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _longest_backtick_run(text: str) -> int:
    if "`" not in text:
        return 0  # the common case, checked at C speed before the regex scan
    return max(len(run) for run in _BACKTICK_RUN.findall(text))


def fence(text: str, info: str = "") -> str:
    """A fenced code block that the text cannot close: the fence is longer than any backtick run."""
    longest = _longest_backtick_run(text)
    ticks = "`" * max(3, longest + 1)
    info = _INFO_STRING_JUNK.sub("", info)[:32]
    body = text if not text or text.endswith("\n") else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}"


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and the tail (both matter for logs and fenced blocks) around an explicit marker."""
    if len(text) <= max_chars:
        return text
    max_chars = max(0, max_chars)
    head = max_chars * 3 // 5
    kept_tail = max_chars - head
    omitted = text[head : len(text) - kept_tail]
    marker = f"\n… (truncated, {utf8_len(omitted)} bytes omitted) …\n"
    return text[:head] + marker + (text[len(text) - kept_tail :] if kept_tail else "")


def tail(text: str, max_chars: int = LIVE_OUTPUT_TAIL_CHARS) -> str:
    """The end of a live output (what a user watching a running command needs) with a marker."""
    if len(text) <= max_chars:
        return text
    cut = len(text) - max_chars
    newline = text.find("\n", cut, cut + 512)
    if newline != -1:
        cut = newline + 1  # start at a line boundary when one is near
    kept = text[cut:]
    # Whole-minus-kept avoids copying the omitted prefix (O(1) sizes for ASCII, the common case).
    omitted = utf8_len(text) - utf8_len(kept)
    return f"(truncated, {omitted} bytes of earlier output omitted)\n" + kept


def console_text(output: str) -> str:
    """Terminal output as a Markdown client can show it: no ANSI escapes, carriage-return redraws
    (progress bars) collapsed to what a terminal would finally show, trailing newlines trimmed."""
    text = _ANSI.sub("", output).replace("\r\n", "\n")
    if "\r" in text:
        lines = []
        for line in text.split("\n"):
            if "\r" in line:
                parts = [part for part in line.split("\r") if part]
                line = parts[-1] if parts else ""
            lines.append(line)
        text = "\n".join(lines)
    return text.rstrip("\n")


def console(command: str | None, output: str | None) -> str:
    """A ```console block: `$ command` (when known) then the output, like a terminal transcript."""
    parts: list[str] = []
    if command is not None and command.strip():
        parts.append("$ " + command.strip("\n"))
    if output:
        parts.append(output)
    return fence("\n".join(parts), "console")


def literal(text: str) -> str:
    """Tool text shown as written: one line stays prose, several lines go in a plain fence so Markdown
    does not reflow or interpret them."""
    stripped = text.strip("\n")
    return fence(stripped) if "\n" in stripped else stripped


def one_line(text: str, limit: int = MAX_TITLE_CHARS) -> tuple[str, bool]:
    """A single-line title and whether it lost information (several lines, or cut)."""
    if "\n" in text or "\r" in text:
        lines = [line.strip() for line in re.split(r"\r\n|\r|\n", text.strip())]
        lines = [line for line in lines if line]
        one = " ↵ ".join(lines)
        lossy = len(lines) > 1
    else:  # the usual title: one line already (every call card asks, live and replayed)
        one, lossy = text.strip(), False
    if len(one) > limit:
        one = one[: limit - 1].rstrip() + "…"
        lossy = True
    return one, lossy


def link(url: str, label: str | None = None) -> str:
    safe = re.fullmatch(r"[^\s<>]+", url) is not None
    if label:
        label = label.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
        return f"[{label}](<{url}>)" if safe else f"{label} ({inline_code(url)})"
    return f"<{url}>" if safe else inline_code(url)


def inline_code(text: str) -> str:
    ticks = "`" * (_longest_backtick_run(text) + 1)
    # CommonMark strips one space on each side, which lets a code span start or end with a backtick.
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def text_block(text: str) -> ContentItem:
    """A tool call content block showing `text` (Markdown)."""
    return {"type": "content", "content": {"type": "text", "text": text}}


def block_text(block: ToolCallContent) -> str:
    """The text a content block shows ("" for diffs, terminals and images)."""
    if block["type"] == "content" and block["content"]["type"] == "text":
        return block["content"]["text"]
    return ""
