"""Path rules shared by every built-in tool: resolution, display, and the workspace-roots test.

- `resolve(path, cwd)`: a model-supplied path made absolute against the session cwd (`~` expanded,
  normalised, symlinks NOT resolved: the path the model named is the path the cards show).
- `display_path(path, cwd)`: relative to the cwd when inside it, absolute otherwise. "Inside" is decided by
  path *segments*: `..cache/x` is inside (its first segment is `..cache`, not `..`), `../x` is not.
- `is_inside_roots(path, roots)`: the same segment rule against each root, on real paths (symlinks
  resolved), so a link inside a root that points outside it counts as outside.

Invariant: pure string and filesystem-metadata logic; nothing here reads file contents or raises for a
missing file. Titles are the only place a relative path may appear (ACP §9: the wire carries absolute
paths).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from registry_core import Agent


def session_cwd(agent: Agent | None) -> str:
    """The cwd a call runs in: the agent's (absolute by contract), else the process cwd."""
    if agent is not None and agent.cwd:
        return os.path.abspath(agent.cwd)
    return os.getcwd()


def session_roots(agent: Agent | None) -> tuple[str, ...]:
    """The directories a call may touch without asking: the agent's roots, else its cwd alone."""
    if agent is not None and agent.roots:
        return tuple(os.path.abspath(root) for root in agent.roots)
    return (session_cwd(agent),)


def resolve(path: str, cwd: str) -> str:
    """Absolute, normalised form of `path` (relative paths are taken against `cwd`)."""
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        expanded = os.path.join(cwd, expanded)
    return os.path.normpath(expanded)


def relative_inside(path: str, base: str) -> str | None:
    """`path` relative to `base` when it is `base` or below it (segment rule), else None."""
    rel = os.path.relpath(path, base)
    first = rel.split(os.sep, 1)[0]
    # Only a first segment of exactly ".." leaves `base`; "..cache" is an ordinary name.
    if first == os.pardir or os.path.isabs(rel):
        return None
    return rel


def display_path(path: str, cwd: str | None) -> str:
    """What a title shows for `path`: relative to `cwd` when inside it (`.` for the cwd itself)."""
    if cwd is None:
        return os.path.normpath(path)
    absolute = resolve(path, cwd)
    rel = relative_inside(absolute, os.path.normpath(cwd))
    return absolute if rel is None else rel


def is_inside(path: str, root: str) -> bool:
    """True when the real `path` is `root` or below it (both resolved through symlinks)."""
    return relative_inside(os.path.realpath(path), os.path.realpath(root)) is not None


def is_inside_roots(path: str, roots: Sequence[str]) -> bool:
    """True when `path` (absolute) lies inside any of `roots`."""
    return any(is_inside(path, root) for root in roots)
