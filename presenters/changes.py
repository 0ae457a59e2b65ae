"""What `write` and `edit` share: the value of a file change, its meta, and its `diff` cards.

presentation_meta of both tools (persisted for replay; the bridge maps it):
    {"path": abs, "cwd": abs, "created": bool, "replacements": int | None, "source": "disk" | "editor",
     "hunks": [{"old_start", "old_lines", "new_start", "new_lines", "old_text" (None for a create),
                "new_text", "line"}]}
Hunk numbers are 1-based; `line` is the hunk's first changed line in the new file.

The pending card has two forms: `change_call_view`, pure (the arguments only: what replay shows, and
the fallback), and `change_preview_view`, the same hunks the completed card will show, computed by the
tool's `preview_call` against the file as it is when the user is asked (`write` and `edit` plan the change
with the code their bodies run, so the approval shows exactly what the call will do to the file as it is).

Invariant: the result card is built from meta alone (never by reading the file again).

A host may put a `CommitJournal` in `agent.services["commits"]`: both tools tell it of every change the
moment it is on disk (or in the editor), before their result goes through the registry, with the text
and meta the result will carry (`CommitReport`, run by `fs_access.save_document` right after the rename,
in the worker thread that made it). A host that logs conversations records it, so a crash between the
write and the result still leaves a log saying the change happened, and what it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from registry_core import (
    ContentText,
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    GenericResultView,
    ToolError,
    ToolResult,
    ToolRunContext,
)

from .cards import call_paths, failure_card, meta_display, meta_field
from .diffs import Hunk
from .paths import display_path

log = logging.getLogger(__name__)

SNIPPET_LINES = 60
COMMITS_SERVICE = "commits"


@runtime_checkable
class CommitJournal(Protocol):
    """Where a host records that a call's file change has been made (see the module docstring)."""

    def committed(self, call_id: str, tool: str, summary: str, meta: Mapping[str, Any]) -> None:
        """Call `call_id` of `tool` changed a file: `summary` and `meta` are its result's text and
        presentation meta. Records durably before returning; never raises into the tool."""
        ...


def report_commit(ctx: ToolRunContext, summary: str, meta: Mapping[str, Any]) -> None:
    """Tell the host's `CommitJournal` (when it has one) that this call's change is made."""
    agent = ctx.agent
    journal = agent.services.get(COMMITS_SERVICE) if agent is not None else None
    if not isinstance(journal, CommitJournal):
        return
    try:
        journal.committed(ctx.call_id, ctx.execution.name, summary, meta)
    except Exception:  # the change is made either way; a broken journal must not fail the call
        log.exception("commit journal failed for call %s", ctx.call_id)


class CommitReport:
    """The change a `write` or `edit` is making, told to the host's journal (`report_commit`) the moment it
    is made: `fs_access.save_document` calls it with the source that took the write (possibly in a worker
    thread, so it touches nothing but its own fields and the journal, which records under its own lock).
    `change` is the value the call then returns, the one the journal was told of."""

    def __init__(
        self,
        ctx: ToolRunContext,
        change_of: Callable[[Literal["disk", "editor"]], FileChange],
        summary_of: Callable[[FileChange], str],
    ) -> None:
        self._ctx = ctx
        self._change_of = change_of
        self._summary_of = summary_of
        self.change: FileChange | None = None

    def __call__(self, source: Literal["disk", "editor"]) -> None:
        # Never raises: the file is replaced already, and an error here would fail the call that made it.
        try:
            change = self._change_of(source)
            self.change = change
            summary, meta = self._summary_of(change), change_meta(None, change)
        except Exception:
            log.exception("the change of call %s could not be described for the journal", self._ctx.call_id)
            return
        report_commit(self._ctx, summary, meta)

    def made(self, source: Literal["disk", "editor"]) -> FileChange:
        """The change made (as told to the journal), once `save_document` returned `source`."""
        return self.change if self.change is not None else self._change_of(source)


class HunkValue(BaseModel):
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    old_text: str | None
    new_text: str
    line: int

    @staticmethod
    def of(hunk: Hunk) -> HunkValue:
        return HunkValue(**hunk.to_json())


class FileChange(BaseModel):
    path: str
    cwd: str
    created: bool
    hunks: list[HunkValue]
    replacements: int | None = None
    source: Literal["disk", "editor"]
    total_lines: int


def change_meta(_args: Any, value: FileChange) -> dict[str, Any]:
    return {
        "path": value.path,
        "cwd": value.cwd,
        "created": value.created,
        "replacements": value.replacements,
        "source": value.source,
        "hunks": [h.model_dump() for h in value.hunks],
    }


def snippet(value: FileChange) -> str:
    """The changed lines, numbered like `read`, so the model sees the result without reading again."""
    out: list[str] = []
    for hunk in value.hunks:
        if len(out) >= SNIPPET_LINES:
            out.append("   ...")
            break
        if out:
            out.append("   ...")
        lines = hunk.new_text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for number, text in enumerate(lines[: SNIPPET_LINES - len(out)], hunk.new_start):
            out.append(f"{number:>6}\t{text.removesuffix(chr(13))}")
    return "\n".join(out)


def _hunks(meta: Any) -> list[Mapping[str, Any]] | None:
    raw = meta.get("hunks") if isinstance(meta, Mapping) else None
    if not isinstance(raw, (list, tuple)) or not all(isinstance(h, Mapping) for h in raw):
        return None
    return list(raw)


def change_call_view(verb: str, path_arg: str, cwd: str | None, old: str | None, new: str) -> DiffCallView:
    """The pure pending card: the proposed text as a diff (oldText None for `write`: not known from the
    arguments alone). `change_preview_view` replaces it when the host can preview."""
    display, path = call_paths(path_arg, cwd)
    return DiffCallView(
        title=f"{verb} {display}",
        diffs=(FileDiff(path=path, old_text=old, new_text=new),),
        locations=(FileLocation(path=path),),
    )


def change_preview_view(
    verb: str, path_arg: str, cwd: str, hunks: Sequence[Hunk]
) -> DiffCallView | GenericCallView:
    """The previewed pending card: the hunks the call would apply to the file as it is now, as the
    completed card will show them (the same diffs and one location per hunk); no hunks: says so."""
    display, path = call_paths(path_arg, cwd)
    title = f"{verb} {display}"
    if not hunks:
        return GenericCallView(
            title=title,
            kind="edit",
            content=(ContentText(text=f"No change: {display} already has this content."),),
            locations=(FileLocation(path=path),),
        )
    diffs, locations = _hunk_cards(path, [h.to_json() for h in hunks])
    return DiffCallView(title=title, diffs=diffs, locations=locations)


def change_preview_failure(verb: str, path_arg: str, cwd: str, error: ToolError) -> GenericCallView:
    """The previewed pending card of a change that cannot apply to the file as it is (not found, binary,
    ambiguous): what the call would fail with, instead of a diff that would not happen."""
    display, path = call_paths(path_arg, cwd)
    return GenericCallView(
        title=f"{verb} {display}",
        kind="edit",
        content=(ContentText(text=f"This call would not change the file: {error.message}"),),
        locations=(FileLocation(path=path),),
    )


def _hunk_cards(
    path: str, hunks: Sequence[Mapping[str, Any]]
) -> tuple[tuple[FileDiff, ...], tuple[FileLocation, ...]]:
    """One diff and one location per hunk: the pending preview and the completed card share it."""
    return (
        tuple(FileDiff(path=path, old_text=h["old_text"], new_text=h["new_text"]) for h in hunks),
        tuple(FileLocation(path=path, line=h["line"]) for h in hunks),
    )


def change_result_view(verb: str, path_arg: str, cwd: str | None, result: ToolResult) -> Any:
    """The completed card: the applied hunks, one location per hunk."""
    display = meta_display(result.meta) or call_paths(path_arg, cwd)[0]
    title = f"{verb} {display}"
    path = meta_field(result.meta, "path", str)
    hunks = _hunks(result.meta)
    if result.is_error or path is None or hunks is None:
        return failure_card(title, result)
    if not hunks:
        text = (
            f"No change: {display_path(path, meta_field(result.meta, 'cwd', str))} already had this content."
        )
        return GenericResultView(title=title, content=(ContentText(text=text),))
    diffs, locations = _hunk_cards(path, hunks)
    return DiffResultView(title=title, diffs=diffs, locations=locations)
