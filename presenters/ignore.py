"""A directory walker with ripgrep's default filtering, for the pure-Python `grep` path and for `glob`.

What it mirrors (ripgrep 13 defaults with `--no-ignore-global`):
- hidden files and directories (a name starting with ".") are skipped;
- ignore files: `.gitignore` (only inside a git repository, from the repository root down),
  `.git/info/exclude`, `.ignore` and `.rgignore` (anywhere, ancestors of the search root included);
  precedence: `.rgignore` > `.ignore` > `.gitignore` > exclude, and within each kind the deepest
  directory with a matching pattern decides; within one file the last matching pattern wins ("!" re-includes);
- an ignored directory is not entered; symbolic links are not followed;
- `--glob` overrides: a match includes the entry whatever the other rules say; with a positive glob, a
  file that matches none is skipped ("!glob" excludes); directories are only filtered by the other rules.
Entries are visited depth first in byte order of their names (ripgrep's `--sort path`).

Must not: follow symlinks, read anything but ignore files, or raise for an unreadable directory
(it is skipped, as ripgrep does).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from .runtime import check

KINDS = (".rgignore", ".ignore", ".gitignore", "exclude")  # precedence order


def expand_braces(pattern: str) -> list[str]:
    """`a{b,c}d` → [abd, acd] (nested braces too); an unbalanced brace stays literal."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "\\":
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner, parts, level, last = pattern[start + 1 : i], [], 0, 0
                for j, c in enumerate(inner):
                    level += c == "{"
                    level -= c == "}"
                    if c == "," and level == 0:
                        parts.append(inner[last:j])
                        last = j + 1
                parts.append(inner[last:])
                if len(parts) == 1:
                    continue
                return [x for part in parts for x in expand_braces(pattern[:start] + part + pattern[i + 1 :])]
    return [pattern]


def _glob_body(pattern: str) -> str:
    """Regex for a glob over "/"-separated paths: `*`, `?`, `[...]`, `**` as a whole segment."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if (
            pattern.startswith("**", i)
            and (i == 0 or pattern[i - 1] == "/")
            and (i + 2 == n or pattern[i + 2] == "/")
        ):
            if i + 2 == n:
                out.append(".*")  # trailing "**": everything below
                i += 2
            else:
                out.append("(?:[^/]*/)*")  # "**/": zero or more directories
                i += 3
            continue
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append("[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def compile_glob(pattern: str, *, anchored: bool | None = None, braces: bool = True) -> re.Pattern[str]:
    """A glob as a regex over relative paths. `anchored` None: gitignore rule (a pattern with a "/"
    before its end is anchored to the base; one without matches a name at any depth)."""
    variants = expand_braces(pattern) if braces else [pattern]
    bodies = []
    for variant in variants:
        is_anchored = "/" in variant.rstrip("/") if anchored is None else anchored
        variant = variant.lstrip("/")
        body = _glob_body(variant)
        bodies.append(body if is_anchored or variant.startswith("**/") else "(?:[^/]*/)*" + body)
    return re.compile("(?:" + "|".join(bodies) + r")\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def parse_rules(text: str, *, braces: bool = False) -> tuple[Rule, ...]:
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if line:
            rules.append(Rule(compile_glob(line, braces=braces), negate, dir_only))
    return tuple(rules)


def rules_decision(rules: tuple[Rule, ...], rel: str, is_dir: bool) -> bool | None:
    """True: ignored, False: re-included, None: no rule matched. The last matching rule wins."""
    for rule in reversed(rules):
        if (is_dir or not rule.dir_only) and rule.regex.match(rel):
            return not rule.negate
    return None


class Overrides:
    """`--glob` filters (gitignore syntax plus braces; "!" excludes), relative to the search root."""

    def __init__(self, globs: list[str]) -> None:
        self.rules = parse_rules("\n".join(globs), braces=True)
        self.whitelists = sum(not r.negate for r in self.rules)

    def decide(self, rel: str, is_dir: bool) -> str | None:
        """ "include", "exclude" or None (no opinion)."""
        for rule in reversed(self.rules):  # an override glob is a whitelist; "!" makes it an ignore
            if (is_dir or not rule.dir_only) and rule.regex.match(rel):
                return "exclude" if rule.negate else "include"
        if self.whitelists and not is_dir:
            return "exclude"
        return None


@dataclass(frozen=True, slots=True)
class _Level:
    base: str
    rules: dict[str, tuple[Rule, ...]]
    has_git: bool


def _read_rules(path: str) -> tuple[Rule, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_rules(f.read())
    except OSError:
        return ()


def _level(directory: str, in_repo: bool) -> _Level:
    rules = {name: _read_rules(os.path.join(directory, name)) for name in (".rgignore", ".ignore")}
    has_git = os.path.exists(os.path.join(directory, ".git"))
    if in_repo or has_git:
        rules[".gitignore"] = _read_rules(os.path.join(directory, ".gitignore"))
    if has_git:
        rules["exclude"] = _read_rules(os.path.join(directory, ".git", "info", "exclude"))
    return _Level(directory, {k: v for k, v in rules.items() if v}, has_git)


def _ignored(levels: list[_Level], path: str, is_dir: bool) -> bool | None:
    for kind in KINDS:
        saw_git = False
        for level in reversed(levels):  # deepest first
            if kind in (".gitignore", "exclude") and saw_git:
                break  # git rules stop at the repository root
            saw_git = saw_git or level.has_git
            rules = level.rules.get(kind)
            if rules:
                decision = rules_decision(
                    rules, os.path.relpath(path, level.base).replace(os.sep, "/"), is_dir
                )
                if decision is not None:
                    return decision
    return None


def _repo_root(directory: str) -> str | None:
    current = directory
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _ancestor_levels(root: str) -> tuple[list[_Level], bool]:
    """The ignore levels of `root`'s ancestors, outermost first, and whether `root` is in a repository."""
    repo = _repo_root(root)
    ancestors = []
    current = root
    while (parent := os.path.dirname(current)) != current:
        ancestors.append(parent)
        current = parent
    levels = []
    for directory in reversed(ancestors):  # outermost first
        inside = repo is not None and (
            directory == repo or directory.startswith(repo.rstrip(os.sep) + os.sep)
        )
        levels.append(_level(directory, inside))
    return levels, repo is not None


def walk(
    root: str,
    overrides: Overrides | None,
    stop: threading.Event,
    *,
    hidden: bool = False,
    max_depth: int | None = None,
) -> Iterator[str]:
    """Absolute paths of the files under `root` that ripgrep would search, in its `--sort path` order.
    `hidden` (ripgrep's --hidden): dot-names are walked too, except the `.git` directory. `max_depth`:
    files at most that many levels below `root` (1: its own files)."""
    levels, in_repo = _ancestor_levels(root)
    depth_left = max_depth if max_depth is not None else -1
    yield from _visit(root, root, levels, in_repo, overrides, stop, hidden, depth_left)


def reincluded(rel: str, root: str) -> bool:
    """Whether the ignore files re-include the file `rel` (a path below `root`, in a directory the walk
    enters) with a "!" rule: what makes the walk list a hidden file without `hidden`. Reads the ignore
    files from the filesystem root down to the file's directory, as the walk would."""
    levels, in_repo = _ancestor_levels(root)
    directory = root
    for name in ["", *rel.split("/")[:-1]]:
        directory = os.path.join(directory, name) if name else directory
        here = _level(directory, in_repo)
        in_repo = in_repo or here.has_git
        levels.append(here)
    return _ignored(levels, os.path.join(root, rel), False) is False


def _visit(
    directory: str,
    root: str,
    levels: list[_Level],
    in_repo: bool,
    overrides: Overrides | None,
    stop: threading.Event,
    hidden: bool,
    depth_left: int,
) -> Iterator[str]:
    check(stop)
    here = _level(directory, in_repo)
    in_repo = in_repo or here.has_git  # a nested repository starts its own .gitignore scope
    levels = [*levels, here]
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name.encode("utf-8", "surrogateescape"))
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        decision = None
        if overrides is not None:
            decision = overrides.decide(os.path.relpath(entry.path, root).replace(os.sep, "/"), is_dir)
        if decision == "exclude":
            continue
        if decision is None:
            ignored = _ignored(levels, entry.path, is_dir)
            if ignored or (ignored is None and entry.name.startswith(".") and not hidden):
                continue
            if hidden and entry.name == ".git":
                continue
        if is_dir:
            if depth_left != 1:  # negative: unlimited
                yield from _visit(entry.path, root, levels, in_repo, overrides, stop, hidden, depth_left - 1)
        elif entry.is_file(follow_symlinks=False):
            yield entry.path
