"""The file tools' errors as the model reads them: each a `ToolError` with a code and a message that says
what went wrong in the model's terms and what to do next (another tool, another path, a conversion).

`os_error` turns an `OSError` into one (NOT_FOUND, with similar names next to a missing file;
IS_DIRECTORY; PERMISSION_DENIED; IO_ERROR); `not_text` (BINARY_FILE), `invalid_utf8` (INVALID_UTF8),
`not_regular` (NOT_A_FILE) and `is_directory` (IS_DIRECTORY) name a file that cannot be handled as text;
`with_refusal` adds the editor's reason for not serving a file to the disk's error; `format_size` says a
size as these messages do.

Must not: raise, or touch the disk beyond listing the directory of a missing file (at most
`SIMILAR_SCAN` names) for similar names.
"""

from __future__ import annotations

import difflib
import os

from registry_core import ToolError

SIMILAR_SCAN = 2000  # directory entries looked at for names like a missing file's


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def invalid_utf8(display: str, data: bytes, exc: UnicodeDecodeError, base_line: int = 1) -> ToolError:
    line = base_line + data.count(b"\n", 0, exc.start)
    return ToolError(
        f"{display} is not valid UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}). Only UTF-8 and "
        "UTF-16 files with a byte-order mark are supported; use bash to inspect it (e.g. `file`) or to "
        "convert it (e.g. `iconv -f latin1 -t utf-8`).",
        code="INVALID_UTF8",
    )


def not_text(display: str, kind: str, size: int) -> ToolError:
    return ToolError(
        f"{display} is {kind} ({format_size(size)}), not a text file; it is not shown or edited as text. "
        "Use bash to inspect it (e.g. `file`, `xxd | head`).",
        code="BINARY_FILE",
    )


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
            names = [entry.name for _, entry in zip(range(SIMILAR_SCAN), entries, strict=False)]
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


def with_refusal(error: ToolError, refusal: str | None) -> ToolError:
    """`error` of the disk read, with the editor's reason for not serving the file added when it gave one."""
    if refusal is None:
        return error
    return ToolError(
        f"{error.message} The editor could not read it either: {refusal}", code=error.code, meta=error.meta
    )
