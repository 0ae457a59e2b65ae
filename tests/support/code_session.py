"""A registry with the built-in tools, `run_code` as its transport and a few test tools, to run programs
in process: every sub-call, every durable `tool/code-dispatch` event and every progress report is kept."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from presenters import build_tools
from presenters.deno_sandbox import SandboxLimits
from presenters.run_code import run_code_tool
from presenters.runtime import SCRATCH_SERVICE, ScratchDir
from registry_core import (
    NEVER,
    Agent,
    CancelSignal,
    CodeDispatchEvent,
    ContextMessage,
    TextBlock,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolOutputDefinition,
    ToolRegistry,
    ToolRunContext,
    ToolScope,
    content_text,
)

FAST = SandboxLimits(own_time_s=10.0, cpu_s=10)


def tool(name: str, body: Callable[[Any, ToolRunContext], Awaitable[Any]], **kwargs: Any) -> ToolDefinition:
    """A raw test tool taking any object and returning any JSON value."""
    return ToolDefinition(
        name=name,
        description=f"the {name} test tool",
        parameters={"type": "object"},
        output=ToolOutputDefinition(schema={}, render=lambda _args, value: (TextBlock(f"{name}: {value}"),)),
        execute=body,
        **kwargs,
    )


@dataclass
class CodeSession:
    registry: ToolRegistry
    agent: Agent
    scope: ToolScope
    results: list[tuple[ToolExecution, ToolExecutionResult]] = field(default_factory=list)
    dispatches: list[CodeDispatchEvent] = field(default_factory=list)
    progress: list[tuple[str, Any]] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)  # test tools whose body ran, in order
    hanging: asyncio.Event = field(default_factory=asyncio.Event)  # the `hang` tool's body started

    async def run(
        self, code: str, *, signal: CancelSignal = NEVER, call_id: str = "c1", scope: ToolScope | None = None
    ) -> ToolExecutionResult:
        return await (scope or self.scope).execute(
            ToolExecutionInput(
                call_id=call_id,
                name="run_code",
                arguments={"code": code},
                signal=signal,
                agent=self.agent,
                on_progress=lambda execution, update: self.progress.append((execution.call_id, update)),
            )
        )

    def nested(self) -> list[tuple[ToolExecution, ToolExecutionResult]]:
        return [(e, r) for e, r in self.results if e.parent is not None]


def make_code_session(
    tmp_path: Path, *, limits: SandboxLimits = FAST, extra: Sequence[ToolDefinition] = ()
) -> CodeSession:
    """The session's scratch directory is `tmp_path/scratch`: each program's run directory is made there."""
    registry = ToolRegistry()
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (tmp_path / "scratch").mkdir(exist_ok=True)
    scratch = ScratchDir(parent=lambda: str(tmp_path / "scratch"))
    agent = Agent(id="s1", cwd=str(work), roots=(str(work),), services={SCRATCH_SERVICE: scratch})
    session = CodeSession(registry, agent, registry.root)

    async def hang(_args: Any, ctx: ToolRunContext) -> Any:
        session.bodies.append("hang")
        session.hanging.set()
        await asyncio.Event().wait()  # until cancelled

    async def secret(_args: Any, _ctx: ToolRunContext) -> Any:
        session.bodies.append("secret")
        return "the secret"

    async def deferring(args: Any, ctx: ToolRunContext) -> Any:
        ctx.defer_context(ContextMessage((TextBlock(f"context {args.get('n')}"),)))
        return args.get("n")

    async def concluding(_args: Any, ctx: ToolRunContext) -> Any:
        ctx.conclude_turn()
        return "concluded"

    for definition in [
        *build_tools(),
        tool("hang", hang),
        tool("secret", secret),
        tool("deferring", deferring, is_concurrency_safe=lambda _args: True),
        tool("concluding", concluding),
        *extra,
    ]:
        registry.register(definition)
    registry.register(run_code_tool(limits=limits), transport=True)
    registry.on_result(lambda execution, result: session.results.append((execution, result)))
    registry.on_code_dispatch(lambda _execution, event: session.dispatches.append(event))
    return session


def run_dirs(tmp_path: Path) -> list[Path]:
    """Program run directories left in the session's scratch directory (Deno's cache may stay)."""
    return list((tmp_path / "scratch").glob("*/run-code-*"))


def deno_processes() -> list[psutil.Process]:
    """This process's Deno descendants still alive (a finished program must leave none)."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "deno" in child.name() and child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.Error:
            continue
    return alive


def text(result: ToolExecutionResult) -> str:
    return content_text(result.content)
