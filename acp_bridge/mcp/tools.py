"""An MCP tool as a `ToolDefinition`: the server's schema as sent, the call's body, its cards.

The definition is registered in the session's `ToolScope` (never globally). Its parameters are an open
raw schema (`open_parameters`): the model sees it as the server sent it (local `$ref`s inlined, which
some model endpoints need: `schema_refs`), the registry checks only that
the arguments are a JSON object, and the server validates them. The body calls the tool through its
server (`ToolCaller`, which restarts a crashed server and reports progress); an `isError: true` result
fails the call with the server's message; anything else becomes the bounded value of
`content.bound_result`, rendered for the model by `content.model_content`. The result meta carries what
the cards need (the server, the tool, the kind, the card layout, the structured content), so a replay
draws the same cards. The call runs in parallel with its step's other calls unless the tool says it is
destructive.

Must not: import the MCP SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from registry_core import (
    JsonValue,
    ToolDefinition,
    ToolError,
    ToolOutputDefinition,
    ToolRunContext,
    thaw,
)

from .content import bound_result, error_message, model_content
from .present import ToolFacts, call_view, result_view
from .schema_refs import inline_local_refs

CALL_TIMEOUT_MS: Final = 10 * 60 * 1000


class ToolCaller(Protocol):
    async def call(
        self, facts: ToolFacts, arguments: Mapping[str, Any], ctx: ToolRunContext
    ) -> dict[str, Any]:
        """The `CallToolResult` as JSON. Raises ToolError when the server cannot answer."""
        ...


def description_of(server: str, tool: Mapping[str, Any]) -> str:
    """The model-facing description: the tool's title and description, and whose tool it is."""
    title, text = tool.get("title"), tool.get("description")
    parts = [str(p).strip() for p in (title, text) if isinstance(p, str) and p.strip()]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    body = ". ".join(parts) if parts else f"The `{tool.get('name')}` tool."
    return f"{body} (MCP server `{server}`.)"


def parameters_of(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The input schema as sent, its local `$ref`s inlined (`schema_refs`); one without a `type` gets
    `object`, the only root MCP allows."""
    schema = tool.get("inputSchema")
    schema = inline_local_refs(schema) if isinstance(schema, Mapping) else {}
    schema.setdefault("type", "object")
    return schema


def build_definition(
    name: str,
    facts: ToolFacts,
    tool: Mapping[str, Any],
    caller: ToolCaller,
    timeout_ms: float = CALL_TIMEOUT_MS,
) -> ToolDefinition:
    """The definition of one tool of one server, registered as `name`."""
    base_meta = facts.meta()

    async def execute(args: Any, ctx: ToolRunContext) -> JsonValue:
        # A cancelled or timed-out call keeps its card's title and kind.
        ctx.set_partial_meta(base_meta)
        arguments = thaw(args)
        raw = await caller.call(facts, arguments if isinstance(arguments, dict) else {}, ctx)
        if raw.get("isError") is True:
            raise ToolError(error_message(raw), meta=base_meta)
        return bound_result(raw)

    # The registry renders the content, then the meta, of the same value, one right after the other.
    last: list[Any] = [None, None]

    def rendered(value: JsonValue) -> tuple[dict[str, Any], Any]:
        if last[0] is not value:
            mapping = _mapping(value)
            last[:] = [value, (mapping, model_content(mapping))]
        result: tuple[dict[str, Any], Any] = last[1]
        return result

    def render(_args: Any, value: JsonValue) -> Any:
        return rendered(value)[1][0]

    def presentation_meta(_args: Any, value: JsonValue) -> JsonValue:
        mapping, (_blocks, layout) = rendered(value)
        last[:] = [None, None]
        meta: dict[str, Any] = dict(base_meta)
        meta["layout"] = layout
        if mapping.get("structuredContent") is not None:
            meta["structured"] = mapping["structuredContent"]
        return meta

    return ToolDefinition(
        name=name,
        description=description_of(facts.server, tool),
        parameters=parameters_of(tool),
        output=ToolOutputDefinition(schema={}, render=render, presentation_meta=presentation_meta),
        execute=execute,
        timeout_ms=timeout_ms,
        is_concurrency_safe=lambda _args: not facts.exclusive,
        present_call=lambda args: call_view(facts, args),
        present_result=lambda args, result: result_view(facts, args, result),
        open_parameters=True,
    )


def _mapping(value: Any) -> dict[str, Any]:
    thawed = thaw(value)
    return thawed if isinstance(thawed, dict) else {}
