"""The registry's part of Code Mode, without a sandbox: the reserved transport (never hidden by a
restriction, never callable by a nested call, described from its scope), the scope a body gets for
nested dispatches, the `tools/code-dispatch-log` waterfall and the durable `tool/code-dispatch` event."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from registry_core import (
    CodeDispatchEvent,
    CodeDispatchLog,
    ContentBlock,
    Deny,
    NestedTool,
    TextBlock,
    ToolExecution,
    ToolExecutionInput,
    ToolFailureInfo,
    ToolRegistry,
    ToolRestriction,
    ToolRunContext,
    content_text,
    snapshot,
)
from tests.support.raw_tools import AGENT, raw_tool


def _transport(registry: ToolRegistry, seen: list[Any]) -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        assert ctx.nested is not None
        seen.append([tool.name for tool in ctx.nested.nested_tools()])
        nested = await ctx.nested.execute(
            ToolExecutionInput(
                call_id=f"{ctx.call_id}:code:1",
                name=args["tool"],
                arguments={},
                agent=ctx.agent,
                parent=ctx.token,
            )
        )
        return {"isError": nested.is_error, "text": content_text(nested.content)}

    def describe(tools: Sequence[NestedTool]) -> str:
        return "can call: " + ", ".join(tool.name for tool in tools)

    registry.register(replace(raw_tool("run_code", body), describe=describe), transport=True)


def test_no_restriction_hides_the_transport_and_no_nested_call_sees_it() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("read"))
    registry.register(raw_tool("bash"))
    _transport(registry, [])
    scope = registry.root.restricted(ToolRestriction.of(allow=["read"])).restricted(
        ToolRestriction.of(deny=["run_code"])
    )
    assert scope.names() == ["read", "run_code"]
    assert [tool.name for tool in scope.nested_tools()] == ["read"]
    (_, described) = scope.schemas()
    assert described["description"] == "can call: read"
    assert registry.is_transport("run_code") and not registry.is_transport("read")


def test_a_description_that_fails_falls_back_to_the_static_one() -> None:
    registry = ToolRegistry()

    def broken(_tools: Sequence[NestedTool]) -> str:
        raise RuntimeError("no")

    registry.register(replace(raw_tool("run_code"), describe=broken), transport=True)
    assert registry.schemas()[0]["description"] == "the run_code tool"


def test_the_tool_list_is_built_once_per_tools_version_and_handed_out_as_fresh_copies() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("read"))
    described: list[list[str]] = []

    def describe(tools: Sequence[NestedTool]) -> str:
        described.append([tool.name for tool in tools])
        return "can call: " + ", ".join(tool.name for tool in tools)

    registry.register(replace(raw_tool("run_code"), describe=describe), transport=True)
    scope = registry.scope()
    first = scope.schemas()
    first[0]["parameters"]["mutated"] = True
    first[1]["description"] = "changed by a caller"
    first.append({"name": "added by a caller"})
    again = scope.schemas()
    assert again == [
        {"name": "read", "description": "the read tool", "parameters": registry.get("read").parameters},  # type: ignore[union-attr]
        {"name": "run_code", "description": "can call: read", "parameters": again[1]["parameters"]},
    ]
    assert "mutated" not in again[0]["parameters"] and "mutated" not in registry.get("read").parameters  # type: ignore[union-attr]
    assert described == [["read"]]  # the second list came from the first build
    dispose = scope.register(raw_tool("grep"))  # a scope-local tool: a new version, a new list
    assert [s["description"] for s in scope.schemas()][1:] == ["can call: read, grep", "the grep tool"]
    dispose()
    registry.register(raw_tool("glob"))  # a global one too
    assert scope.schemas()[1]["description"] == "can call: read, glob"
    assert described == [["read"], ["read", "grep"], ["read", "glob"]]


async def test_a_body_dispatches_nested_calls_in_its_own_scope_through_the_whole_pipeline() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("read"))
    registry.register(raw_tool("secret"))
    seen: list[Any] = []
    _transport(registry, seen)
    policed: list[tuple[str, bool]] = []

    async def policy(execution: ToolExecution, next_: Any) -> Any:
        policed.append((execution.call_id, execution.parent is not None))
        return Deny("not that one") if execution.name == "read" else await next_()

    registry.on_pre_execute(policy)
    scope = registry.root.restricted(ToolRestriction.of(deny=["secret"]))
    denied = await scope.execute(ToolExecutionInput("c1", "run_code", {"tool": "read"}, agent=AGENT))
    assert denied.value == {"isError": True, "text": "not that one"}
    hidden = await scope.execute(ToolExecutionInput("c2", "run_code", {"tool": "secret"}, agent=AGENT))
    assert hidden.value["isError"] is True  # type: ignore[index]
    assert "Unknown tool 'secret'" in hidden.value["text"]  # type: ignore[index]
    assert seen == [["read"], ["read"]]
    assert policed == [("c1", False), ("c1:code:1", True), ("c2", False)]


def _entry(content: tuple[ContentBlock, ...] = (TextBlock("42"),)) -> CodeDispatchLog:
    from registry_core import NEVER, ToolExecutionToken

    outer = ToolExecution("c1", "run_code", snapshot({"code": "x"}), NEVER, ToolExecutionToken("c1#1"), AGENT)
    return CodeDispatchLog(
        outer, "c1:code:1", "read", snapshot({"file_path": "a"}), False, content, None, {"m": 1}
    )


async def test_the_waterfall_reshapes_only_the_durable_content_in_listener_order() -> None:
    registry = ToolRegistry()
    order: list[str] = []
    observed: list[tuple[str, CodeDispatchEvent]] = []

    async def outer(entry: CodeDispatchLog, next_: Any) -> tuple[ContentBlock, ...]:
        order.append("outer")
        inner = await next_()
        return (TextBlock(f"outer({content_text(inner)})"),)

    def inner(entry: CodeDispatchLog, next_: Any) -> Any:
        order.append("inner")
        return [TextBlock(f"inner({content_text(entry.content)})")]

    def not_content(entry: CodeDispatchLog, next_: Any) -> Any:
        order.append("not content")
        return "a string is not content"

    def failing_observer(execution: ToolExecution, event: CodeDispatchEvent) -> None:
        raise RuntimeError("contained")

    registry.on_code_dispatch_log(outer)
    registry.on_code_dispatch_log(inner)
    registry.on_code_dispatch_log(not_content)
    registry.on_code_dispatch(failing_observer)
    registry.on_code_dispatch(lambda execution, event: observed.append((execution.call_id, event)))
    entry = _entry()
    event = await registry.log_code_dispatch(entry)
    assert order == ["outer", "inner"]  # `inner` did not call next: the later listener never ran
    assert content_text(event.content) == "outer(inner(42))"
    assert (event.parent_call_id, event.call_id, event.name, event.is_error, event.meta) == (
        "c1",
        "c1:code:1",
        "read",
        False,
        {"m": 1},
    )
    assert observed == [("c1", event)]
    assert content_text(entry.content) == "42"


async def test_a_listener_that_fails_after_next_does_not_run_the_later_ones_twice() -> None:
    registry = ToolRegistry()
    runs: list[str] = []

    async def failing(entry: CodeDispatchLog, next_: Any) -> Any:
        await next_()
        raise RuntimeError("after next")

    def later(entry: CodeDispatchLog, next_: Any) -> Any:
        runs.append("later")
        return (TextBlock("later"),)

    registry.on_code_dispatch_log(failing)
    registry.on_code_dispatch_log(later)
    event = await registry.log_code_dispatch(_entry())
    assert runs == ["later"]
    assert content_text(event.content) == "later"


@pytest.mark.parametrize("error", [None, ToolFailureInfo("boom", "TOOL_FAILED")])
def test_the_durable_event_round_trips_through_json(error: ToolFailureInfo | None) -> None:
    event = CodeDispatchEvent(
        "c1",
        "c1:code:2",
        "edit",
        snapshot({"file_path": "a"}),
        (TextBlock("done"),),
        error is not None,
        error,
        snapshot({"k": [1]}),
    )
    raw = event.to_json()
    assert raw["type"] == "tool/code-dispatch" and raw["parentCallId"] == "c1"
    assert CodeDispatchEvent.from_json(raw) == event
    assert event.to_result().is_error is (error is not None)
