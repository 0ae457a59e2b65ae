"""Paths and titles: `resolve_path` (absolute and normalised, for locations and diffs) and `display_path`
(relative to the session cwd when inside it: the `..` path-segment rule) are the tools' own rules
(`presenters.paths.resolve` and `display_path`, one implementation for tools, policy and cards); here is the
title rewriting that shows a card's paths, and any other path token under the cwd, relative to it;
`card_title` makes the result a single line.

Must not: touch the file system (paths are strings here: no realpath, no existence checks) or build
card content.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Final

from presenters.paths import display_path as display_path
from presenters.paths import relative_inside, resolve

from .text import one_line
from .wire import WireContext

# The mapping's name for the tools' rule: absolute against the cwd, `~` expanded, normalised.
resolve_path = resolve

# A path occurrence in a title must not be glued to more path characters on its left ("/x/p/a" does
# not contain the path "/p/a"), nor continue a name on its right ("/p/src2" does not contain "/p/src";
# a following "/" is fine: "/p/src" + "/a.py" relativises to "src/a.py"; a "." or "-" that ends the
# word is punctuation, so "see /p/a." still matches "/p/a").
_PATH_LEFT_EDGE: Final = r"(?<![\w.\-/~])"
_PATH_RIGHT_EDGE: Final = r"(?![\w~]|[.\-][\w.\-~])"
_TOKEN_REST: Final = r"/[^\s'\"`()\[\]{}<>,;|&]*"
_TRAILING_PUNCT: Final = ".,:;!?"


def relativize_title(title: str, paths: Mapping[str, str] | list[str], cwd: str) -> str:
    """Replace every occurrence of each absolute path (inside cwd) in `title` by its display path."""
    pairs: dict[str, str] = {}
    given = paths.items() if isinstance(paths, Mapping) else ((p, None) for p in paths)
    for absolute, known in given:
        if not absolute or not os.path.isabs(absolute):
            continue
        # The title may spell the path as given or normalised; both map to the same display path. Most
        # titles spell neither (they are relative already): nothing else is computed for those.
        spellings = [s for s in dict.fromkeys((absolute, os.path.normpath(absolute))) if s in title]
        if not spellings:
            continue
        shown = known if known is not None else display_path(absolute, cwd)
        if known is None and os.path.isabs(shown):
            continue  # outside cwd: the path keeps its absolute spelling
        for spelling in spellings:
            if spelling != shown:
                pairs.setdefault(spelling, shown)
    if not pairs:
        return title
    # Longest first: "/p/src/a.py" must win over its directory "/p/src" (alternation is ordered).
    ordered = sorted(pairs, key=len, reverse=True)
    pattern = re.compile(
        _PATH_LEFT_EDGE + "(?:" + "|".join(re.escape(p) for p in ordered) + ")" + _PATH_RIGHT_EDGE
    )
    return pattern.sub(lambda m: pairs[m.group(0)], title)


def _relativize_cwd_tokens(title: str, cwd: str) -> str:
    """Relativise any other path token under cwd that the card did not list (e.g. a search directory
    a presenter put in its title). Tokens that normalise outside cwd stay as written."""
    base = os.path.normpath(cwd)
    if base == "/" or not os.path.isabs(base):
        return title  # every absolute path is "inside /"; rewriting them all would only add noise
    if base not in title:
        return title
    pattern = _cwd_token_pattern(base)

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        stripped = token.rstrip(_TRAILING_PUNCT) if len(token) > len(base) else token
        if stripped.endswith("/"):
            stripped = token  # the dots were path segments ("/p/." or "/p/a/.."), not punctuation
        trail = token[len(stripped) :]
        inside = relative_inside(os.path.normpath(stripped), base)
        return token if inside is None else inside + trail

    return pattern.sub(replace, title)


@lru_cache(maxsize=64)
def _cwd_token_pattern(base: str) -> re.Pattern[str]:
    # Compiled once per session cwd: titles are built for every call.
    return re.compile(_PATH_LEFT_EDGE + re.escape(base) + f"(?:{_TOKEN_REST}|{_PATH_RIGHT_EDGE})")


def _relativize_root_tokens(title: str, roots: Iterable[str], cwd: str) -> str:
    """Show path tokens below another workspace root as `<root name>/<path inside it>` (the way
    multi-root editors label them); the cwd's own paths were made relative before."""
    cwd = os.path.normpath(cwd)
    for root in roots:
        base = os.path.normpath(root)
        name = os.path.basename(base)
        if base in ("/", cwd) or not name or not os.path.isabs(base) or base not in title:
            continue
        if relative_inside(base, cwd) is not None:
            continue  # a root inside the cwd: its paths are already relative to the cwd

        def replace(match: re.Match[str], base: str = base, name: str = name) -> str:
            token = match.group(0)
            stripped = token.rstrip(_TRAILING_PUNCT) if len(token) > len(base) else token
            if stripped.endswith("/"):
                stripped = token
            trail = token[len(stripped) :]
            inside = relative_inside(os.path.normpath(stripped), base)
            if inside is None:
                return token
            return (name if inside == "." else f"{name}/{inside}") + trail

        title = _cwd_token_pattern(base).sub(replace, title)
    return title


def card_title(title: str | None, paths: Iterable[str], ctx: WireContext, fallback: str) -> str:
    """A card's single-line title: `title` with the card's paths (and any other path under the cwd) shown
    relative to the cwd, or `fallback` (the tool's name) when there is no title."""
    if title is None or not title.strip():
        return one_line(fallback)[0] or "tool"
    if "/" not in title:
        # No absolute path in it, so nothing to relativise (the usual title, "Read src/a.py").
        return one_line(title)[0] or one_line(fallback)[0] or "tool"
    return _card_title(title, tuple(paths), ctx.cwd, tuple(ctx.extra_roots), fallback)


@lru_cache(maxsize=1024)
def _card_title(title: str, paths: tuple[str, ...], cwd: str, roots: tuple[str, ...], fallback: str) -> str:
    # Cached: a pure function of strings, asked again for every call on the same files.
    absolute = [resolve_path(p, cwd) for p in paths]
    relative = _relativize_cwd_tokens(relativize_title(title, absolute, cwd), cwd)
    if roots:
        relative = _relativize_root_tokens(relative, roots, cwd)
    return one_line(relative)[0] or one_line(fallback)[0] or "tool"
