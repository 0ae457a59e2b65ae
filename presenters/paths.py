"""Path rules shared by every built-in tool, the bridge's permission policy and its card mapping: resolution,
display, and the workspace-roots test. The one implementation of each (`acp_bridge.mapping.paths` and
`acp_bridge.permissions.call_facts` call these).

- `resolve(path, cwd)`: a model-supplied path made absolute against the session cwd (`~` expanded,
  normalised, symlinks NOT resolved: the path the model named is the path the cards show).
- `display_path(path, cwd)`: relative to the cwd when inside it, absolute otherwise. "Inside" is decided by
  path *segments* (`relative_inside`): `..cache/x` is inside (its first segment is `..cache`, not `..`),
  `../x` is not.
- `locate(path, roots)`: where a path lands, symlinks below its root followed: its real path and that path
  relative to the real root holding it (what the permission policy judges), or None when it lands outside
  every root. A path spelled outside every root is outside without touching the disk; inside, only the
  components below the root are checked for links. `is_inside_roots` is `locate(...) is not None`.

Invariant: pure string and filesystem-metadata logic; nothing here reads file contents or raises for a
missing file, and `resolve`, `relative_inside` and `display_path` touch no file at all. `locate` raises
ValueError for a path no file can have (a NUL byte, an unencodable character): callers judge that first.
Titles are the only place a relative path may appear (ACP §9: the wire carries absolute paths).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Sequence
from typing import NamedTuple

from registry_core import Agent


def session_cwd(agent: Agent | None) -> str:
    """The cwd a call runs in: the agent's (absolute by contract), else the process cwd."""
    if agent is not None and agent.cwd:
        cwd = agent.cwd
        return _normal(cwd) if os.path.isabs(cwd) else os.path.abspath(cwd)
    return os.getcwd()


def session_roots(agent: Agent | None) -> tuple[str, ...]:
    """The directories a call may touch without asking: the agent's roots, else its cwd alone."""
    if agent is not None and agent.roots:
        roots = agent.roots
        if all(os.path.isabs(root) for root in roots):
            return _normals(tuple(roots))
        return tuple(os.path.abspath(root) for root in roots)
    return (session_cwd(agent),)


# Cached: asked several times per call with the session's same absolute paths, and for those `abspath` is
# a pure function of the string (a relative one would depend on the process cwd: not cached).
@functools.lru_cache(maxsize=64)
def _normal(path: str) -> str:
    return os.path.abspath(path)


@functools.lru_cache(maxsize=64)
def _normals(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(os.path.abspath(path) for path in paths)


def resolve(path: str, cwd: str) -> str:
    """Absolute, normalised form of `path` (relative paths are taken against `cwd`)."""
    if path.startswith("~"):
        return _absolute(os.path.expanduser(path), cwd)  # not cached: it depends on $HOME
    return _absolute(path, cwd)


@functools.lru_cache(maxsize=4096)
def _absolute(path: str, cwd: str) -> str:
    # Cached: a call's path is resolved for its policy decision, each card and each location (about a
    # dozen times per call); a pure function of its two strings.
    if not os.path.isabs(path):
        path = cwd + path if cwd.endswith(os.sep) else cwd + os.sep + path
    return os.path.normpath(path)


def relative_inside(path: str, base: str) -> str | None:
    """`path` relative to `base` when it is `base` (".") or below it, else None. Both absolute and
    normalised (as `resolve` and `os.path.realpath` return them). Decided on a segment boundary:
    "/p/..cache/x" is inside "/p" (".." starts a name there, not a segment), "/p2/x" is not."""
    if path == base:
        return "."
    prefix = base if base.endswith(os.sep) else base + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else None


def display_path(path: str, cwd: str | None) -> str:
    """What a title shows for `path`: relative to `cwd` when inside it (`.` for the cwd itself)."""
    if cwd is None:
        return os.path.normpath(path)
    absolute = resolve(path, cwd)
    rel = relative_inside(absolute, _normpath(cwd))
    return absolute if rel is None else rel


# The session cwd, normalised once rather than for every title of every call (a pure string function).
_normpath = functools.lru_cache(maxsize=64)(os.path.normpath)


def is_inside(path: str, root: str) -> bool:
    """True when `path` (absolute) is `root` or below it, symlinks resolved (see `locate`)."""
    return locate(path, (root,)) is not None


def is_inside_roots(path: str, roots: Sequence[str], real_roots: Sequence[str] | None = None) -> bool:
    """True when `path` (absolute) lies inside any of `roots`, symlinks resolved (see `locate`)."""
    return locate(path, roots, real_roots) is not None


class Located(NamedTuple):
    """Where a path inside the roots lands. `real`: every symlink below its root followed; `rel`: `real`
    relative to the real root holding it ("." for the root); `named_rel`: the path as named, relative to
    the root it was named under (equal to `rel` unless a link was followed)."""

    real: str
    rel: str
    named_rel: str


def locate(
    path: str, roots: Sequence[str], real_roots: Sequence[str] | None = None, *, normalised: bool = False
) -> Located | None:
    """Where `path` (absolute) lands inside `roots`, symlinks resolved, or None when it lands outside every
    root: a link below a root that points outside every root is outside.

    Spelled outside every root (and every root's real path) means outside, without touching the disk;
    inside, only the components below the root are checked for links (one lstat each, stopping at the
    first that does not exist), and a link found there is resolved in full. `real_roots`: the roots'
    real paths in the same order, when the caller resolved them once (a session's roots do not move);
    its `roots` are then taken as normalised already. `normalised`: `path` is (as `resolve` returns it).
    Raises ValueError for an impossible path (NUL)."""
    if not normalised:
        path = os.path.normpath(path)
    if real_roots is None:
        roots = [os.path.normpath(r) for r in roots]
        real_roots = [os.path.realpath(r) for r in roots]
    for spelled in (roots, real_roots):
        for root, real_root in zip(spelled, real_roots, strict=True):
            rest = relative_inside(path, root)
            if rest is not None:
                return _below(path, rest, real_root, real_roots)
    return None


def _below(path: str, rest: str, real_root: str, real_roots: Sequence[str]) -> Located | None:
    """`locate` for a path spelled `rest` below the root whose real path is `real_root`."""
    if rest == ".":
        return Located(real_root, ".", ".")
    real = real_root + rest if real_root.endswith(os.sep) else real_root + os.sep + rest
    # Each component below the root, shortest first: the first that is a link decides.
    end = len(real) - len(rest) - 1
    while end != -1:
        end = real.find(os.sep, end + 1)
        try:
            mode = os.lstat(real if end == -1 else real[:end]).st_mode
        except OSError:
            break  # the rest does not exist (yet): nothing below can be a link
        if stat.S_ISLNK(mode):
            target = os.path.realpath(path)
            for other in real_roots:
                inside = relative_inside(target, other)
                if inside is not None:
                    return Located(target, inside, rest)
            return None
    return Located(real, rest, rest)
