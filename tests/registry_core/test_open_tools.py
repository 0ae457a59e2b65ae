"""Open tool sets: raw schemas a tool's own server enforces (MCP), and the `tools/change` event."""

from __future__ import annotations

from typing import Any

import pytest

from registry_core import (
    INVALID_ARGS,
    RegistrationError,
    ToolExecutionInput,
    ToolRegistry,
    ToolsChange,
)
from tests.support.raw_tools import raw_tool

# What MCP servers send (zod / pydantic generated): outside the enforced subset, yet valid JSON Schema.
SERVER_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1},
        "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["n"],
    "$defs": {"Unused": {"type": "string"}},
}


def test_an_open_schema_registers_and_reaches_the_model_as_sent() -> None:
    registry = ToolRegistry()
    with pytest.raises(RegistrationError, match="unsupported keyword"):
        registry.register(raw_tool("strict", parameters=SERVER_SCHEMA))
    registry.register(raw_tool("open", parameters=SERVER_SCHEMA, open_parameters=True))
    (schema,) = registry.schemas()
    assert schema["parameters"] == SERVER_SCHEMA


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "array"}, "root must be"),
        ({"properties": {}}, "root must be"),
        ({"type": "object", "default": float("nan")}, "not lossless JSON"),
    ],
)
def test_an_open_schema_still_has_an_object_root_of_plain_json(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(RegistrationError, match=problem):
        ToolRegistry().register(raw_tool("open", parameters=schema, open_parameters=True))


async def test_open_arguments_are_not_validated_but_must_be_an_object() -> None:
    seen: list[Any] = []

    async def body(args: Any, ctx: Any) -> Any:
        seen.append(args)
        return {"ok": True}

    registry = ToolRegistry()
    registry.register(raw_tool("open", body, parameters=SERVER_SCHEMA, open_parameters=True))
    ok = await registry.execute(ToolExecutionInput("c1", "open", {"n": "not an integer"}))
    assert not ok.is_error and seen == [{"n": "not an integer"}]  # the server judges its own schema
    for bad in ("[1, 2]", [1, 2]):
        refused = await registry.execute(ToolExecutionInput("c2", "open", bad))
        assert refused.is_error and refused.error is not None and refused.error.code == INVALID_ARGS


def test_registration_and_disposal_emit_tools_change_globally_and_per_scope() -> None:
    registry = ToolRegistry()
    changes: list[ToolsChange] = []
    registry.on_tools_change(changes.append)
    version = registry.tools_version
    dispose_global = registry.register(raw_tool("g"))
    scope = registry.scope()
    dispose_local = scope.register(raw_tool("s"))
    dispose_local()
    dispose_local()  # a second disposal changes nothing
    dispose_global()
    assert changes == [
        ToolsChange("g", True, None),
        ToolsChange("s", True, scope),
        ToolsChange("s", False, scope),
        ToolsChange("g", False, None),
    ]
    assert registry.tools_version == version + 4


def test_a_failing_tools_change_listener_does_not_fail_the_registration() -> None:
    registry = ToolRegistry()

    def broken(change: ToolsChange) -> None:
        raise RuntimeError("listener bug")

    registry.on_tools_change(broken)
    registry.register(raw_tool("a"))
    assert registry.get("a") is not None
