"""What the policy knows about one call: every path it touches, located in the session's workspace as it
resolves now (`presenters.paths.locate`, symlinks followed), and the scope an "always" answer for it would
cover (`scope`).

`Workspace.examine` reads a built-in tool's arguments by its class (`tool_classes`): a file tool's file, a
search's root (a glob pattern's literal prefix included, via `searched_paths` in `presenters/glob.py` and
`presenters/grep.py`), a command's working directory and arguments, a fetch's host. It notes a path landing
outside every root, a change to a file that makes later commands run code (`protected_paths`), and a call
that cannot be judged at all (a NUL byte in a path), for `policy.decide` to act on.

Must not: decide anything, or raise for any argument (an impossible path is a fact: `invalid`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from acp_bridge.permissions.command_scope import command_prefix
from acp_bridge.permissions.protected_paths import protected_reason
from acp_bridge.permissions.scope import Scope, ScopeKey
from acp_bridge.permissions.tool_classes import ToolClass
from presenters import glob as glob_presenter
from presenters import grep as grep_presenter
from presenters.paths import Located, display_path, locate, relative_inside, resolve

_PATH_KEYS = ("file_path", "path")
# The arguments that name files, per tool (default `_PATH_KEYS`): none of them may hold a NUL byte.
_NAMING_KEYS: Mapping[str, tuple[str, ...]] = {"glob": ("pattern", "path"), "grep": ("path", "glob")}

# Tools whose arguments can move what they read away from `file_path`/`path`: every path they search.
_SEARCHED_PATHS: Mapping[str, Callable[[Mapping[str, Any], str], tuple[str, ...]]] = {
    "glob": glob_presenter.searched_paths,
    "grep": grep_presenter.searched_paths,
}


@dataclass(slots=True)
class CallFacts:
    """What the policy knows about one call, computed once per decision."""

    # What an "always" answer would cover, as `Scope.key()` (built without a Scope: decide is hot).
    key: ScopeKey
    named: str | None = None  # the file (or directory) as named, absolute
    command: str | None = None
    outside: str | None = None  # a path the call touches that lands outside every root, as named
    protected: str | None = None  # why a file the call changes makes later commands run code
    invalid: str | None = None  # why the call cannot be judged at all


class _Unusable(ValueError):
    """A path no file can have."""


def _host_and_port(url: str) -> str | None:
    """`host:port` of a URL, lower-cased, with the port its scheme implies when absent; None without a
    host. An unreadable port keeps the authority as written, so the scope covers that spelling only."""
    parts = urlsplit(url.strip())
    host = parts.hostname
    if not host:
        return None
    try:
        port = parts.port
    except ValueError:
        return parts.netloc.lower()
    if port is None:
        port = {"http": 80, "https": 443}.get(parts.scheme.lower())
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


class Workspace:
    """A session's cwd and roots, against which every path a call touches is located."""

    def __init__(self, cwd: str, roots: tuple[str, ...]) -> None:
        self.cwd = cwd
        self.roots = tuple(os.path.normpath(r) for r in (roots or (cwd,)))
        # Resolved once: roots do not move during a session, and every path is checked against them.
        self.real_roots = tuple(os.path.realpath(r) for r in self.roots)
        self.real_cwd = os.path.realpath(cwd)

    def examine(self, tool: str, cls: ToolClass | None, args: Any) -> CallFacts:
        """The facts about a call of a built-in (or unclassed) tool with `args`, as the arguments say."""
        if not isinstance(args, Mapping):
            return CallFacts((tool, "tool", "", None))
        try:
            if cls == "execute" and isinstance(args.get("command"), str):
                return self._examine_command(tool, args)
            if cls == "read" or cls == "edit":
                return self._examine_files(tool, cls, args)
        except _Unusable as exc:
            return CallFacts((tool, "tool", "", None), invalid=str(exc))
        except ValueError as exc:  # an unencodable name (a lone surrogate), "~\0" for expanduser
            return CallFacts(
                (tool, "tool", "", None), invalid=f"a path in its arguments is not usable ({exc})"
            )
        if cls == "fetch" and isinstance(args.get("url"), str):
            host = _host_and_port(args["url"])
            if host:
                return CallFacts((tool, "host", host, None))
        return CallFacts((tool, "tool", "", None))

    def _resolve(self, value: str, cwd: str) -> str:
        if "\x00" in value:
            raise _Unusable(f"{value!r} contains a NUL byte, which no file name can contain")
        return resolve(value, cwd)

    def _locate(self, path: str) -> Located | None:
        if "\x00" in path:
            raise _Unusable(f"{path!r} contains a NUL byte, which no file name can contain")
        return locate(path, self.roots, self.real_roots, normalised=True)

    def _examine_files(self, tool: str, cls: ToolClass, args: Mapping[str, Any]) -> CallFacts:
        for name in _NAMING_KEYS.get(tool, _PATH_KEYS):
            value = args.get(name)
            if isinstance(value, str) and "\x00" in value:
                raise _Unusable(f"its {name} {value!r} contains a NUL byte, which no file name can contain")
        named = None
        for name in _PATH_KEYS:
            value = args.get(name)
            if isinstance(value, str) and value:
                named = self._resolve(value, self.cwd)
                break
        search = _SEARCHED_PATHS.get(tool)
        touched: tuple[str, ...]
        if search is not None:
            touched = search(args, self.cwd)
        elif named is not None:
            touched = (named,)
        else:
            return CallFacts((tool, "tool", "", None))
        real, outside, protected = named, None, None
        for path in touched:
            located = self._locate(path)
            if located is None:
                outside = outside or path
                continue
            if path == named:
                real = located.real
            if cls == "edit" and protected is None:
                protected = protected_reason(located.rel)
                if protected is None and located.named_rel != located.rel:
                    protected = protected_reason(located.named_rel)
        scope: ScopeKey = (tool, "tool", "", None) if real is None else (tool, "path", real, None)
        return CallFacts(scope, named, None, outside, protected)

    def _examine_command(self, tool: str, args: Mapping[str, Any]) -> CallFacts:
        command = args["command"].strip()
        if "\x00" in command:
            raise _Unusable("the command contains a NUL byte, which no command line can carry")
        value = args.get("workdir")
        named = self._resolve(value, self.cwd) if isinstance(value, str) and value else self.cwd
        located = self._locate(named)
        call = CallFacts((tool, "tool", "", None), named, command)
        if located is None:
            call.outside = named
        real = located.real if located is not None else named
        workdir = None if real == self.real_cwd else real
        prefix = command_prefix(command, lambda argument: self._argument_ok(argument, named))
        if prefix is None:
            call.key = (tool, "exact", command, workdir)
        else:
            call.key = (tool, "prefix", prefix, workdir)
        return call

    def _argument_ok(self, argument: str, workdir: str) -> bool:
        """Whether a command argument may appear in a command a prefix rule covers: not a path outside the
        workspace (absolute, `~`, `..`, or through a symlink), nor a file that makes commands run code."""
        if "\x00" in argument:
            return False
        if argument.startswith("~") and os.path.expanduser(argument) == argument:
            return False  # `~-`, `~+`, `~nobody`: the shell's meaning, not one we can judge
        try:
            located = locate(resolve(argument, workdir), self.roots, self.real_roots)
        except ValueError:
            return False
        if located is None or protected_reason(located.rel) is not None:
            return False
        return located.named_rel == located.rel or protected_reason(located.named_rel) is None

    def shown_scope(self, key: ScopeKey) -> Scope:
        """The scope of `key` with its display fields filled in, for its label: a file or a command's
        directory relative to the session cwd."""
        tool, kind, value, workdir = key
        scope = Scope(tool, kind, value, workdir=workdir)
        if scope.kind == "path":
            assert isinstance(scope.value, str)
            return dataclasses.replace(scope, display=self._display(scope.value))
        if scope.workdir is not None:
            return dataclasses.replace(scope, workdir_display=self._display(scope.workdir))
        return scope

    def _display(self, real: str) -> str:
        rel = relative_inside(real, self.real_cwd)
        return rel if rel is not None else display_path(real, self.cwd)

    def outside_reason(self, call: CallFacts) -> str:
        """Why a call that touches a path outside the workspace asks, naming the path."""
        path = call.outside or ""
        through = "" if self._spelled_outside(path) else " (through a symbolic link)"
        if call.command is not None:
            return f"The command would run in {path}, outside the workspace{through}."
        return f"{path} is outside the workspace{through}."

    def _spelled_outside(self, path: str) -> bool:
        return all(relative_inside(path, root) is None for root in (*self.roots, *self.real_roots))
