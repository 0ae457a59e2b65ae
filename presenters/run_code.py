"""`run_code`: Code Mode's reserved transport. The model writes a TypeScript program; the program calls the
session's other tools as async functions; every such call is a full registry dispatch of its own.

The contract:
- The program runs in Deno with every permission denied (`deno_sandbox`): it can act only through the
  tools. Its functions are exactly the tools its call's scope shows (`ToolRunContext.nested`), without
  the transport itself; a name it may not call is refused before anything is dispatched.
- Each call the program makes is dispatched through the registry as `ToolExecutionInput(parent=<this
  call's token>, call_id="<this call's id>:code:<n>")`, n counting from 1 in the order the calls arrive:
  policy, permission questions, guards, wrappers, timeouts, cancellation and result observers apply as
  to any call. The program gets the call's structured value, or a `ToolError` with its message.
- Before a call is dispatched, the host is told (`NestedCallProgress`, through this call's progress sink,
  which the sub-calls share), so it can show the sub-call's card first. Once it settled, it goes through
  the `tools/code-dispatch-log` waterfall and becomes a durable `tool/code-dispatch` event
  (`nested.log_code_dispatch`), before the program gets its answer.
- Calls run at once where their tools allow it (`parallel`), up to `MAX_PARALLEL`; an `exclusive` one
  waits for the calls before it and runs alone; calls start in the order they arrived.
- Contexts the sub-calls deferred reach the loop after this call's result, in call order; a sub-call's
  `concludes_turn` is forwarded only from its final (post-policy) success.
- The outcome: the value the program returns and what it printed (bounded) when it returns; a failure
  (TOOL_FAILED) saying why when it throws, overruns a limit or crashes, with what it printed and how many
  calls it made (those took effect). Cancelling the call kills the program and stops its running calls.

The cards: the call card shows the program as a TypeScript code block; the result card adds what it
returned or why it failed. The host draws the sub-calls (their own cards, and one line each on this card).

Must not: dispatch a call the program was not given, let the program choose a call id, or return before
every call the program made has settled.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any, Final

from registry_core import (
    INTERNAL,
    INVALID_ARGS,
    TOOL_FAILED,
    ContentText,
    ContextMessage,
    GenericCallView,
    GenericResultView,
    NestedDispatch,
    NestedTool,
    Output,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolRunContext,
    ToolSuccess,
    content_text,
    define_tool,
    thaw,
)

from .deno_sandbox import CallReply, ProgramOutcome, SandboxLimits, run_program
from .nested_calls import NestedCalls, calls_phrase
from .runtime import scratch_of
from .ts_signatures import declarations, is_binding

NAME: Final = "run_code"
LANGUAGE: Final = "typescript"
MAX_PARALLEL: Final = 8
# Tools a program is not given although its scope shows them: `task` runs a whole subagent (its own model
# loop and calls, nested under the task's card), which a program's one-level list of calls cannot hold.
NOT_IN_PROGRAMS: Final = frozenset({"task"})
MAX_CODE_CHARS: Final = 100_000
MAX_SHOWN_VALUE_CHARS: Final = 50_000  # of the returned value's JSON, in the model's result
MAX_VALUE_BYTES: Final = 1024 * 1024  # a larger return value fails the program (it should summarise)

_SUMMARY: Final = (
    "Run a TypeScript program that calls your other tools. The program is the body of an async function; "
    "each tool is an async function of it, taking the tool's arguments and returning the tool's result "
    "value (typed below). A call that fails or is rejected throws a ToolError (message, tool, code) the "
    "program may catch. Every call is a real tool call: shown to the user and asked about exactly as if "
    "you had made it yourself. The program itself can do nothing else: no files, network, environment "
    "variables or processes. Use it to chain several calls, or run many at once (Promise.all), in one "
    "step. `return` a JSON value: you get it back, with what the program printed (console.log). "
    "Limits: {own:g} s of the program's own time (time waiting for calls excluded), {heap} MiB of heap, "
    "{calls} calls."
)


def run_code_tool(*, limits: SandboxLimits = SandboxLimits()) -> ToolDefinition:  # noqa: B008 - frozen
    """The `run_code` tool. Register it as the registry's transport (`register(..., transport=True)`)."""
    summary = _SUMMARY.format(own=limits.own_time_s, heap=limits.heap_mb, calls=limits.max_calls)

    async def execute(args: Any, ctx: ToolRunContext) -> dict[str, Any]:
        return await _run(args, ctx, limits)

    def describe(tools: Sequence[NestedTool]) -> str:
        shown = [tool for tool in tools if tool.name not in NOT_IN_PROGRAMS]
        return f"{summary}\n\nThe functions:\n```ts\n{declarations(shown)}\n```"

    definition = define_tool(
        name=NAME,
        description=summary,
        parameters={
            "code": {
                "type": "string",
                "required": True,
                "description": "The program: TypeScript statements, the body of an async function "
                "(await calls, `return` the result).",
            },
            "description": {
                "type": "string",
                "description": "What the program does, in 5-10 words (shown to the user).",
            },
        },
        output=Output(type=_OUTPUT, render=_render),
        execute=execute,
        present_call=_call_view,
        present_result=_result_view,
    )
    return dataclasses.replace(definition, describe=describe)


_OUTPUT: Final = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "value": {"type": "json", "required": True},
        "output": {"type": "string", "required": True},
        "output_omitted": {"type": "integer", "required": True},
        "calls": {"type": "integer", "required": True},
        "failed_calls": {"type": "integer", "required": True},
    },
}


# --- the run ------------------------------------------------------------------------------------


async def _run(args: Any, ctx: ToolRunContext, limits: SandboxLimits) -> dict[str, Any]:
    code = args["code"]
    if len(code) > MAX_CODE_CHARS:
        raise ToolError(
            f"The program is too long ({len(code)} characters; at most {MAX_CODE_CHARS}).", code=INVALID_ARGS
        )
    nested = ctx.nested
    if nested is None:
        raise ToolError(
            "run_code ran outside a registry dispatch: it has no tools to give the program.", code=INTERNAL
        )
    names = [tool.name for tool in nested.nested_tools() if tool.name not in NOT_IN_PROGRAMS]
    calls = _SubCalls(ctx, nested, frozenset(names))
    scratch = scratch_of(ctx.agent)
    parent_dir = cache_dir = None
    if scratch is not None:
        with contextlib.suppress(OSError):
            parent_dir = scratch.path()
            cache_dir = os.path.join(parent_dir, "deno-cache")
    try:
        outcome = await run_program(
            program_module(code, names),
            names,
            calls.call,
            stop_calls=calls.stop,
            limits=limits,
            parent_dir=parent_dir,
            cache_dir=cache_dir,
        )
    except RuntimeError as exc:
        raise ToolError(f"The program could not be started: {exc}", code=INTERNAL) from exc
    finally:
        calls.forward(ctx)
    return _outcome_value(outcome, calls)


def program_module(code: str, names: Sequence[str]) -> str:
    """The module the sandbox imports: its default export runs `code` with each tool bound to its name.
    The program starts on the module's first line, so the line numbers of its errors are its own; it runs
    in a block of its own, so it may declare a name a tool binds."""
    bound = [name for name in names if is_binding(name)]
    binding = f"const {{ {', '.join(bound)} }} = tools; " if bound else ""
    return f"export default async function (tools: any) {{ {binding}{{ {code}\n}} }}\n"


def _outcome_value(outcome: ProgramOutcome, calls: _SubCalls) -> dict[str, Any]:
    made, failed = calls.counts()
    if outcome.ending == "returned":
        size = len(json.dumps(outcome.value, ensure_ascii=False).encode())
        if size <= MAX_VALUE_BYTES:
            return {
                "value": outcome.value,
                "output": outcome.output,
                "output_omitted": outcome.output_omitted,
                "calls": made,
                "failed_calls": failed,
            }
        error = (
            f"The program's return value is too large ({size} bytes of JSON; at most {MAX_VALUE_BYTES}): "
            "return a summary, or print the part that matters."
        )
    else:
        error = outcome.error or "The program failed."
    parts = [error]
    if made:
        parts.append(f"It made {calls_phrase(made, failed)} before it ended; they took effect.")
    if outcome.output:
        parts.append(f"It printed:\n{outcome.output.rstrip()}")
    raise ToolError("\n\n".join(parts), code=TOOL_FAILED)


def _render(_args: Any, value: Any) -> str:
    shown = json.dumps(thaw(value["value"]), ensure_ascii=False, indent=2)
    if len(shown) > MAX_SHOWN_VALUE_CHARS:
        shown = shown[:MAX_SHOWN_VALUE_CHARS] + f"\n… ({len(shown) - MAX_SHOWN_VALUE_CHARS} more characters)"
    parts = [f"The program returned:\n{shown}"]
    if value["output"]:
        parts.append(f"It printed:\n{value['output'].rstrip()}")
    if value["calls"]:
        parts.append(f"It made {calls_phrase(value['calls'], value['failed_calls'])}.")
    return "\n\n".join(parts)


class _SubCalls:
    """The calls of one program (`NestedCalls`), answered to the program as `CallReply`s."""

    def __init__(self, ctx: ToolRunContext, nested: NestedDispatch, visible: frozenset[str]) -> None:
        self.ctx = ctx
        self.calls = NestedCalls(ctx, nested, visible, label="code", max_parallel=MAX_PARALLEL)

    async def call(self, tool: str, args: Any) -> CallReply:
        result = await self.calls.call(tool, args)
        if isinstance(result, ToolSuccess):
            return CallReply(True, thaw(result.value))
        return CallReply(False, error=result.error.message, code=result.error.code)

    def stop(self) -> None:
        """The program ended (or was stopped): calls still running are cancelled."""
        self.calls.stop()

    def counts(self) -> tuple[int, int]:
        return self.calls.counts()

    def forward(self, ctx: ToolRunContext) -> None:
        """Defer the sub-calls' contexts in call order; forward an authoritative nested conclusion."""
        self.calls.close()
        results = self.calls.results
        for number in sorted(results):
            result = results[number]
            for context in result.additional_contexts:
                ctx.defer_context(_sourced(context, f"{NAME} {self.ctx.call_id}:code:{number}"))
            if isinstance(result, ToolSuccess) and result.concludes_turn:
                ctx.conclude_turn()


def _sourced(context: ContextMessage, source: str) -> ContextMessage:
    return context if context.source is not None else ContextMessage(context.content, source)


# --- cards ----------------------------------------------------------------------------------------


def _title(args: Any) -> str:
    description = args.get("description") if hasattr(args, "get") else None
    if isinstance(description, str) and description.strip():
        return description.strip()
    return "Run a program"


def _program_block(args: Any) -> ContentText:
    code = args.get("code") if hasattr(args, "get") else None
    return ContentText(text=fenced(code if isinstance(code, str) else "", LANGUAGE))


def fenced(text: str, language: str) -> str:
    """`text` in a Markdown code block whose fence no line of it can close."""
    longest = max((len(run) for run in _backtick_runs(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def _backtick_runs(text: str) -> list[str]:
    runs, current = [], ""
    for char in text:
        if char == "`":
            current += char
        elif current:
            runs.append(current)
            current = ""
    if current:
        runs.append(current)
    return runs


def _call_view(args: Any) -> GenericCallView:
    return GenericCallView(title=_title(args), kind="execute", content=(_program_block(args),))


def _result_view(args: Any, result: ToolResult) -> GenericResultView:
    outcome = content_text(result.content)
    return GenericResultView(title=_title(args), content=(_program_block(args), ContentText(text=outcome)))
