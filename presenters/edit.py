"""`edit`: exact string replacement in a text file, and its `diff` cards.

- The match is exact. Not found, or found several times without `replace_all`, is an error that says
  what to do (with the line numbers of the matches, or a hint when only whitespace differs).
- CRLF files: models send "\\n"; when the exact text is absent but its CRLF form is present, the CRLF
  forms of old_string and new_string are used, so the file keeps its line endings. Encoding (BOM),
  permission bits and the final newline are kept (only the matched text changes).
- Hunks come from the replacement sites (`diffs.site_hunks`), never from diffing the whole file: a
  `replace_all` over a 5 MB file costs a few C-level scans. The approval shows the same hunks
  (`preview_call`, against the file as it is when the user is asked).

Must not: change anything but the matched text, or touch the file when the call fails.
"""

from __future__ import annotations

import errno
import threading
from typing import Literal

from pydantic import BaseModel, Field

from registry_core import (
    Agent,
    Output,
    ToolDefinition,
    ToolError,
    ToolExecution,
    ToolResult,
    ToolRunContext,
    define_tool,
)

from .changes import (
    CommitReport,
    FileChange,
    HunkValue,
    change_call_view,
    change_meta,
    change_preview_failure,
    change_preview_view,
    change_result_view,
    snippet,
)
from .diffs import Hunk, count_lines, site_hunks
from .disk import Landing
from .file_errors import os_error
from .fs_access import TextDocument, load_document, save_document
from .landing import landing_of, pin_landing
from .paths import display_path, resolve, session_cwd
from .runtime import run_blocking

MAX_LISTED_SITES = 10


class EditArgs(BaseModel):
    file_path: str = Field(description="The file to edit: absolute, or relative to the working directory.")
    old_string: str = Field(description="The exact text to replace (indentation included); must be unique "
                            "in the file unless replace_all is true.")  # fmt: skip
    new_string: str = Field(description="The text to put in its place (must differ from old_string).")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_string.")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _not_found(text: str, old_s: str, display: str) -> ToolError:
    hint = ""
    stripped = old_s.strip()
    if stripped and stripped != old_s and (at := text.find(stripped)) >= 0:
        hint = f" The text without its surrounding whitespace occurs at line {_line_of(text, at)}."
    else:
        first = next((line.strip() for line in old_s.split("\n") if line.strip()), "")
        if first and (at := text.find(first)) >= 0:
            hint = f" Its first line occurs at line {_line_of(text, at)}, but the following lines differ."
    return ToolError(
        f"old_string was not found in {display}.{hint} Read the file again and copy the exact text, "
        "including indentation and line breaks.",
        code="NO_MATCH",
    )


def _plan(text: str, args: EditArgs, display: str, _stop: threading.Event) -> tuple[str, list[Hunk], int]:
    """(new text, hunks, replacements) of the edit, or a ToolError. Pure CPU work (run off the loop)."""
    old_s, new_s = args.old_string, args.new_string
    count = text.count(old_s)
    if count == 0 and "\r\n" in text and "\n" in old_s and "\r\n" not in old_s:
        # The model wrote "\n" where the file has "\r\n": match and replace in the file's convention.
        crlf_old = old_s.replace("\n", "\r\n")
        count = text.count(crlf_old)
        if count:
            old_s, new_s = crlf_old, new_s.replace("\r\n", "\n").replace("\n", "\r\n")
    if count == 0:
        raise _not_found(text, old_s, display)
    if count > 1 and not args.replace_all:
        sites: list[int] = []
        at = text.find(old_s)
        while at >= 0 and len(sites) < MAX_LISTED_SITES:
            sites.append(at)
            at = text.find(old_s, at + len(old_s))
        lines = ", ".join(str(_line_of(text, s)) for s in sites) + (", ..." if count > len(sites) else "")
        raise ToolError(
            f"old_string occurs {count} times in {display} (at lines {lines}). Include more surrounding "
            "lines to make it unique, or set replace_all to true to replace every occurrence.",
            code="AMBIGUOUS_MATCH",
        )
    sites = []
    at = text.find(old_s)
    while at >= 0:
        sites.append(at)
        at = text.find(old_s, at + len(old_s))
    new_text = text.replace(old_s, new_s)  # C-level; the same non-overlapping sites as the find loop
    return new_text, site_hunks(text, sites, old_s, new_s), len(sites)


async def _plan_file(
    agent: Agent | None, args: EditArgs, path: str, display: str, landing: Landing
) -> tuple[TextDocument, str, list[Hunk], int]:
    """(document read, new text, hunks, replacements) of the edit on the file as it is now, or a
    ToolError. Shared by the body and the approval preview, so both show the same hunks."""
    if args.old_string == "":
        raise ToolError(
            "old_string is empty. Give the exact text to replace; to create a file use write, and to "
            "insert text, include a neighbouring line in old_string and repeat it in new_string.",
            code="EMPTY_OLD_STRING",
        )
    if args.old_string == args.new_string:
        raise ToolError(
            "old_string and new_string are identical; there is nothing to change.", code="NO_CHANGE"
        )
    doc = await load_document(agent, path, display, landing)
    if doc is None:
        raise os_error(FileNotFoundError(errno.ENOENT, "not found", path), display, "edit")
    text = doc.text
    new_text, hunks, replacements = await run_blocking(lambda stop: _plan(text, args, display, stop))
    return doc, new_text, hunks, replacements


async def _execute(args: EditArgs, ctx: ToolRunContext) -> FileChange:
    cwd = session_cwd(ctx.agent)
    path = resolve(args.file_path, cwd)
    display = display_path(path, cwd)
    landing = landing_of(ctx.execution, path)
    doc, new_text, hunks, replacements = await _plan_file(ctx.agent, args, path, display, landing)

    def change_of(source: Literal["disk", "editor"]) -> FileChange:
        return FileChange(
            path=path,
            cwd=cwd,
            created=False,
            hunks=[HunkValue.of(h) for h in hunks],
            replacements=replacements,
            source=source,
            total_lines=count_lines(new_text),
        )

    commit = CommitReport(ctx, change_of, lambda change: _render(args, change))
    source = await save_document(ctx.agent, path, new_text, doc, display, landing, on_saved=commit)
    return commit.made(source)


async def _preview(args: EditArgs, execution: ToolExecution) -> object:
    """The approval card: every site's hunk, with context and line numbers, as the completed card will
    show them (a `replace_all` shows each replaced line, not the argument strings); and the file the path
    leads to now is pinned as the one the question is about (`landing`)."""
    agent = execution.agent
    cwd = session_cwd(agent)
    path = resolve(args.file_path, cwd)
    pin_landing(execution, path)
    landing = landing_of(execution, path)
    try:
        _doc, _new, hunks, _count = await _plan_file(agent, args, path, display_path(path, cwd), landing)
    except ToolError as exc:
        return change_preview_failure("Edit", args.file_path, cwd, exc)
    return change_preview_view("Edit", args.file_path, cwd, hunks)


def _render(_args: EditArgs, value: FileChange) -> str:
    display = display_path(value.path, value.cwd)
    n = value.replacements or 0
    head = f"Edited {display}: replaced {n} occurrence{'s' if n != 1 else ''}."
    return f"{head} The changed lines now read:\n{snippet(value)}"


def edit_tool(*, cwd: str | None = None) -> ToolDefinition:
    """The `edit` tool. `cwd`: the session cwd for call-card titles and diff paths (display only)."""

    def present_call(args: EditArgs) -> object:
        return change_call_view("Edit", args.file_path, cwd, args.old_string, args.new_string)

    def present_result(args: EditArgs, result: ToolResult) -> object:
        return change_result_view("Edit", args.file_path, cwd, result)

    return define_tool(
        name="edit",
        description=(
            "Replace exact text in a file: old_string must match the file exactly (indentation included) "
            "and be unique, unless replace_all is true. Read the file first. Line endings, encoding and the "
            "final newline are kept. Relative paths are taken from the working directory."
        ),
        parameters=EditArgs,
        output=Output(type=FileChange, render=_render, presentation_meta=change_meta),
        execute=_execute,
        timeout_ms=60_000,
        concurrency_safe=False,
        present_call=present_call,
        present_result=present_result,
        preview_call=_preview,
    )
