"""Editor-aware text file access for `read`, `write` and `edit`.

A host (the ACP bridge) may put a `FileAccess` in `agent.services["fs"]`: `read_text(path)` returns the
editor's (possibly unsaved) buffer, or None when the editor has nothing for that path; `write_text(path,
content)` hands the new content to the editor (so the user can review it). Without that service, or when
it has no buffer, files are read from disk; without the service, or when it takes no writes (its
`writes_text` is False: an editor that offers reads only), files are written to disk by the rules below.

The disk path, the default, keeps what a careful editor keeps:
- encoding: UTF-8, UTF-8 with a byte-order mark, UTF-16 with a byte-order mark (the BOM is written back);
  anything else is refused with a clear error rather than guessed (a wrong guess corrupts the file);
- line endings and the final newline: text is never newline-translated, so they survive byte for byte;
- atomicity and mode: a temporary file in the same directory, `os.replace`, the old permission bits;
  writes go through symlinks to their target; a read-only file is refused, not silently replaced;
- staleness: a file that changed on disk between the read and the commit is not overwritten.

Links, and the permission decision (the host judges a path, symlinks resolved, before the call runs; a link
can be swapped in between that decision and the file operation). The landing rule (`disk.Landing`), checked
on what was really opened, whenever the link that changes it appeared:
- a call the user was asked about lands exactly on the file its path led to when the question was asked:
  the host's preview step (`preview_call`, awaited right before asking) pins it (`pin_landing`); any
  other file now is refused (PATH_CHANGED), since the question was about that one;
- a call that ran without a question (a mode or rule allowed it a moment ago): a path named inside the
  session's roots must land inside them (a link that leads out is refused, OUTSIDE_WORKSPACE: the model
  can name the target by its own path, which the policy then asks about); links that stay inside
  (`CLAUDE.md -> AGENTS.md`) and paths named outside (`/tmp` may be a link) are followed.
"Really opened": a read opens the file, then asks the descriptor where it is (`/proc/self/fd/N`, macOS
`F_GETPATH`); a write opens the target's directory the same way before creating anything, creates missing
directories relative to it without following links, and makes its temporary file and the final
`os.replace` relative to that directory descriptor (a rename replaces whatever is at the name, never
follows it; a link found there is refused as PATH_CHANGED). Through the editor's service the editor opens
the file itself: the rule is then checked on the path's links just before the request.
Temporary files are named `.<name>.acp-bridge-tmp-<pid>-<hex>.tmp`, so `remove_stale_temps(root)` (run in
the background when a session starts; bounded, see `disk`) removes those a killed writer left behind.

An editor's refusal: a host's `read_text` raises `EditorReadError(reason)` when the editor answered a read
with an error; the tools read the disk instead (clients report a file they have not open, or a missing
one, as any error), and name the editor's reason when the disk cannot serve the file either. A refused
write is the host's `ToolError`, whose message carries the editor's whole reason.

Invariant: errors are `ToolError`s with a code and a message that tells the model what to do next; no
traceback reaches the model. Nothing here decides policy (roots, approvals) beyond the landing rule.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import difflib
import errno
import io
import logging
import os
import stat
import threading
import weakref
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from registry_core import Agent, ToolError, ToolExecution, ToolExecutionToken

from .disk import (
    CLOEXEC,
    create_temp,
    lstat_at,
    open_directory,
    path_changed,
    real_path_of,
)
from .disk import Landing as Landing
from .disk import remove_stale_temps as remove_stale_temps
from .disk import remove_stale_temps_soon as remove_stale_temps_soon
from .paths import session_roots
from .runtime import Stopped, run_blocking

log = logging.getLogger(__name__)

FS_SERVICE = "fs"
SNIFF_BYTES = 8192


@runtime_checkable
class FileAccess(Protocol):
    """Text file access a host provides (e.g. through the editor). Paths are absolute."""

    async def read_text(self, path: str) -> str | None:
        """The current text of `path` as the editor sees it, or None when the editor has nothing."""
        ...

    async def write_text(self, path: str, content: str) -> None:
        """Replace (or create) `path` with `content`. A host that cannot write (an editor offering reads
        only) sets `writes_text = False` on itself; the tools then write to disk themselves."""
        ...


class EditorReadError(Exception):
    """Raised by a host's `read_text` when the editor answered with an error: the tools read the disk
    instead, and name `reason` (the editor's whole answer) when the disk cannot serve the file either."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def host_writes(access: FileAccess) -> bool:
    """Whether `access` takes writes (`writes_text`, an optional attribute, defaults to yes)."""
    return getattr(access, "writes_text", True) is not False


def file_access_of(agent: Agent | None) -> FileAccess | None:
    """The host's file service, when the agent carries a usable one."""
    if agent is None:
        return None
    service = agent.services.get(FS_SERVICE)
    if service is None:
        return None
    kind = type(service)
    usable = _USABLE_SERVICES.get(kind)
    if usable is None:
        # A runtime Protocol check costs ~15 us on Python 3.11 and every file call makes it: decide once
        # per service class (the protocol's methods are the class's).
        usable = _USABLE_SERVICES[kind] = isinstance(service, FileAccess)
    return service if usable else None


_USABLE_SERVICES: dict[type, bool] = {}


@dataclass(frozen=True, slots=True)
class TextDocument:
    """A text file as loaded: its text exactly (no newline translation) and how to write it back."""

    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    mode: int | None = None  # permission bits of the file on disk
    signature: tuple[int, int] | None = None  # (mtime_ns, size) at read time, for the staleness check
    source: Literal["disk", "editor"] = "disk"


# --- classification and decoding -----------------------------------------------------------------

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x7fELF", "an ELF executable"),
)


_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(head: bytes) -> str | None:
    """The MIME type of an image a model can be shown (PNG, JPEG, GIF, WebP) from its first bytes."""
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def sniff(head: bytes) -> str | None:
    """Describe a non-text file from its first bytes ("a PNG image", "a binary file"), None for text."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None  # UTF-16 text legitimately contains NUL bytes
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "a WebP image"
    if b"\x00" in head:
        return "a binary file"
    return None


def detect_encoding(head: bytes) -> tuple[str, bool]:
    """(codec, has_bom) from the first bytes: a BOM decides, otherwise UTF-8."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", True
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", True
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", True
    return "utf-8", False


def bom_bytes(encoding: str) -> bytes:
    return {"utf-8": codecs.BOM_UTF8, "utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}[
        encoding
    ]


def invalid_utf8(display: str, data: bytes, exc: UnicodeDecodeError, base_line: int = 1) -> ToolError:
    line = base_line + data.count(b"\n", 0, exc.start)
    return ToolError(
        f"{display} is not valid UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}). Only UTF-8 and "
        "UTF-16 files with a byte-order mark are supported; use bash to inspect it (e.g. `file`) or to "
        "convert it (e.g. `iconv -f latin1 -t utf-8`).",
        code="INVALID_UTF8",
    )


def decode(data: bytes, display: str) -> tuple[str, str, bool]:
    """(text, encoding, bom) of a whole file's bytes, or a ToolError for binary / undecodable data."""
    kind = sniff(data[:SNIFF_BYTES])
    encoding, bom = detect_encoding(data[:4])
    if kind is None and not encoding.startswith("utf-16") and b"\x00" in data:
        kind = "a binary file"  # a NUL past the sniffed head still means binary
    if kind is not None:
        raise not_text(display, kind, len(data))
    body = data[len(bom_bytes(encoding)) :] if bom else data
    try:
        return body.decode(encoding), encoding, bom
    except UnicodeDecodeError as exc:
        if encoding != "utf-8":
            raise ToolError(
                f"{display} is not valid {encoding.upper()} text.", code="INVALID_ENCODING"
            ) from None
        raise invalid_utf8(display, body, exc) from None


def trim_partial_utf8(data: bytes) -> bytes:
    """Drop an incomplete multi-byte UTF-8 sequence cut off at the end of `data`."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead (or ASCII) byte: is its sequence complete?
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return data if need <= back else data[:-back]
    return data


def not_text(display: str, kind: str, size: int) -> ToolError:
    return ToolError(
        f"{display} is {kind} ({format_size(size)}), not a text file; it is not shown or edited as text. "
        "Use bash to inspect it (e.g. `file`, `xxd | head`).",
        code="BINARY_FILE",
    )


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def os_error(exc: OSError, display: str, action: str) -> ToolError:
    """A clear ToolError for an OS error on `display` while doing `action` ("read", "write")."""
    if isinstance(exc, FileNotFoundError):
        return ToolError(
            f"File not found: {display}.{_similar(exc.filename)} "
            "Check the path, or use glob to find the file.",
            code="NOT_FOUND",
        )
    if isinstance(exc, IsADirectoryError):
        return is_directory(display)
    if isinstance(exc, PermissionError):
        return ToolError(
            f"Permission denied: cannot {action} {display}. Choose another file or check its permissions.",
            code="PERMISSION_DENIED",
        )
    return ToolError(f"Cannot {action} {display}: {exc.strerror or exc}.", code="IO_ERROR")


def _similar(missing: object) -> str:
    """A hint naming files with similar names next to a missing one (a typo is the usual cause)."""
    if not isinstance(missing, str):
        return ""
    parent, name = os.path.split(missing)
    try:
        with os.scandir(parent or ".") as entries:
            names = [entry.name for _, entry in zip(range(2000), entries, strict=False)]
    except OSError:
        return f" Its directory {parent} does not exist either." if parent else ""
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f" Similar names in that directory: {', '.join(close)}." if close else ""


def not_regular(display: str) -> ToolError:
    return ToolError(
        f"{display} is not a regular file (a device, pipe or socket); it cannot be read or edited as text.",
        code="NOT_A_FILE",
    )


def is_directory(display: str) -> ToolError:
    return ToolError(
        f"{display} is a directory, not a file. Use glob (or bash `ls`) to list it.", code="IS_DIRECTORY"
    )


def uses_crlf(text: str) -> bool:
    """True when most line breaks of `text` are CRLF."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 >= text.count("\n")


# --- load and save -------------------------------------------------------------------------------


def roots_of(agent: Agent | None) -> tuple[str, ...] | None:
    """The roots the landing rule holds a tool to: the session's; None without a session."""
    return session_roots(agent) if agent is not None else None


# What the preview step pinned, per call: the named path → the real file it led to when the user was asked.
# Keyed by the call's token, so a finished call's pins go with it; touched on the event loop only.
_PINNED: weakref.WeakKeyDictionary[ToolExecutionToken, dict[str, str]] = weakref.WeakKeyDictionary()


def pin_landing(execution: ToolExecution, path: str) -> None:
    """Pin the file `path` leads to now as the one the user is asked about for this call (a tool's
    `preview_call` does, which the host awaits right before asking): the body must then land there."""
    _PINNED.setdefault(execution.token, {})[path] = os.path.realpath(path)


def landing_of(execution: ToolExecution | None, path: str) -> Landing:
    """Where a call's file operation on `path` may land: the pinned file, or inside the session's roots."""
    if execution is None:
        return Landing()
    pinned = _PINNED.get(execution.token, {}).get(path)
    return Landing(roots_of(execution.agent), pinned)


def open_regular(
    path: str, display: str, landing: Landing | None = None
) -> tuple[io.BufferedReader, os.stat_result]:
    """Open a regular file for reading; ToolError for a directory, a device or a pipe, and for a file the
    `landing` rule refuses (judged on the opened descriptor).

    O_NONBLOCK: opening a FIFO must not wait for a writer (the thread would hang past any timeout); it
    has no effect on regular files.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise is_directory(display) if stat.S_ISDIR(info.st_mode) else not_regular(display)
        if landing is not None:
            landing.check(path, real_path_of(fd, path, display), display)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb"), info  # `os.fdopen` is a Python wrapper around the same call


def load_from_disk(path: str, display: str, landing: Landing | None = None) -> TextDocument | None:
    """The file's text, or None when it does not exist. Raises ToolError for anything else."""
    try:
        f, info = open_regular(path, display, landing)
        with f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, display, "read") from None
    text, encoding, bom = decode(data, display)
    return TextDocument(
        path, text, encoding, bom, stat.S_IMODE(info.st_mode), (info.st_mtime_ns, info.st_size), "disk"
    )


@dataclass(frozen=True, slots=True)
class EditorRead:
    """What the editor answered for a path: its text, or None; `refusal` is its reason when it answered
    with an error (see `EditorReadError`)."""

    text: str | None
    refusal: str | None = None


async def editor_read(
    agent: Agent | None, path: str, display: str, landing: Landing | None = None
) -> EditorRead:
    """The editor's buffer for `path`, if any (no service, no buffer, or the service failed: a broken
    editor channel must not make a file unreadable, the disk still has it). Raises ToolError when the path
    breaks the `landing` rule (the editor would follow the link)."""
    access = file_access_of(agent)
    if access is None:
        return EditorRead(None)
    if landing is not None:
        landing.check_named(path, display)
    try:
        text = await access.read_text(path)
    except asyncio.CancelledError:
        raise
    except EditorReadError as exc:
        log.debug("the editor refused to read %s (%s); reading the disk instead", path, exc.reason)
        return EditorRead(None, exc.reason)
    except Exception:
        log.warning("editor read of %s failed; reading the disk instead", path, exc_info=True)
        return EditorRead(None)
    return EditorRead(text if isinstance(text, str) else None)


def with_refusal(error: ToolError, refusal: str | None) -> ToolError:
    """`error` of the disk read, with the editor's reason for not serving the file added when it gave one."""
    if refusal is None:
        return error
    return ToolError(
        f"{error.message} The editor could not read it either: {refusal}", code=error.code, meta=error.meta
    )


async def load_document(
    agent: Agent | None, path: str, display: str, landing: Landing | None = None
) -> TextDocument | None:
    """The text a tool should work on: the editor's buffer when it has one, else the disk file. `landing`:
    the call's (`landing_of`); by default the session's roots, unpinned."""
    if landing is None:
        landing = Landing(roots_of(agent))
    read = await editor_read(agent, path, display, landing)
    if read.text is not None:
        return TextDocument(path, read.text, source="editor")
    try:
        doc: TextDocument | None = await run_blocking(lambda _stop: load_from_disk(path, display, landing))
    except ToolError as exc:
        raise with_refusal(exc, read.refusal) from None
    return doc


def _default_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


# Computed once at import: os.umask is process-global and not thread-safe to probe from worker threads.
DEFAULT_FILE_MODE = _default_mode()


def atomic_write(
    path: str,
    data: bytes,
    *,
    mode: int | None,
    signature: tuple[int, int] | None,
    display: str,
    stop: threading.Event | None = None,
    landing: Landing | None = None,
) -> None:
    """Write `data` to `path` atomically (temp file + os.replace), keeping `mode`, creating parents.

    `signature` (from the read) guards against overwriting a file changed since; `stop` (the caller's
    cancellation) is checked just before the commit so a cancelled call never changes the file. `landing`:
    the landing rule (module docstring); the whole commit is relative to the target directory's
    descriptor.
    """
    target = os.path.realpath(path)  # a symlink keeps pointing at the (rewritten) target
    directory, name = os.path.split(target)
    try:
        dir_fd = open_directory(directory, path, name, landing, display)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a directory it created was replaced by a link before it was opened
            raise path_changed(display) from None
        raise os_error(exc, display, "write") from None
    try:
        _commit(dir_fd, name, target, data, mode, signature, display, stop)
    finally:
        os.close(dir_fd)


def _commit(
    dir_fd: int,
    name: str,
    target: str,
    data: bytes,
    mode: int | None,
    signature: tuple[int, int] | None,
    display: str,
    stop: threading.Event | None,
) -> None:
    try:
        existing = lstat_at(name, dir_fd)
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            raise path_changed(display)  # resolved a moment ago, a link now: swapped in meanwhile
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise is_directory(display)
        # No write bit at all is a deliberate "read-only", even for root (who passes os.access):
        # replacing the file would silently defeat it, as `vim :w` without "!" refuses to.
        if existing is not None and (
            not existing.st_mode & 0o222 or not os.access(name, os.W_OK, dir_fd=dir_fd)
        ):
            raise PermissionError(13, "read-only file", target)
        fd, tmp = create_temp(name, dir_fd)
    except OSError as exc:
        raise os_error(exc, display, "write") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode if mode is not None else DEFAULT_FILE_MODE)
        now = lstat_at(name, dir_fd)
        if now is not None and stat.S_ISLNK(now.st_mode):
            raise path_changed(display)
        current = (now.st_mtime_ns, now.st_size) if now is not None else None
        if signature is not None and current != signature:
            raise ToolError(
                f"{display} changed on disk while this call was running; it was not overwritten. "
                "Read it again and retry.",
                code="STALE_FILE",
            )
        if stop is not None and stop.is_set():
            raise Stopped
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        if isinstance(exc, OSError):
            raise os_error(exc, display, "write") from None
        raise


def encode(text: str, encoding: str, bom: bool) -> bytes:
    return (bom_bytes(encoding) if bom else b"") + text.encode(encoding)


async def save_document(
    agent: Agent | None,
    path: str,
    text: str,
    like: TextDocument | None,
    display: str,
    landing: Landing | None = None,
) -> Literal["disk", "editor"]:
    """Write `text` to `path` (through the editor when its service takes writes). Returns "editor" or
    "disk". `landing`: as `load_document`'s.

    `like` is the document the text was derived from: its encoding, BOM, mode and read-time signature are
    kept (a new file is UTF-8 without BOM, with the default mode). When `like` is the editor's buffer
    but the write goes to disk, the disk file's encoding, BOM and mode are kept instead: a buffer has
    none of them, and since the text was derived from the buffer, not from the disk, only a change
    during this write itself can make the disk file stale.
    """
    access = file_access_of(agent)
    if landing is None:
        landing = Landing(roots_of(agent))
    if access is not None and host_writes(access):
        landing.check_named(path, display)
        try:
            await access.write_text(path, text)
        except (asyncio.CancelledError, ToolError):
            raise  # a host's own ToolError already says what went wrong, with its code
        except Exception as exc:
            raise ToolError(
                f"The editor could not write {display}: {exc}", code="EDITOR_WRITE_FAILED"
            ) from exc
        return "editor"
    if like is not None and like.source == "editor":
        like = await run_blocking(lambda _stop: _load_quiet(path, landing))
    encoding = like.encoding if like is not None else "utf-8"
    bom = like.bom if like is not None else False
    mode = like.mode if like is not None else None
    signature = like.signature if like is not None and like.source == "disk" else None
    data = encode(text, encoding, bom)
    await run_blocking(
        lambda stop: atomic_write(
            path, data, mode=mode, signature=signature, display=display, stop=stop, landing=landing
        )
    )
    return "disk"


class DiskFileAccess:
    """The default `FileAccess`: plain files on disk, with the rules of this module."""

    async def read_text(self, path: str) -> str | None:
        doc = await run_blocking(lambda _stop: load_from_disk(path, path))
        return None if doc is None else doc.text

    async def write_text(self, path: str, content: str) -> None:
        doc = await run_blocking(lambda _stop: _load_quiet(path))
        await save_document(None, path, content, doc, path)


def _load_quiet(path: str, landing: Landing | None = None) -> TextDocument | None:
    try:
        return load_from_disk(path, path, landing)
    except ToolError:
        return None
