"""Project instructions: which `AGENTS.md` files a session follows, read from disk within bounds.

Where they come from (docs/instructions.md is the user's account of it; the format is agents.md's, a plain
Markdown file):
- the user's own, for every project: `AGENTS.md` in the user's config folder (`credentials.config_dir()`:
  `$XDG_CONFIG_HOME/acp-bridge`, else `~/.config/acp-bridge`);
- each root of the session (its cwd, then its additional directories): the root's `AGENTS.md`;
- a folder below a root with its own file: read when the agent works there (`nested_files`), and given to
  the model as a message then (`prompt_context`).
In each folder one file is used: `AGENTS.md`, else the first of `ALTERNATIVES` there (`CLAUDE.md`,
`GEMINI.md`, `.github/copilot-instructions.md`), and the file says which it is (`InstructionFile.name`).

Bounds: a file gives at most `MAX_FILE_BYTES` (32 KiB) and the files of the system prompt together at most
`MAX_TOTAL_BYTES` (64 KiB); a file cut short ends with a note saying how big it is and that the rest can be
read; a file that no longer fits is named, not included. A project file is read only when it is a regular
file whose real path (symbolic links followed) is inside one of the session's roots: a link to a file
elsewhere (`~/.ssh/...`) is named and skipped, since what is read here goes to the model without any
permission question. The user's own file may link anywhere (it is theirs). A file is opened without
blocking and checked to be a regular file once open, so a FIFO named `AGENTS.md` cannot hang the read.

`Stamp` (modification time, size, inode) tells when a file changed, so a session re-reads its files between
turns only when one did (`changes` says what changed, for the user and the model).

Must not: run on the event loop (every function here touches the disk: callers run them in a worker
thread), raise for a file it cannot read (it is reported and skipped), or read outside the roots but the
user's own file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from acp_bridge.common.credentials import config_dir

PRIMARY = "AGENTS.md"
ALTERNATIVES = ("CLAUDE.md", "GEMINI.md", os.path.join(".github", "copilot-instructions.md"))
MAX_FILE_BYTES = 32 * 1024
MAX_TOTAL_BYTES = 64 * 1024

Scope = Literal["user", "root", "folder"]
Stamp = tuple[int, int, int]  # (st_mtime_ns, st_size, st_ino): an atomic replace changes the inode


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One file read. `folder` is the folder it applies to (None for the user's own, which applies
    everywhere); `text` is what the model gets (cut at the bounds, with a note); `skipped` says why a file
    found was not read (then `text` is empty)."""

    path: str
    scope: Scope
    folder: str | None
    text: str
    size: int
    stamp: Stamp | None
    truncated: bool = False
    skipped: str | None = None

    @property
    def name(self) -> str:
        """The file's name relative to its folder (`AGENTS.md`, `CLAUDE.md`, `.github/copilot-...`)."""
        if self.folder is None:
            return os.path.basename(self.path)
        return os.path.relpath(self.path, self.folder)

    @property
    def alternative(self) -> bool:
        """Read because its folder has no `AGENTS.md`."""
        return self.name != PRIMARY


def user_file() -> str:
    return str(config_dir() / PRIMARY)


def find_in_folder(folder: str) -> str | None:
    """The instructions file of `folder`: `AGENTS.md`, else the first alternative present."""
    for name in (PRIMARY, *ALTERNATIVES):
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    return None


def stamp_of(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _inside(real: str, real_roots: Sequence[str]) -> bool:
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in real_roots)


def read_file(
    path: str,
    scope: Scope,
    folder: str | None,
    *,
    real_roots: Sequence[str] | None,
    budget: int = MAX_FILE_BYTES,
) -> InstructionFile:
    """Read one instructions file within `budget` bytes (at most `MAX_FILE_BYTES`). `real_roots`: the real
    paths the file must resolve inside (None: anywhere, for the user's own file)."""
    budget = max(0, min(budget, MAX_FILE_BYTES))

    def skipped(why: str, size: int = 0) -> InstructionFile:
        # Stamped as `session_stamps` stamps it, so a file skipped stays unchanged until it changes.
        return InstructionFile(path, scope, folder, "", size, stamp_of(path), skipped=why)

    try:
        real = os.path.realpath(path)
        if real_roots is not None and not _inside(real, real_roots):
            return skipped(f"it links to {real}, outside the workspace")
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as exc:
        return skipped(f"it could not be opened ({getattr(exc, 'strerror', None) or exc})")
    try:
        st = os.fstat(fd)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if not stat.S_ISREG(st.st_mode):
            return skipped("it is not a regular file")
        if budget == 0:
            return skipped(f"the {MAX_TOTAL_BYTES // 1024} KiB for instructions were used up", st.st_size)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(budget + 1)
    except OSError as exc:
        return skipped(f"it could not be read ({exc.strerror or exc})")
    finally:
        os.close(fd)
    truncated = len(data) > budget
    text = _decode(data[:budget] if truncated else data)
    if truncated:
        text = _cut_at_line(text) + (
            f"\n\n[This file is {st.st_size:,} bytes; only its first {budget // 1024} KiB are included here. "
            f"Read {path} for the rest.]"
        )
    return InstructionFile(path, scope, folder, text, st.st_size, stamp, truncated=truncated)


def _decode(data: bytes) -> str:
    # A cut may split a character: its start is dropped ("ignore" at the end only matters there).
    text = data.decode("utf-8", "ignore" if data and data[-1] >= 0x80 else "replace")
    return text.removeprefix("\ufeff").strip("\n")


def _cut_at_line(text: str) -> str:
    """Cut back to the last complete line, unless that would drop most of the text."""
    end = text.rfind("\n")
    return text[:end] if end > len(text) // 2 else text


def session_files(roots: Sequence[str], *, include_user: bool = True) -> tuple[InstructionFile, ...]:
    """The files of the system prompt: the user's own, then each root's, within `MAX_TOTAL_BYTES`."""
    real_roots = [os.path.realpath(root) for root in roots]
    found: list[tuple[str, Scope, str | None, Sequence[str] | None]] = []
    if include_user:
        mine = user_file()
        if os.path.isfile(mine):
            found.append((mine, "user", None, None))
    for root in roots:
        path = find_in_folder(root)
        if path is not None:
            found.append((path, "root", root, real_roots))
    files: list[InstructionFile] = []
    left = MAX_TOTAL_BYTES
    for path, scope, folder, allowed in found:
        read = read_file(path, scope, folder, real_roots=allowed, budget=left)
        left -= len(read.text.encode())
        files.append(read)
    return tuple(files)


def session_stamps(
    roots: Sequence[str], *, include_user: bool = True
) -> tuple[tuple[str, Stamp | None], ...]:
    """What `session_files` would read now, as (path, stamp) pairs: equal pairs mean nothing changed."""
    paths: list[str] = []
    if include_user and os.path.isfile(user_file()):
        paths.append(user_file())
    paths.extend(path for path in (find_in_folder(root) for root in roots) if path is not None)
    return tuple((path, stamp_of(path)) for path in paths)


def stamps(files: Iterable[InstructionFile]) -> tuple[tuple[str, Stamp | None], ...]:
    return tuple((f.path, f.stamp) for f in files)


def changes(before: Sequence[InstructionFile], after: Sequence[InstructionFile]) -> list[str]:
    """What changed between two readings, one line a file: "`/ws/AGENTS.md` changed", "... is new",
    "... was removed"."""
    old = {f.path: f for f in before}
    new = {f.path: f for f in after}
    lines: list[str] = []
    for path, file in new.items():
        if path not in old:
            lines.append(f"`{path}` is new")
        elif old[path].stamp != file.stamp:
            lines.append(f"`{path}` changed")
    lines.extend(f"`{path}` was removed" for path in old if path not in new)
    return lines


def root_of(path: str, roots: Sequence[str]) -> str | None:
    """The root `path` (absolute, normalised) lies below or at; the deepest when roots nest."""
    best: str | None = None
    for root in roots:
        inside = path == root or path.startswith(root.rstrip(os.sep) + os.sep)
        if inside and (best is None or len(root) > len(best)):
            best = root
    return best


def folders_between(path: str, roots: Sequence[str], *, itself: bool) -> list[str]:
    """The folders strictly below `path`'s root down to `path` (`itself`: `path` may be a folder, else
    its parent), outermost first; none when `path` is outside every root. Lexical: no disk access (a
    `path` that is no folder simply has no instructions file in it)."""
    path = os.path.normpath(path)
    root = root_of(path, roots)
    if root is None:
        return []
    folder = path if itself else os.path.dirname(path)
    below = root.rstrip(os.sep) + os.sep
    chain: list[str] = []
    while folder.startswith(below) and len(folder) > len(below):
        chain.append(folder)
        folder = os.path.dirname(folder)
    chain.reverse()
    return chain


def nested_files(
    folders: Iterable[str], roots: Sequence[str], known: dict[str, Stamp | None], budget: int
) -> list[InstructionFile]:
    """The instructions files of `folders` (below the roots, outermost first) not in `known` (path → the
    stamp it had when given) or changed since, within `budget` bytes."""
    real_roots = [os.path.realpath(root) for root in roots]
    out: list[InstructionFile] = []
    for folder in folders:
        found = find_in_folder(folder)
        if found is None or (found in known and known[found] == stamp_of(found)):
            continue
        read = read_file(found, "folder", folder, real_roots=real_roots, budget=budget)
        budget -= len(read.text.encode())
        out.append(read)
    return out


def display(path: str, roots: Sequence[str]) -> str:
    """`path` as the user reads it: relative to its root when inside one (with the root's name for a
    root other than the first), else absolute; `~` for the home folder."""
    root = root_of(path, roots)
    if root is not None and roots:
        rel = os.path.relpath(path, root)
        return rel if root == roots[0] else os.path.join(os.path.basename(root), rel)
    home = str(Path.home())
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path
