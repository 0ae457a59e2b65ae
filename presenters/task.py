"""`task`: hand a side task to a subagent, a child agent loop with a context of its own, on the same model.

The contract:
- The arguments: `description` (a few words, the card's title), `prompt` (everything the subagent needs:
  it sees nothing of the conversation) and `tools`, optionally, the names of the tools it may use. By
  default it gets every tool the task's scope shows but `NOT_FOR_SUBAGENTS`: `task` itself (no nesting:
  a subagent never starts subagents, so a runaway model cannot fork without bound) and `todo_write` (the
  plan the user sees is the main agent's). An unknown name, or one of those, is an INVALID_ARGS error
  that lists what a subagent can be given. Code Mode's transport is never among them.
- The tool runs nothing itself: the host's `SubagentRunner` (`agent.services["subagents"]`) runs the
  child's model loop and answers with its final text. Each call the child's model asks for comes back here
  (`SubagentRun.dispatch`) and is dispatched as a nested call (`nested_calls.NestedCalls`, label `task`:
  ids `<task id>:task:<n>`): the same policy, approvals, cancellation, logging and nested cards as Code
  Mode's sub-calls. Calls of one child step run at once where their tools allow it (`MAX_PARALLEL`).
- The result: the child's final answer, with how many steps and calls it took; the answer of a child
  stopped by the step limit says so. A model failure fails the call (TOOL_FAILED, with the reason).
  Cancelling the call (the user's cancel) stops the child's model stream and every call it has running.
- `task` is concurrency-safe: several tasks of one step run at once, each child on its own.

Must not: give a child a tool it was not given, let a child see the parent's conversation, or be called
as another tool's nested call (a program's sub-call: its cards would nest two levels down).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from registry_core import (
    INTERNAL,
    INVALID_ARGS,
    CancelSignal,
    ContentText,
    GenericCallView,
    GenericResultView,
    NestedTool,
    Output,
    StatusProgress,
    ToolDefinition,
    ToolError,
    ToolExecutionResult,
    ToolResult,
    ToolRunContext,
    content_text,
    define_tool,
)

from .cards import failure_card
from .nested_calls import NestedCalls, calls_phrase

NAME: Final = "task"
SUBAGENTS_SERVICE: Final = "subagents"
# Tools a subagent is never given (see the module docstring).
NOT_FOR_SUBAGENTS: Final = frozenset({NAME, "todo_write"})
MAX_PARALLEL: Final = 8
# Stop reasons of a child's loop (`SubagentAnswer.stop`), as a turn's.
STEP_LIMIT: Final = "max_turn_requests"

_DESCRIPTION: Final = (
    "Hand a self-contained task to a subagent: a separate agent with a fresh context (it sees none of this "
    "conversation, only your prompt) and the same tools (by default all but task and todo_write). It works "
    "on its own, its calls shown to the user and approved like yours, and returns its final answer as this "
    "call's result. Use it for a broad search or investigation whose details you don't need to keep (\"find "
    'every place that builds a request and say how each handles timeouts"), or for independent pieces of '
    "work: several task calls in one step run at the same time. Don't use it for a single read or search "
    "(call the tool yourself), or for work that needs this conversation's context. The prompt must say "
    "everything: the goal, the files or places to start from, what to change or only to report, and what to "
    "answer with."
)


@dataclass(frozen=True, slots=True)
class SubagentRun:
    """One task as the host's runner gets it: the child's prompt and tools, the task's signal (a cancel
    stops the child), `dispatch(name, arguments)`, which runs one call the child's model asked for as a
    nested call of the task and answers with its result (a refusal too: never raises for the call), and
    `progress(line)`, what the child is doing now ("Step 3"), shown on the task's card while it runs."""

    call_id: str
    description: str
    prompt: str
    tools: tuple[NestedTool, ...]
    signal: CancelSignal
    dispatch: Callable[[str, Any], Awaitable[ToolExecutionResult]]
    progress: Callable[[str], None] = lambda _line: None


@dataclass(frozen=True, slots=True)
class SubagentAnswer:
    """What a child's loop ended with: its last text, its steps, and why it stopped (`end_turn`, or a
    turn's other stop reasons: `max_turn_requests` for the step limit)."""

    text: str
    steps: int
    stop: str = "end_turn"


class SubagentRunner(Protocol):
    """`agent.services["subagents"]`: runs a child's model loop (the bridge's `turn.subagent`). Raises
    `ToolError` when the model fails; a cancel of `run.signal` propagates as the task's cancellation."""

    async def run(self, run: SubagentRun) -> SubagentAnswer: ...


def task_tool() -> ToolDefinition:
    """The `task` tool."""
    return define_tool(
        name=NAME,
        description=_DESCRIPTION,
        parameters={
            "description": {
                "type": "string",
                "required": True,
                "description": "The task in 3-8 words (shown to the user as the card's title).",
            },
            "prompt": {
                "type": "string",
                "required": True,
                "description": "The subagent's whole instructions: goal, context, where to look, what to "
                "return. It sees nothing else.",
            },
            "tools": {
                "type": "array",
                "items": {"type": "string"},
                "description": 'Only these tools for the subagent (e.g. ["read", "grep", "glob"] for a '
                "read-only investigation); all of yours but task and todo_write when omitted.",
            },
        },
        output=Output(type=_OUTPUT, render=_render),
        execute=_execute,
        concurrency_safe=True,  # each task runs its own child; their calls are each decided on their own
        present_call=_call_view,
        present_result=_result_view,
    )


_OUTPUT: Final = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "answer": {"type": "string", "required": True},
        "steps": {"type": "integer", "required": True},
        "calls": {"type": "integer", "required": True},
        "failed_calls": {"type": "integer", "required": True},
        "stop": {"type": "string", "required": True},
    },
}


def subagent_tools(available: Sequence[NestedTool], requested: Sequence[str] | None) -> list[NestedTool]:
    """The tools of a child: `requested` (in their order, each once) among what a subagent can be given of
    `available`, else all of those. Raises `ToolError(INVALID_ARGS)` naming each name it cannot have."""
    allowed = {tool.name: tool for tool in available if tool.name not in NOT_FOR_SUBAGENTS}
    if requested is None:
        return list(allowed.values())
    wrong = [name for name in dict.fromkeys(requested) if name not in allowed]
    if wrong:
        shown = ", ".join(f"`{name}`" for name in wrong)
        why = (
            "a subagent cannot start subagents or write the plan"
            if set(wrong) <= NOT_FOR_SUBAGENTS
            else "no such tool in this session"
        )
        raise ToolError(
            f"tools: a subagent cannot be given {shown} ({why}). It can be given: "
            + ", ".join(sorted(allowed)) + ".",
            code=INVALID_ARGS,
        )  # fmt: skip
    return [allowed[name] for name in dict.fromkeys(requested)]


async def _execute(args: Any, ctx: ToolRunContext) -> dict[str, Any]:
    if ctx.execution.parent is not None:
        raise ToolError("task cannot be called from inside another call (a program's, a subagent's).",
                        code=INVALID_ARGS)  # fmt: skip
    nested = ctx.nested
    services = ctx.agent.services if ctx.agent is not None else {}
    runner = services.get(SUBAGENTS_SERVICE)
    if nested is None or runner is None:
        raise ToolError("This host runs no subagents: the task tool cannot be used here.", code=INTERNAL)
    description, prompt = args["description"], args["prompt"]
    if not prompt.strip():
        raise ToolError("prompt is empty: write the subagent's whole brief (it sees nothing else).",
                        code=INVALID_ARGS)  # fmt: skip
    requested = args.get("tools")
    tools = subagent_tools(nested.nested_tools(), list(requested) if requested is not None else None)
    calls = NestedCalls(
        ctx, nested, frozenset(tool.name for tool in tools), label="task", max_parallel=MAX_PARALLEL,
        refusal="is not a tool this subagent was given",
    )  # fmt: skip
    try:
        answer = await runner.run(
            SubagentRun(
                ctx.call_id, description, prompt, tuple(tools), ctx.signal, calls.call,
                lambda line: ctx.progress(StatusProgress(message=line)),
            )
        )  # fmt: skip
    finally:
        calls.close()
    made, failed = calls.counts()
    return {"answer": answer.text, "steps": answer.steps, "calls": made, "failed_calls": failed,
            "stop": answer.stop}  # fmt: skip


def _render(_args: Any, value: Any) -> str:
    answer = value["answer"].strip() or "(The subagent gave no final answer.)"
    steps = value["steps"]
    tail = f"(The subagent took {steps} step{'s' if steps != 1 else ''} and made "
    tail += f"{calls_phrase(value['calls'], value['failed_calls'])}.)"
    if value["stop"] == STEP_LIMIT:
        tail += " It stopped at the step limit before it finished: its answer may be incomplete."
    elif value["stop"] != "end_turn":
        tail += f" It stopped early ({value['stop']}): its answer may be incomplete."
    return f"{answer}\n\n{tail}"


# --- cards ----------------------------------------------------------------------------------------


def _title(args: Any) -> str:
    description = args.get("description") if hasattr(args, "get") else None
    if isinstance(description, str) and description.strip():
        return description.strip()
    return "Subagent task"


def _prompt_block(args: Any) -> ContentText:
    prompt = args.get("prompt") if hasattr(args, "get") else None
    return ContentText(text=prompt if isinstance(prompt, str) and prompt else "(no prompt)")


def _call_view(args: Any) -> GenericCallView:
    return GenericCallView(title=_title(args), kind="think", content=(_prompt_block(args),))


def _result_view(args: Any, result: ToolResult) -> GenericResultView:
    if result.is_error:
        failed = failure_card(_title(args), result)
        return GenericResultView(title=failed.title, content=(_prompt_block(args), *(failed.content or ())))
    return GenericResultView(
        title=_title(args), content=(_prompt_block(args), ContentText(text=content_text(result.content)))
    )
