"""`read`: a window of a text file's numbered lines, and its `read` card.

- Defaults: 2,000 lines from the start; each line cut at 2,000 characters with a visible marker.
- An image (PNG, JPEG, GIF, WebP by name and first bytes, up to 10 MB) is returned as an image block: the
  card shows it, a vision model sees it. Other binary files are reported (BINARY_FILE), never dumped;
  directories, missing files, permission problems and invalid UTF-8 are clear errors.
- Large files are streamed: one pass over fixed 1 MiB chunks counts lines (`bytes.count` is C-fast) and
  finds where the window starts, then only the window is decoded. A window at the end of a 100 MB file
  never holds more than one chunk plus the window.
- With an editor service (`fs_access`), the editor's buffer (unsaved changes included) is what is read.
- The landing rule (`landing`), checked on the opened descriptor: a read the user was asked about reads
  the file its path led to then (its `preview_call` pins it, and changes no card); any other read of a
  path named inside the workspace stays inside it. A link swapped in after the decision redirects nothing.

Must not: load a large file whole, or return undecodable bytes to the model.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from registry_core import (
    ContentBlock,
    FileLocation,
    GenericCallView,
    GenericResultView,
    ImageBlock,
    Output,
    ReadFileLine,
    ReadResultView,
    TextBlock,
    ToolDefinition,
    ToolError,
    ToolExecution,
    ToolResult,
    ToolRunContext,
    define_tool,
)

from .cards import call_paths, failure_card, meta_display, meta_field
from .disk import Landing
from .file_errors import format_size, invalid_utf8, not_text, os_error, with_refusal
from .fs_access import editor_read
from .landing import landing_of, open_regular, open_regular_fd, pin_landing, read_to_end
from .languages import language_of
from .paths import display_path, resolve, session_cwd
from .runtime import check, run_blocking
from .text_encoding import SNIFF_BYTES, decode, detect_encoding, image_type, sniff, trim_partial_utf8

INLINE_MAX_BYTES = 64 * 1024
DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
CHUNK = 1 << 20
WHOLE_FILE_LIMIT = 1 << 20  # smaller files are read at once: simpler, and no slower
UTF16_LIMIT = 64 << 20  # UTF-16 cannot be scanned for b"\n"; such files are decoded whole, up to this
# Images a vision model takes (OpenAI's `image_url`: 20 MB), read whole up to this size.
MAX_IMAGE_BYTES = 10 << 20
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


class ReadArgs(BaseModel):
    file_path: str = Field(description="The file to read: absolute, or relative to the working directory.")
    offset: int | None = Field(
        default=None,
        ge=0,
        description="The 1-based line to start at. Give it only for files too long to read at once.",
    )
    limit: int | None = Field(default=None, ge=1, description="How many lines to read (default 2000).")


class ReadImage(BaseModel):
    mime_type: str
    data: str  # base64
    size: int


class ReadValue(BaseModel):
    path: str
    cwd: str
    offset: int
    lines: list[str]
    total_lines: int
    truncated: bool  # the default window did not reach the end, or a line was cut
    long_lines: int
    lang: str | None
    source: Literal["disk", "editor"]
    image: ReadImage | None = None  # the file is an image: shown on the card, given to a vision model


def _cut(text: str, longer: bool = False) -> tuple[str, bool]:
    """The line as shown: at most MAX_LINE_CHARS characters plus a visible marker when cut."""
    if len(text) <= MAX_LINE_CHARS and not longer:
        return text, False
    return f"{text[:MAX_LINE_CHARS]}… [line cut at {MAX_LINE_CHARS} characters]", True


def _window_of_text(text: str, first: int, limit: int) -> tuple[list[str], int, int]:
    """(window lines, total lines, lines cut) of an in-memory text."""
    raw = text.split("\n")
    if raw[-1] == "":
        raw.pop()
    out, cut = [], 0
    for line in raw[first - 1 : first - 1 + limit]:
        shown, was_cut = _cut(line.removesuffix("\r"))
        out.append(shown)
        cut += was_cut
    return out, len(raw), cut


def _open_fd(path: str, display: str, landing: Landing) -> tuple[int, os.stat_result]:
    try:
        return open_regular_fd(path, display, landing)  # /dev/zero or a FIFO would never end: refused
    except OSError as exc:
        raise os_error(exc, display, "read") from None


def _read_disk(
    fd: int, info: os.stat_result, display: str, first: int, limit: int, stop: threading.Event
) -> tuple[list[str], int, int]:
    """The window of the file open at `fd` (`_open_fd`: checked, `info` its stat), which this closes."""
    with open(fd, "rb") as f:
        head = f.read(SNIFF_BYTES)
        encoding, bom = detect_encoding(head[:4])
        if encoding != "utf-8" or info.st_size <= WHOLE_FILE_LIMIT:
            if info.st_size > UTF16_LIMIT:
                raise ToolError(
                    f"{display} is a UTF-16 file too large to read ({info.st_size} bytes).", code="TOO_LARGE"
                )
            text, _, _ = decode(head + f.read(), display)
            return _window_of_text(text, first, limit)
        kind = sniff(head)
        if kind is not None:
            raise not_text(display, kind, info.st_size)
        # Pass 1: count line breaks; note the byte where line `first` starts.
        f.seek(0)
        buf = bytearray(CHUNK)
        seen = pos = 0
        start = 0 if first == 1 else -1
        last = b"\n"
        while n := f.readinto(buf):
            count = buf.count(b"\n", 0, n)
            if start < 0 and seen + count >= first - 1:
                idx = -1
                for _ in range(first - 1 - seen):
                    idx = buf.find(b"\n", idx + 1, n)
                start = pos + idx + 1
            seen += count
            pos += n
            last = bytes(buf[n - 1 : n])
            check(stop)
        total = seen + (0 if last == b"\n" else 1)
        if start < 0 or first > total:
            return [], total, 0
        # Pass 2: only the window is decoded.
        f.seek(start)
        out, cut = [], 0
        cap = MAX_LINE_CHARS * 4 + 1  # enough bytes for MAX_LINE_CHARS characters of any width
        for number in range(first, min(first + limit, total + 1)):
            raw = f.readline(cap)
            longer = len(raw) == cap and not raw.endswith(b"\n")
            if longer:  # skip the rest of a long line without holding it
                while (more := f.readline(CHUNK)) and not more.endswith(b"\n"):
                    pass
                raw = trim_partial_utf8(raw)
            if number == 1 and bom:
                raw = raw[3:]
            try:
                text = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
            except UnicodeDecodeError as exc:
                raise invalid_utf8(display, raw, exc, number) from None
            shown, was_cut = _cut(text, longer)
            out.append(shown)
            cut += was_cut
        return out, total, cut


def _read_image(path: str, display: str, landing: Landing) -> ReadImage | None:
    """The file as an image when its first bytes say it is one of `IMAGE_TYPES`; None otherwise. Too
    large an image is refused as a binary file is."""
    try:
        f, info = open_regular(path, display, landing)
    except OSError:
        return None  # the text path reports the precise error
    with f:
        head = f.read(16)
        mime = image_type(head)
        if mime is None:
            return None
        if info.st_size > MAX_IMAGE_BYTES:
            raise not_text(display, f"an image too large to show ({mime})", info.st_size)
        data = head + f.read(MAX_IMAGE_BYTES)
    return ReadImage(mime_type=mime, data=base64.b64encode(data).decode("ascii"), size=len(data))


async def _execute(args: ReadArgs, ctx: ToolRunContext) -> ReadValue:
    cwd = session_cwd(ctx.agent)
    path = resolve(args.file_path, cwd)
    display = display_path(path, cwd)
    first = max(args.offset or 1, 1)
    limit = args.limit or DEFAULT_LIMIT
    source: Literal["disk", "editor"] = "disk"
    landing = landing_of(ctx.execution, path)
    if path.lower().endswith(IMAGE_SUFFIXES):
        # An image is read from the disk whatever the editor holds: it is not edited as text.
        image = await run_blocking(lambda _stop: _read_image(path, display, landing))
        if image is not None:
            return ReadValue(path=path, cwd=cwd, offset=1, lines=[], total_lines=0, truncated=False,
                             long_lines=0, lang=None, source="disk", image=image)  # fmt: skip
    editor = await editor_read(ctx.agent, path, display, landing)
    if editor.text is not None:
        source = "editor"
        lines, total, cut = _window_of_text(editor.text, first, limit)
    else:
        try:
            # Opened on the loop (O_NONBLOCK: no open waits), once: its descriptor's size decides. A small
            # file is read inline, a thread hop costing more than the read (measured ~300 us vs ~30 us per
            # call in benchmarks/bridge_bench.py's 200-read turn), and whole, as `_read_disk` reads any file
            # up to WHOLE_FILE_LIMIT, from the bare descriptor. A big file is read from the same descriptor
            # by a worker thread (which runs once submitted, so it always closes it).
            fd, info = _open_fd(path, display, landing)
            if info.st_size <= INLINE_MAX_BYTES:
                try:
                    data = read_to_end(fd, info.st_size)
                finally:
                    os.close(fd)
                text, _, _ = decode(data, display)
                lines, total, cut = _window_of_text(text, first, limit)
            else:
                lines, total, cut = await run_blocking(
                    lambda stop: _read_disk(fd, info, display, first, limit, stop)
                )
        except ToolError as exc:
            raise with_refusal(exc, editor.refusal) from None
    more = first + len(lines) <= total
    return ReadValue(
        path=path,
        cwd=cwd,
        offset=first,
        lines=lines,
        total_lines=total,
        truncated=(more and args.limit is None) or cut > 0,
        long_lines=cut,
        lang=language_of(path),
        source=source,
    )


# The stop flag of an inline read: nothing can stop it (it runs on the loop, between two awaits), and a
# fresh `threading.Event` per call cost ~5% of a 200-read turn.
_NEVER_STOPPED = threading.Event()


def _render(args: ReadArgs, value: ReadValue) -> str | list[ContentBlock]:
    display = display_path(value.path, value.cwd)
    if value.image is not None:
        image = value.image
        return [
            TextBlock(f"{display} is an image ({image.mime_type}, {format_size(image.size)}); it follows."),
            ImageBlock(image.data, image.mime_type),
        ]
    if value.total_lines == 0:
        return f"(The file {display} is empty.)"
    if not value.lines:
        return f"(The file {display} has {value.total_lines} lines; offset {value.offset} is past its end.)"
    body = "\n".join(f"{n:>6}\t{text}" for n, text in enumerate(value.lines, value.offset))
    notes = []
    last = value.offset + len(value.lines) - 1
    if last < value.total_lines:
        notes.append(
            f"(Showing lines {value.offset}-{last} of {value.total_lines}. "
            f"Use offset={last + 1} to read more.)"
        )
    if value.long_lines:
        notes.append(f"({value.long_lines} long line(s) were cut at {MAX_LINE_CHARS} characters.)")
    return body + ("\n\n" + "\n".join(notes) if notes else "")


def _meta(args: ReadArgs, value: ReadValue) -> dict[str, object]:
    if value.image is not None:
        # The bytes are in the result's content (the card shows them from there), not repeated here.
        image = {"mime_type": value.image.mime_type, "size": value.image.size}
        return {"path": value.path, "cwd": value.cwd, "image": image}
    return {
        "path": value.path,
        "cwd": value.cwd,
        "offset": value.offset,
        "lines": value.lines,
        "total_lines": value.total_lines,
        "truncated": value.truncated,
        "lang": value.lang,
        "source": value.source,
    }


def _range(first: int | None, limit: int | None) -> str:
    if first is not None and limit is not None:
        return f" ({first} - {first + limit - 1})"
    if first is not None and first > 1:
        return f" (from line {first})"
    if limit is not None:
        return f" (1 - {limit})"
    return ""


def read_tool(*, cwd: str | None = None) -> ToolDefinition:
    """The `read` tool. `cwd`: the session cwd for call-card titles and locations (display only)."""

    def present_call(args: ReadArgs) -> GenericCallView:
        display, path = call_paths(args.file_path, cwd)
        first = max(args.offset, 1) if args.offset is not None else None
        return GenericCallView(
            title=f"Read {display}{_range(first, args.limit)}",
            kind="read",
            locations=(FileLocation(path=path, line=first or 1),),
        )

    def present_result(args: ReadArgs, result: ToolResult) -> ReadResultView | GenericResultView:
        display = meta_display(result.meta)
        path = meta_field(result.meta, "path", str)
        if not result.is_error and isinstance(result.meta, Mapping) and "image" in result.meta:
            # No structured view: the card shows the result's content, the image included.
            return GenericResultView(title=f"Read {display}")
        raw_lines = result.meta.get("lines") if isinstance(result.meta, Mapping) else None
        lines = raw_lines if isinstance(raw_lines, (tuple, list)) else None
        offset = meta_field(result.meta, "offset", int)
        total = meta_field(result.meta, "total_lines", int)
        if result.is_error or path is None or lines is None or offset is None or total is None:
            return failure_card(f"Read {display or call_paths(args.file_path, cwd)[0]}", result)
        try:
            texts, content = lines, "\n".join(lines)  # raises unless every line is a text
        except TypeError:  # lines logged as other values: shown as their texts
            texts = [str(line) for line in lines]
            content = "\n".join(texts)
        last = offset + len(texts) - 1
        partial = bool(texts) and (offset > 1 or last < total)
        return ReadResultView(
            title=f"Read {display}" + (f" ({offset} - {last})" if partial else ""),
            path=path,
            offset=offset,
            lines=ReadFileLine.window(offset, texts),
            total_lines=total,
            lang=meta_field(result.meta, "lang", str),
            content=content,
            truncated=bool(meta_field(result.meta, "truncated", bool)),
        )

    async def preview_call(args: ReadArgs, execution: ToolExecution) -> None:
        pin_landing(execution, resolve(args.file_path, session_cwd(execution.agent)))

    return define_tool(
        name="read",
        description=(
            "Read a text file. Returns numbered lines (cat -n style), 2000 lines from the start by default; "
            "use offset and limit to read a window of a long file. Lines longer than 2000 characters are "
            "cut. Images (PNG, JPEG, GIF, WebP) are returned as images; other binary files are reported, "
            "not shown. Relative paths are taken from the working directory."
        ),
        parameters=ReadArgs,
        output=Output(type=ReadValue, render=_render, presentation_meta=_meta),
        execute=_execute,
        timeout_ms=60_000,
        concurrency_safe=True,
        present_call=present_call,
        present_result=present_result,
        preview_call=preview_call,
    )
