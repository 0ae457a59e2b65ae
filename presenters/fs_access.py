"""Editor-aware text file access for `read`, `write` and `edit`: a text file loaded and saved, through the
editor or the disk.

A host (the ACP bridge) may put a `FileAccess` in `agent.services["fs"]`: `read_text(path)` returns the
editor's (possibly unsaved) buffer, or None when the editor has nothing for that path; `write_text(path,
content)` hands the new content to the editor (so the user can review it). Without that service, or when
it has no buffer, files are read from disk; without the service, or when it takes no writes (its
`writes_text` is False: an editor that offers reads only), files are written to disk by the rules below.

The disk path, the default, keeps what a careful editor keeps:
- encoding: UTF-8, UTF-8 with a byte-order mark, UTF-16 with a byte-order mark (the BOM is written back);
  anything else is refused with a clear error rather than guessed (`text_encoding`);
- line endings and the final newline: text is never newline-translated, so they survive byte for byte;
- atomicity and mode: a temporary file in the same directory, `os.replace`, the old permission bits;
  writes go through symlinks to their target; a read-only file is refused, not silently replaced;
- staleness: a file that changed on disk between the read and the commit is not overwritten;
- links: every load and save here obeys the landing rule (`landing`), on what was really opened: a write
  opens the target's directory before creating anything, creates missing directories relative to it
  without following links, and makes its temporary file and the final `os.replace` relative to that
  directory descriptor (a rename replaces whatever is at the name, never follows it; a link found there
  is refused as PATH_CHANGED).
Temporary files are named `.<name>.acp-bridge-tmp-<pid>-<hex>.tmp`, so `disk.remove_stale_temps(root)`
(run in the background when a session starts; bounded) removes those a killed writer left behind.

An editor's refusal: a host's `read_text` raises `EditorReadError(reason)` when the editor answered a read
with an error; the tools read the disk instead (clients report a file they have not open, or a missing
one, as any error), and name the editor's reason when the disk cannot serve the file either. A refused
write is the host's `ToolError`, whose message carries the editor's whole reason.

Invariant: errors are `ToolError`s with a code and a message that tells the model what to do next
(`file_errors`); no traceback reaches the model. Nothing here decides policy (roots, approvals) beyond the
landing rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from registry_core import Agent, ToolError

from .disk import Landing, create_temp, lstat_at, open_directory, path_changed
from .file_errors import is_directory, os_error, with_refusal
from .landing import open_regular, roots_of
from .runtime import Stopped, run_blocking
from .text_encoding import decode, encode

log = logging.getLogger(__name__)

FS_SERVICE = "fs"


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


async def load_document(
    agent: Agent | None, path: str, display: str, landing: Landing | None = None
) -> TextDocument | None:
    """The text a tool should work on: the editor's buffer when it has one, else the disk file. `landing`:
    the call's (`landing_of`); by default the session's roots, unpinned."""
    if landing is None:
        landing = Landing(roots_of(agent))
    read = await editor_read(agent, path, display, landing)
    if read.text is not None:
        text = read.text
        if text and not text.endswith("\n"):
            text += await run_blocking(lambda _stop: _final_newline_on_disk(path, landing))
        return TextDocument(path, text, source="editor")
    try:
        doc: TextDocument | None = await run_blocking(lambda _stop: load_from_disk(path, display, landing))
    except ToolError as exc:
        raise with_refusal(exc, read.refusal) from None
    return doc


def _final_newline_on_disk(path: str, landing: Landing) -> str:
    """The line ending that ends the file on disk ("\\n", "\\r\\n"), or "" (none, or no readable file).

    An editor that keeps a buffer as lines (Neovim's, so its ACP plugins' `fs/read_text_file`, e.g.
    agentic.nvim) answers the text without the final newline, which it keeps as a flag and writes back
    on save; an edit made on that text and written back would drop the file's final newline. The disk
    file's own final newline is put back instead (an editor buffer that really lost it, unsaved, gets it
    back: the lesser harm)."""
    doc = _load_quiet(path, landing)
    if doc is None:
        return ""
    if doc.text.endswith("\r\n"):
        return "\r\n"
    return "\n" if doc.text.endswith("\n") else ""


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
    on_replaced: Callable[[], None] | None = None,
) -> None:
    """Write `data` to `path` atomically (temp file + os.replace), keeping `mode`, creating parents.

    `signature` (from the read) guards against overwriting a file changed since; `stop` (the caller's
    cancellation) is checked just before the commit so a cancelled call never changes the file. `landing`:
    the landing rule (module docstring); the whole commit is relative to the target directory's
    descriptor. `on_replaced` runs right after the rename, in this thread (see `save_document`).
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
        if on_replaced is not None:
            on_replaced()  # before anything else, the closing of the directory included
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


async def save_document(
    agent: Agent | None,
    path: str,
    text: str,
    like: TextDocument | None,
    display: str,
    landing: Landing | None = None,
    on_saved: Callable[[Literal["disk", "editor"]], None] | None = None,
) -> Literal["disk", "editor"]:
    """Write `text` to `path` (through the editor when its service takes writes). Returns "editor" or
    "disk". `landing`: as `load_document`'s.

    `on_saved(source)` runs the moment the change is made, before this coroutine resumes: on disk, in
    the worker thread right after the rename, so a record of the change (`changes.report_commit`) is
    written a few instructions after it, not an event-loop iteration later, where a `kill -9` could
    land between the two; through the editor, when its write is answered. It must not raise.

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
        if on_saved is not None:
            on_saved("editor")
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
            path,
            data,
            mode=mode,
            signature=signature,
            display=display,
            stop=stop,
            landing=landing,
            on_replaced=None if on_saved is None else lambda: on_saved("disk"),
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
