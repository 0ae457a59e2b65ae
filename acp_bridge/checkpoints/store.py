"""The shadow git store of one root: snapshots of the root's files, kept outside it.

A snapshot is a git tree written into a private repository under the state directory
(`<state>/checkpoints/roots/<hash of the root>/`), run as `git --git-dir=<store> --work-tree=<root>` with
the store's own index. Git's index keeps each file's stat data, so a snapshot of a tree where one file
changed costs a walk of stats (what `git status` costs) plus hashing the changed file: `ls-files` lists the
modified, deleted and new (not ignored) paths, Python drops those past `MAX_FILE_BYTES` (and protected ones),
`update-index` hashes the rest, `write-tree` writes the tree (its cache-tree makes that cheap). The index
is split (`core.splitIndex`), so those two rewrite only the entries that changed. Where the kernel can
tell what changed (`watch.TreeWatch`, Linux inotify), `ls-files` looks only at the paths it names, so a
snapshot costs a few small git processes instead of a walk; a snapshot where nothing changed costs none.

What a snapshot holds: every file of the root git would add, `.gitignore` files respected (git reads them
in any work tree, a repository or not), minus the protected paths (`permissions.protected_paths`: a rewind
never writes a file that makes later commands run code) and files over `MAX_FILE_BYTES`. A nested
repository (a directory with its own `.git`) is skipped as a whole. The user's own repository is never
touched: git is run with a clean environment (no `GIT_*` variable of the user's, no global or system
config), its own `--git-dir`, and `.git` paths are never added.

Must not: write inside the root except when restoring a file on request (`restore`), or run git on the
event loop (callers run these functions in a worker thread).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from acp_bridge.checkpoints.watch import TreeWatch
from acp_bridge.permissions.protected_paths import protected_reason

log = logging.getLogger(__name__)

# Files past this size are not recorded: neither shown as a diff nor restored by a rewind.
MAX_FILE_BYTES = 2 * 1024 * 1024
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class StoreError(Exception):
    """Git failed (or is missing): the message says why."""


def _git_env() -> dict[str, str]:
    """The environment git runs with: the process's, without any `GIT_*` variable (a user's `GIT_DIR` or
    `GIT_INDEX_FILE` would point our commands at their repository), with no system or global config (a
    user's `core.fsmonitor` or hooks must not run from here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        LC_ALL="C",
    )
    return env


_ENV = _git_env()


def root_key(root: str) -> str:
    """The store directory name of a root: a hash of its normalised absolute path."""
    return hashlib.sha256(os.path.normpath(root).encode()).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class TreeChange:
    """One path that differs between two snapshots: `old`/`new` blob ids, None where absent."""

    path: str  # relative to the root, `/`-separated
    old: str | None
    new: str | None


class ShadowStore:
    """The snapshots of one root. Thread-safe: one snapshot at a time per store."""

    def __init__(self, root: str, git_dir: Path) -> None:
        self.root = os.path.normpath(root)
        self.git_dir = git_dir
        self._lock = threading.Lock()
        self._ready = False
        self._last_tree: str | None = None  # the index's tree, while nothing changed since
        self._watch: TreeWatch | None = None
        self._watching = True  # False once a watch could not start: the tree is walked from then on

    def _git(self, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
        cmd = [
            "git", f"--git-dir={self.git_dir}", f"--work-tree={self.root}",
            "-c", "core.quotepath=off", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false",
            "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0",
            *args,
        ]  # fmt: skip
        try:
            done = subprocess.run(
                cmd, input=stdin, capture_output=True, env=_ENV, cwd=self.root, check=False, timeout=120
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise StoreError(f"git could not run: {exc}") from exc
        if check and done.returncode != 0:
            raise StoreError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()[:500]}")
        return done.stdout

    def _prepare(self) -> None:
        if self._ready:
            return
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "init", "-q", "--bare", str(self.git_dir)],
                env=_ENV, capture_output=True, check=True, timeout=60,
            )  # fmt: skip
            self._git("config", "core.bare", "false")
            self._git("config", "core.untrackedCache", "true")
            self._git("config", "index.version", "4")
            # A split index writes only what changed since its shared part: update-index and write-tree
            # rewrite a few entries, not the 30,000 of a big tree (measured: 1.32x -> 1.19x `git status`).
            self._git("config", "core.splitIndex", "true")
            (self.git_dir / "acp-bridge-root").write_text(self.root + "\n")
        self._ready = True

    def snapshot(self) -> str:
        """Record the root's files as they are now; the tree id. Raises StoreError."""
        with self._lock:
            try:
                return self._snapshot()
            except BaseException:
                self._drop_watch()  # what it named is consumed: the next snapshot must look at everything
                raise

    def _drop_watch(self) -> None:
        """Close the watch (under the store's lock); the next snapshot walks the tree and starts another."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        with _watched_lock:
            _watched.pop(self, None)

    def _snapshot(self) -> str:
        self._prepare()
        if not os.path.isdir(self.root):
            return EMPTY_TREE
        named = self._changed_paths()
        if named is not None and not named and self._last_tree is not None:
            return self._last_tree  # the kernel saw nothing change: the index's tree is as it was
        listing = ["ls-files", "-z", "-t", "-m", "-d", "-o", "--exclude-standard"]
        if named is not None and self._last_tree is not None:
            listing += ["--", *(f":(literal){p}" for p in sorted(named))]
        listed = self._git(*listing)
        keep: set[str] = set()
        drop: set[str] = set()  # recorded before, not any more (too large now, or protected)
        for line in listed.decode("utf-8", "surrogateescape").split("\0"):
            tag, _, path = line.partition(" ")
            if not path:
                continue
            if _recordable(self.root, path):
                keep.add(path)
            elif tag != "?":
                drop.add(path)
        if not keep and not drop and self._last_tree is not None:
            return self._last_tree  # nothing changed: the index, and so its tree, is as it was
        if keep or drop:
            if keep:
                self._git(
                    "update-index", "--add", "--remove", "-z", "--stdin",
                    stdin=_z(sorted(keep)),
                )  # fmt: skip
            if drop:
                # Tracked earlier and now too large, or protected: no longer recorded.
                self._git(
                    "update-index", "--force-remove", "-z", "--stdin", stdin=_z(sorted(drop)), check=False
                )
        self._last_tree = self._git("write-tree").decode().strip()
        return self._last_tree

    def _changed_paths(self) -> set[str] | None:
        """The paths the watch saw change since the last snapshot, or None: look at the whole tree (no
        watch yet, or it could not follow). A new watch starts before that look, so what changes during
        it is seen by the next snapshot."""
        if self._watch is not None:
            named = self._watch.changed()
            if named is not None:
                with _watched_lock:
                    _watched.move_to_end(self)
                return named
            self._drop_watch()
        if self._watching and _make_room(self):
            self._watch = TreeWatch.start(self.root, self._ignored_dirs())
            self._watching = self._watch is not None
            if self._watch is not None:
                with _watched_lock:
                    _watched[self] = None
        return None

    def _ignored_dirs(self) -> list[str]:
        """The folders git ignores (not watched: a `node_modules` would take thousands of watches).
        `ls-files --directory` also names a folder whose files are all ignored (`*.log`), whose new files
        may not be: `check-ignore` keeps the folders a pattern matches themselves."""
        out = self._git("ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory", check=False)
        folders = [p for p in out.split(b"\0") if p.endswith(b"/")]
        if not folders:
            return []
        out = self._git(
            "check-ignore", "-z", "--stdin", "--no-index", stdin=b"\0".join(folders) + b"\0", check=False
        )
        return [p.rstrip("/") for p in out.decode("utf-8", "surrogateescape").split("\0") if p]

    def changes(self, old_tree: str, new_tree: str) -> list[TreeChange]:
        """The paths that differ between two snapshots, sorted."""
        if old_tree == new_tree:
            return []
        with self._lock:
            self._prepare()
            raw = self._git("diff-tree", "-r", "-z", "--no-renames", "--raw", old_tree, new_tree)
        return _parse_raw(raw)

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The contents of blobs, by id (one `cat-file --batch`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        with self._lock:
            out = self._git("cat-file", "--batch", stdin="".join(f"{i}\n" for i in wanted).encode())
        result: dict[str, bytes] = {}
        at = 0
        for blob in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if len(header) < 3:
                at = end + 1
                continue
            size = int(header[2])
            result[blob] = out[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
        return result

    def blob_at(self, tree: str, path: str) -> str | None:
        """The blob id of `path` in `tree`, None when absent."""
        with self._lock:
            out = self._git("ls-tree", "-z", tree, "--", path)
        for entry in out.split(b"\0"):
            if entry:
                meta, _, name = entry.partition(b"\t")
                if name.decode("utf-8", "surrogateescape") == path:
                    return meta.split()[2].decode()
        return None

    def blob_of_file(self, path: str) -> str | None:
        """The blob id the file at `path` (relative) has on disk now, None when it does not exist (or is
        not a regular file)."""
        full = os.path.join(self.root, path)
        if not os.path.isfile(full) or os.path.islink(full):
            return None
        with self._lock:
            return self._git("hash-object", "--no-filters", "--", full).decode().strip()

    def restore(self, path: str, blob: str | None) -> None:
        """Put `path` (relative) back to `blob`'s content, or remove it when `blob` is None. The write is
        atomic (a temporary file beside it, renamed over it); a removed file's emptied directories stay."""
        full = os.path.join(self.root, path)
        if blob is None:
            try:
                os.unlink(full)
            except FileNotFoundError:
                pass
            return
        content = self.blobs([blob]).get(blob)
        if content is None:
            raise StoreError(f"the checkpoint of {path} is missing from the store")
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        mode = os.stat(full).st_mode & 0o7777 if os.path.exists(full) else 0o644
        tmp = f"{full}.acp-bridge-restore-{os.getpid()}"
        with open(tmp, "wb") as handle:
            handle.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, full)

    def keep_only(self, trees: list[str]) -> None:
        """Keep the objects of `trees` (one tree object lists them all, under one ref) and let `git gc`
        drop the rest, except objects younger than an hour (a snapshot being taken right now)."""
        with self._lock:
            self._prepare()
            listing = "".join(f"040000 tree {tree}\t{k}\n" for k, tree in enumerate(trees))
            keep = self._git("mktree", "--missing", stdin=listing.encode()).decode().strip()
            self._git("update-ref", "refs/acp-bridge/keep", keep)
            self._git("gc", "--quiet", "--prune=1.hour.ago", check=False)


# The stores whose watch is open, least recently used first. Each watch is an inotify instance, and a user
# has 128 of them (`fs.inotify.max_user_instances`) for every program: a bridge that served sessions in
# many folders keeps watches for the `MAX_WATCHED_ROOTS` it used last, and walks the others' trees.
MAX_WATCHED_ROOTS = 8
_watched: OrderedDict[ShadowStore, None] = OrderedDict()
_watched_lock = threading.Lock()


def _make_room(store: ShadowStore) -> bool:
    """Whether `store` (its lock held) may open a watch: yes below the bound, or once the least recently
    used store that is not busy right now closed its own (its lock taken without waiting: two stores
    making room at once never wait on each other)."""
    with _watched_lock:
        if len(_watched) < MAX_WATCHED_ROOTS:
            return True
        candidates = [s for s in _watched if s is not store]
    for victim in candidates:
        if victim._lock.acquire(blocking=False):
            try:
                victim._drop_watch()
            finally:
                victim._lock.release()
            return True
    return False


def _z(paths: Iterable[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def _recordable(root: str, rel: str) -> bool:
    """Whether a listed path goes into a snapshot: not protected, not a nested repository, not too large
    (a path that no longer exists is recorded: as deleted)."""
    if rel.endswith("/") or protected_reason(rel) is not None:
        return False
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:
        return True
    return not stat.S_ISLNK(st.st_mode) and st.st_size <= MAX_FILE_BYTES


def _parse_raw(raw: bytes) -> list[TreeChange]:
    """`diff-tree --raw -z`: ":old_mode new_mode old new status\\0path\\0" per change."""
    parts = raw.split(b"\0")
    out: list[TreeChange] = []
    for k in range(0, len(parts) - 1, 2):
        meta = parts[k].decode()
        if not meta.startswith(":"):
            continue
        fields = meta[1:].split()
        old, new = fields[2], fields[3]
        zero = "0" * len(old)
        out.append(
            TreeChange(
                parts[k + 1].decode("utf-8", "surrogateescape"),
                None if old == zero else old,
                None if new == zero else new,
            )
        )
    return sorted(out, key=lambda c: c.path)
