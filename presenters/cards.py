"""Small helpers every presenter shares: display paths for call cards, failure cards, meta access.

Presenters are pure: `present_call(args)` sees only the arguments (plus the display cwd a host passed to
`build_tools`), `present_result(args, result)` only adds the persisted `result.meta`. Nothing here touches
the filesystem.

Invariant: helpers never raise on odd input (a replayed log may hold older shapes); they return None or a
plain fallback and let the caller degrade to a simpler card.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from registry_core import ContentText, FrozenDict, GenericResultView, ToolResult, content_text

from .paths import display_path, resolve

T = TypeVar("T")


def call_paths(path: str, cwd: str | None) -> tuple[str, str]:
    """(display path, path for the card's locations and diffs) of a call card, from the model's argument.

    With a known cwd both derive from the absolute path. Without one (a host that builds the tools once
    for every session), an absolute argument stays absolute and a relative one stays relative and
    normalised: a card must not guess a directory, and the host resolves it against the session cwd
    (acp_bridge.mapping.resolve_path does). Result cards are always absolute: the body knows the cwd.
    """
    if cwd is not None:
        absolute = resolve(path, cwd)
        return display_path(absolute, cwd), absolute
    expanded = os.path.expanduser(path)
    normalised = os.path.normpath(expanded)
    return normalised, normalised


def meta_field(meta: Any, key: str, kind: type[T]) -> T | None:
    """`meta[key]` when meta is a mapping and the value has the expected type, else None."""
    # The usual meta (a snapshot) first: the ABC check costs more than the rest, and a result card asks
    # for several fields.
    if type(meta) is not FrozenDict and not isinstance(meta, Mapping):
        return None
    value = meta.get(key)
    if kind is int and isinstance(value, bool):
        return None
    return value if isinstance(value, kind) else None


def meta_display(meta: Any) -> str | None:
    """The display path of a file tool's result, from its persisted `path` and `cwd`."""
    path = meta_field(meta, "path", str)
    if path is None:
        return None
    return display_path(path, meta_field(meta, "cwd", str))


def failure_card(title: str | None, result: ToolResult) -> GenericResultView:
    """A failed call's card: its title and the error text (replaces a pending diff that never applied)."""
    message = result.error.message if result.error is not None else content_text(result.content)
    return GenericResultView(title=title, content=(ContentText(text=message),))
