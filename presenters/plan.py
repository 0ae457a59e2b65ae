"""`todo_write`: the model's task list, validated; the bridge turns it into an ACP `plan` update.

Parameters follow Claude Code's TodoWrite: `todos`, each {content, status, priority?}; `id` and
`activeForm` (other harnesses' fields) are accepted and kept, so recorded sessions replay unchanged. The
whole list is replaced on every call (ACP plans are replaced whole too).

presentation_meta: {"todos": [{"content", "status": "pending" | "in_progress" | "completed",
"priority": "high" | "medium" | "low"}]} (priority defaults to medium) — exactly an ACP plan's entries.

Must not: keep state between calls (the list lives in the conversation and the client's plan view).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from registry_core import (
    ContentText,
    GenericCallView,
    GenericResultView,
    Output,
    ToolDefinition,
    ToolResult,
    ToolRunContext,
    define_tool,
)

from .cards import failure_card

Status = Literal["pending", "in_progress", "completed"]
Priority = Literal["high", "medium", "low"]
_MARK = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class Todo(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    content: str = Field(min_length=1, description="What to do, imperative (e.g. 'Run the tests').")
    status: Status = Field(description="pending, in_progress (one at a time) or completed.")
    priority: Priority = Field(default="medium", description="high, medium (default) or low.")
    id: str | None = Field(default=None, description="Optional stable id.")
    active_form: str | None = Field(
        default=None,
        alias="activeForm",
        description="Optional present-continuous form ('Running the tests').",
    )


class TodoArgs(BaseModel):
    todos: list[Todo] = Field(description="The complete, updated task list (it replaces the previous one).")


class TodoValue(BaseModel):
    todos: list[Todo]


async def _execute(args: TodoArgs, _ctx: ToolRunContext) -> TodoValue:
    return TodoValue(todos=args.todos)


def _checklist(todos: list[dict[str, Any]] | list[Todo]) -> str:
    lines = []
    for todo in todos:
        entry = todo.model_dump() if isinstance(todo, Todo) else todo
        lines.append(f"- {_MARK.get(str(entry.get('status')), '[ ]')} {entry.get('content', '')}")
    return "\n".join(lines)


def _render(_args: TodoArgs, value: TodoValue) -> str:
    counts = {s: sum(t.status == s for t in value.todos) for s in ("completed", "in_progress", "pending")}
    summary = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items() if n) or "empty"
    return f"Plan updated ({summary}):\n{_checklist(value.todos)}"


def _meta(_args: TodoArgs, value: TodoValue) -> dict[str, Any]:
    return {
        "todos": [{"content": t.content, "status": t.status, "priority": t.priority} for t in value.todos]
    }


def _call(_args: TodoArgs) -> GenericCallView:
    return GenericCallView(title="Update plan", kind="think")


def _result(_args: TodoArgs, result: ToolResult) -> GenericResultView:
    todos = result.meta.get("todos") if isinstance(result.meta, Mapping) else None
    if result.is_error or not isinstance(todos, (list, tuple)):
        return failure_card("Update plan", result)
    text = _checklist([dict(t) for t in todos]) or "(empty plan)"
    return GenericResultView(title="Update plan", content=(ContentText(text=text),))


def todo_write_tool() -> ToolDefinition:
    """The `todo_write` tool."""
    return define_tool(
        name="todo_write",
        description=(
            "Create or update your task list for the current work: send the complete list every time (it "
            "replaces the previous one). Use it for multi-step tasks; keep exactly one task in_progress "
            "while working, and mark tasks completed as soon as they are done."
        ),
        parameters=TodoArgs,
        output=Output(type=TodoValue, render=_render, presentation_meta=_meta),
        execute=_execute,
        concurrency_safe=False,  # two plan updates in one step must keep their order
        present_call=_call,
        present_result=_result,
    )
