"""The registry_core addition these tools need: a body's `ToolError(meta=...)` becomes the failed
result's presentation meta (frozen; dropped when it is not lossless JSON)."""

from __future__ import annotations

from pydantic import BaseModel

from registry_core import Output, ToolError, ToolExecutionInput, ToolRegistry, ToolRunContext, define_tool


class Args(BaseModel):
    meta: str = "json"


async def body(args: Args, ctx: ToolRunContext) -> str:
    meta = {"partial": "output", "n": [1, 2]} if args.meta == "json" else {"bad": object()}
    raise ToolError("it failed", code="CUSTOM", meta=meta)


def render(_args: Args, value: str) -> str:
    return value


async def test_tool_error_meta_reaches_the_failed_result() -> None:
    registry = ToolRegistry()
    registry.register(
        define_tool(
            name="t", description="", parameters=Args, output=Output(type=str, render=render), execute=body
        )
    )

    kept = await registry.execute(ToolExecutionInput("1", "t", {}))
    dropped = await registry.execute(ToolExecutionInput("2", "t", {"meta": "not json"}))

    assert kept.is_error and kept.error is not None and kept.error.code == "CUSTOM"
    assert kept.meta == {"partial": "output", "n": (1, 2)}
    assert dropped.is_error and dropped.meta is None and dropped.error is not None
    assert dropped.error.message == "it failed"
