"""Small tool factories shared by the registry tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from registry_core import Agent, TextBlock, ToolDefinition, ToolOutputDefinition, ToolRunContext

ANY_OBJECT: dict[str, Any] = {"type": "object"}


def raw_tool(
    name: str,
    body: Callable[[Any, ToolRunContext], Awaitable[Any]] | None = None,
    *,
    output_schema: dict[str, Any] | None = None,
    **kwargs: Any,
) -> ToolDefinition:
    async def default_body(args: Any, ctx: ToolRunContext) -> Any:
        return {"ok": True}

    return ToolDefinition(
        name=name,
        description=f"the {name} tool",
        parameters=kwargs.pop("parameters", ANY_OBJECT),
        output=ToolOutputDefinition(
            schema=output_schema if output_schema is not None else {},
            render=kwargs.pop("render", lambda args, value: (TextBlock(f"{name}: {value!r}"),)),
            presentation_meta=kwargs.pop("presentation_meta", None),
        ),
        execute=body or default_body,
        **kwargs,
    )


AGENT = Agent(id="session-1", cwd="/tmp", roots=("/tmp",))
