"""Small tools the bridge tests load into a real bridge (`--extra-tools tests.support.bridge_tools:tools`).

- `nap`: sleeps `seconds`, concurrency-safe, returns its label (parallelism and timing); with `context`,
  it also defers that text as a context message for the model (`ctx.defer_context`); with `overlap`, the
  label is followed by the most naps this process had running at once so far (" peak=N");
- `chatter`: a terminal card that reports `chunks` chunks of `size` characters as live progress (coalescing);
- `explode`: its presenter raises (a generic card must still appear and the turn go on);
- `stubborn`: ignores cancellation for `seconds` (the bridge must still answer a cancel promptly).

A test that runs them in process passes `Starts` to `tools()` and awaits `starts.next()` to know a call's body
is running, instead of sleeping and hoping it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from registry_core import (
    ContextMessage,
    GenericCallView,
    Output,
    TerminalCallView,
    TerminalOutputProgress,
    TerminalResultView,
    TextBlock,
    ToolDefinition,
    ToolRunContext,
    define_tool,
)


class Starts:
    """The call ids of the test tools' bodies as each begins, in order."""

    def __init__(self) -> None:
        self._started: asyncio.Queue[str] = asyncio.Queue()

    def record(self, call_id: str) -> None:
        self._started.put_nowait(call_id)

    async def next(self, within: float = 5.0) -> str:
        """The id of the next call whose body began (waiting at most `within` seconds for it)."""
        return await asyncio.wait_for(self._started.get(), within)


Body = Callable[[Any, ToolRunContext], Awaitable[str]]


def _announced(body: Body, starts: Starts | None) -> Body:
    if starts is None:
        return body

    async def run(args: Any, ctx: ToolRunContext) -> str:
        starts.record(ctx.call_id)
        return await body(args, ctx)

    return run


class NapArgs(BaseModel):
    seconds: float = 0.0
    label: str = "nap"
    context: str | None = None
    overlap: bool = False


class ChatterArgs(BaseModel):
    chunks: int = 10
    size: int = 100
    pause: float = 0.0


class ExplodeArgs(BaseModel):
    x: int = 0


_napping = {"now": 0, "peak": 0}


async def _nap(args: NapArgs, ctx: ToolRunContext) -> str:
    _napping["now"] += 1
    _napping["peak"] = max(_napping["peak"], _napping["now"])
    try:
        await asyncio.sleep(args.seconds)
    finally:
        _napping["now"] -= 1
    if args.context is not None:
        ctx.defer_context(ContextMessage((TextBlock(args.context),)))
    return f"{args.label} peak={_napping['peak']}" if args.overlap else args.label


async def _chatter(args: ChatterArgs, ctx: ToolRunContext) -> str:
    for i in range(args.chunks):
        ctx.progress(TerminalOutputProgress(data=str(i % 10) * args.size))
        if args.pause:
            await asyncio.sleep(args.pause)
        elif i % 50 == 0:
            await asyncio.sleep(0)
    return f"{args.chunks * args.size} characters"


async def _explode(args: ExplodeArgs, ctx: ToolRunContext) -> str:
    return "fine"


async def _stubborn(args: NapArgs, ctx: ToolRunContext) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.seconds
    while loop.time() < deadline:
        try:
            await asyncio.sleep(deadline - loop.time())
        except asyncio.CancelledError:
            continue  # deliberately misbehaving: a tool that does not stop when asked
    return "finally"


def _boom(args: ExplodeArgs) -> GenericCallView:
    raise RuntimeError("presenter bug")


def tools(starts: Starts | None = None) -> list[ToolDefinition]:
    return [
        define_tool(
            name="nap",
            description="Sleep a while.",
            parameters=NapArgs,
            output=Output(str, render=lambda args, value: value),
            execute=_announced(_nap, starts),
            concurrency_safe=True,
            present_call=lambda args: GenericCallView(title=f"Nap {args.label}", kind="other"),
        ),
        define_tool(
            name="chatter",
            description="Print a lot.",
            parameters=ChatterArgs,
            output=Output(str, render=lambda args, value: value),
            execute=_announced(_chatter, starts),
            present_call=lambda args: TerminalCallView(title=f"chatter {args.chunks}x{args.size}"),
            present_result=lambda args, result: TerminalResultView(output="(done)", exit_code=0),
        ),
        define_tool(
            name="explode",
            description="A tool whose card presenter fails.",
            parameters=ExplodeArgs,
            output=Output(str, render=lambda args, value: value),
            execute=_announced(_explode, starts),
            present_call=_boom,
        ),
        define_tool(
            name="stubborn",
            description="Ignores cancellation.",
            parameters=NapArgs,
            output=Output(str, render=lambda args, value: value),
            execute=_announced(_stubborn, starts),
        ),
    ]
