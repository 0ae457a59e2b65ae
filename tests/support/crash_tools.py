"""An `--extra-tools` module for the exit-path tests: `crash` raises SystemExit from inside its body, which
no layer of the bridge catches (tools' failures are `Exception`s), so the bridge dies of an exception
with its tools' processes and scratch files still around."""

from __future__ import annotations

from pydantic import BaseModel

from registry_core import Output, ToolDefinition, ToolRunContext, define_tool


class CrashArgs(BaseModel):
    code: int = 3


async def _crash(args: CrashArgs, ctx: ToolRunContext) -> str:
    raise SystemExit(args.code)


def tools() -> list[ToolDefinition]:
    return [
        define_tool(
            name="crash",
            description="Kill the bridge with an uncaught exception.",
            parameters=CrashArgs,
            output=Output(str, render=lambda args, value: value),
            execute=_crash,
        )
    ]
