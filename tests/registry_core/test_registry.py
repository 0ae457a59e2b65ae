from __future__ import annotations

from dataclasses import replace

import pytest

from registry_core import RegistrationError, ToolRegistry, ToolRestriction
from tests.support.raw_tools import raw_tool


def test_register_returns_a_disposer_and_rejects_duplicates() -> None:
    registry = ToolRegistry()
    dispose = registry.register(raw_tool("a"))
    assert registry.get("a") is not None
    with pytest.raises(RegistrationError, match="already registered"):
        registry.register(raw_tool("a"))
    dispose()
    assert registry.get("a") is None
    registry.register(raw_tool("a"))  # the name is free again


def test_schemas_is_an_explicit_allowlist() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("a", timeout_ms=10, is_concurrency_safe=lambda args: True))
    (schema,) = registry.schemas()
    assert set(schema) == {"name", "description", "parameters"}
    schema["parameters"]["mutated"] = True
    assert "mutated" not in registry.get("a").parameters  # type: ignore[union-attr]


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), True, "5"])
def test_timeouts_must_be_positive_and_finite(timeout: object) -> None:
    with pytest.raises(RegistrationError, match="timeout_ms"):
        ToolRegistry().register(raw_tool("a", timeout_ms=timeout))


def test_output_schema_is_checked_at_registration() -> None:
    with pytest.raises(RegistrationError, match="output schema"):
        ToolRegistry().register(raw_tool("a", output_schema={"type": "string", "pattern": "x"}))


def test_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(RegistrationError, match="parameters"):
        ToolRegistry().register(raw_tool("a", parameters={"type": "array"}))


def test_restrictions_intersect_over_the_global_layer() -> None:
    registry = ToolRegistry()
    for name in ("read", "write", "bash"):
        registry.register(raw_tool(name))
    scope = registry.scope([ToolRestriction.of(allow=["read", "write"]), ToolRestriction.of(deny=["write"])])
    assert scope.names() == ["read"]
    assert scope.get("bash") is None
    deny_only = registry.scope([ToolRestriction.of(deny=["bash"])])
    registry.register(raw_tool("grep"))  # a later global is admitted by a deny-only filter
    assert deny_only.names() == ["read", "write", "grep"]
    allow_list = registry.scope([ToolRestriction.of(allow=["read"])])
    assert "grep" not in allow_list.names()


def test_scope_local_tools_overlay_and_ignore_restrictions() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("read"))
    scope = registry.scope([ToolRestriction.of(allow=[])])
    local = replace(raw_tool("read"), description="local read")
    dispose = scope.register(local)
    assert scope.get("read") is local
    assert [s["description"] for s in scope.schemas()] == ["local read"]
    dispose()
    assert scope.get("read") is None  # the global is still filtered out
    assert registry.get("read") is not None
