"""`write`: create or overwrite a text file, and its `diff` cards.

- A create shows the whole file (oldText None); an overwrite shows the applied hunks of a real line diff
  (`diffs.line_diff_hunks`, 3 context lines). The approval shows the same hunks (`preview_call`, against
  the file as it is when the user is asked): an overwrite is never presented as a create.
- An overwrite keeps the file's encoding (BOM), permission bits, and CRLF line endings: content sent with
  bare "\\n" into a CRLF file is converted, since models write "\\n" whatever the file uses. Writing the
  same content again changes nothing on disk.
- Writes are atomic (`fs_access.atomic_write`) or go through the editor service when the host has one;
  a change made is reported to the host's commit journal at once (`changes.report_commit`).

Must not: overwrite a binary or non-UTF-8 file (it would be destroyed), or a read-only file.
"""

from __future__ import annotations

from dataclasses import dataclass
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
)
from .diffs import Hunk, count_lines, create_hunk, line_diff_hunks
from .disk import Landing
from .fs_access import TextDocument, load_document, save_document
from .landing import landing_of, pin_landing
from .paths import display_path, resolve, session_cwd
from .runtime import run_blocking
from .text_encoding import uses_crlf


class WriteArgs(BaseModel):
    file_path: str = Field(description="The file to write: absolute, or relative to the working directory.")
    content: str = Field(description="The complete new content of the file.")


@dataclass(frozen=True, slots=True)
class _WritePlan:
    """What a write would do to the file as it is now: the document read, the content as it would be
    written (line endings adapted), and the hunks (none: the file already has this content)."""

    old: TextDocument | None
    content: str
    hunks: list[Hunk]


async def _plan(agent: Agent | None, path: str, display: str, content: str, landing: Landing) -> _WritePlan:
    """The write's plan, shared by the body and the approval preview so both show the same hunks."""
    old = await load_document(agent, path, display, landing)
    if old is not None and "\r\n" not in content and uses_crlf(old.text):
        content = content.replace("\n", "\r\n")
    if old is not None and old.text == content:
        return _WritePlan(old, content, [])
    old_text = old.text if old is not None else None
    hunks = await run_blocking(
        lambda _stop: [create_hunk(content)] if old_text is None else line_diff_hunks(old_text, content)
    )
    return _WritePlan(old, content, hunks)


async def _execute(args: WriteArgs, ctx: ToolRunContext) -> FileChange:
    cwd = session_cwd(ctx.agent)
    path = resolve(args.file_path, cwd)
    display = display_path(path, cwd)
    landing = landing_of(ctx.execution, path)
    plan = await _plan(ctx.agent, path, display, args.content, landing)
    old = plan.old

    def change_of(source: Literal["disk", "editor"]) -> FileChange:
        return FileChange(
            path=path,
            cwd=cwd,
            created=old is None,
            hunks=[HunkValue.of(h) for h in plan.hunks],
            source=source,
            total_lines=count_lines(plan.content),
        )

    if not plan.hunks:
        return change_of(old.source if old is not None else "disk")
    commit = CommitReport(ctx, change_of, lambda change: _render(args, change))
    source = await save_document(ctx.agent, path, plan.content, old, display, landing, on_saved=commit)
    return commit.made(source)


async def _preview(args: WriteArgs, execution: ToolExecution) -> object:
    """The approval card: the hunks this write would apply to the file as it is now (see `changes`); and
    the file the path leads to now is pinned as the one the question is about (`landing`)."""
    agent = execution.agent
    cwd = session_cwd(agent)
    path = resolve(args.file_path, cwd)
    pin_landing(execution, path)
    try:
        plan = await _plan(agent, path, display_path(path, cwd), args.content, landing_of(execution, path))
    except ToolError as exc:
        return change_preview_failure("Write", args.file_path, cwd, exc)
    return change_preview_view("Write", args.file_path, cwd, plan.hunks)


def _render(_args: WriteArgs, value: FileChange) -> str:
    display = display_path(value.path, value.cwd)
    if value.created:
        return f"Created {display} ({value.total_lines} lines)."
    if not value.hunks:
        return f"{display} already had exactly this content; nothing changed."
    return f"Wrote {display} ({value.total_lines} lines; {len(value.hunks)} changed region(s))."


def write_tool(*, cwd: str | None = None) -> ToolDefinition:
    """The `write` tool. `cwd`: the session cwd for call-card titles and diff paths (display only)."""

    def present_call(args: WriteArgs) -> object:
        return change_call_view("Write", args.file_path, cwd, None, args.content)

    def present_result(args: WriteArgs, result: ToolResult) -> object:
        return change_result_view("Write", args.file_path, cwd, result)

    return define_tool(
        name="write",
        description=(
            "Create a file, or overwrite one with new complete content (parent directories are created). "
            "Prefer edit for changing part of an existing file. Relative paths are taken from the working "
            "directory."
        ),
        parameters=WriteArgs,
        output=Output(type=FileChange, render=_render, presentation_meta=change_meta),
        execute=_execute,
        timeout_ms=60_000,
        concurrency_safe=False,
        present_call=present_call,
        present_result=present_result,
        preview_call=_preview,
    )
