"""acp_bridge.mapping.wire: the TypedDicts describe what the mapping really emits. Each update of every card
kind (and the permission request's tool call and options) is checked against its declared shape at run
time: no undeclared key, every required key, each value of its declared type (literals included)."""

from __future__ import annotations

import types
import typing
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from acp_bridge import mapping
from acp_bridge.mapping import wire
from registry_core import ToolFailureInfo, ToolResult, text
from registry_core.content import ImageBlock
from registry_core.presentation import (
    ContentText,
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    GenericResultView,
    ReadFileLine,
    ReadResultView,
    SearchFileMatches,
    SearchLine,
    SearchResultView,
    TerminalCallView,
    TerminalResultView,
    WebResultView,
    WebSource,
)

CWD = "/work/proj"
CONTEXTS = [
    mapping.WireContext(CWD, terminal_meta=True),
    mapping.WireContext(CWD, terminal_meta=False),
    mapping.WireContext(CWD, terminal_meta=True, max_update_bytes=4096),
]


def conforms(value: Any, declared: Any, where: str = "update") -> list[str]:
    """Why `value` is not of the `declared` type (empty: it is)."""
    if declared is Any:
        return []
    origin = get_origin(declared)
    if origin is typing.Literal:
        return [] if value in get_args(declared) else [f"{where}: {value!r} not in {get_args(declared)}"]
    if origin in (types.UnionType, typing.Union):
        options = [conforms(value, option, where) for option in get_args(declared)]
        return [] if any(not problems for problems in options) else [f"{where}: {value!r} fits no member"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [
            p for i, item in enumerate(value) for p in conforms(item, get_args(declared)[0], f"{where}[{i}]")
        ]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        key_type, item_type = get_args(declared)
        return [p for key, item in value.items() for p in conforms(item, item_type, f"{where}.{key}")] + [
            f"{where}: key {key!r} is not {key_type.__name__}"
            for key in value
            if not isinstance(key, key_type)
        ]
    if typing.is_typeddict(declared):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        hints = get_type_hints(declared)
        problems = [f"{where}.{key}: not declared" for key in value if key not in hints]
        problems += [f"{where}.{key}: missing" for key in declared.__required_keys__ if key not in value]
        for key, item in value.items():
            if key in hints:
                problems += conforms(item, hints[key], f"{where}.{key}")
        return problems
    if declared is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    if declared is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{where}: not an int"]
    return [] if isinstance(value, declared) else [f"{where}: {value!r} is not {declared.__name__}"]


def _cards(ctx: mapping.WireContext) -> list[Any]:
    """One update of each kind the bridge sends, for every card kind."""
    diff = FileDiff(path=f"{CWD}/a.py", old_text="a\n", new_text="b\n")
    new_file = FileDiff(path=f"{CWD}/n.py", old_text=None, new_text="x\n")
    locations = (FileLocation(path=f"{CWD}/a.py", line=2),)
    views: list[tuple[Any, Any, Any]] = [
        (TerminalCallView(title="npm test\n--ci", description="tests", cwd="sub"), {"command": "npm test"},
         TerminalResultView(output="ok\n" * 5000, exit_code=1, signal=None, full_output_path=f"{CWD}/log")),
        (TerminalCallView(title="sleep 9"), {"command": "sleep 9"}, TerminalResultView(signal="SIGKILL")),
        (DiffCallView(title=f"Edit {CWD}/a.py", diffs=(diff, new_file)), {"file_path": "a.py"},
         DiffResultView(diffs=(diff,), locations=locations)),
        (GenericCallView(title="Read a.py", kind="read", locations=locations), {"file_path": "a.py"},
         ReadResultView(path=f"{CWD}/a.py", offset=1, lines=(ReadFileLine(number=1, text="x"),),
                        total_lines=3)),
        (GenericCallView(title="Search", kind="search", content=(ContentText(text="why"),)), {"pattern": "x"},
         SearchResultView(shape="matches", truncated=True, total=9, matches=(
             SearchFileMatches(path=f"{CWD}/a.py", lines=(SearchLine(number=3, text="x"),)),))),
        (GenericCallView(title="Fetch", kind="fetch"), {"url": "https://example.org"},
         WebResultView(kind="fetch", url="https://example.org", status_code=200, content_type="text/html")),
        (GenericCallView(title="Web", kind="fetch"), {"q": "x"},
         WebResultView(kind="search", sources=(WebSource(url="https://example.org", title="t"),))),
        (None, None, GenericResultView(title="Done", content=(ContentText(text="fine"),))),
        (None, "a string argument", None),
    ]  # fmt: skip
    failed = ToolResult(text("boom"), True, ToolFailureInfo("boom", "TOOL_FAILED"))
    image = ToolResult((ImageBlock(data="aGk=", mime_type="image/png"),), False)
    out: list[Any] = []
    for index, (view, args, result_view) in enumerate(views):
        call_id = f"c{index}"
        out += [
            mapping.tool_call_started(ctx, call_id, "tool", args, view, "pending"),
            mapping.tool_call_refined(ctx, call_id, "tool", args, view, "pending"),
            mapping.tool_call_previewed(ctx, call_id, "tool", args, view),
            mapping.tool_call_status(ctx, call_id, "in_progress"),
            mapping.terminal_output(ctx, call_id, "out\n", "out\n", call_view=view),
        ]
        for result in (ToolResult(text("fine"), False), failed, image):
            out += mapping.tool_call_completed(
                ctx, call_id, "tool", args, view, result, result_view, terminal_output_sent=False, note="n"
            )
    return out


def _others() -> list[Any]:
    todos = {"todos": [{"content": "fix", "status": "in_progress"}, {"content": "ship", "status": "pending"}]}
    return [
        mapping.agent_message_chunk("hi", message_id="m1"),
        mapping.agent_thought_chunk("hm"),
        mapping.user_message_chunk("x" * 5000, max_bytes=1024),
        mapping.user_content_chunk({"type": "resource_link", "uri": "file:///a", "name": "a", "size": 1}),
        mapping.user_content_chunk({"type": "resource", "resource": {"uri": "file:///b", "text": "b"}}),
        mapping.user_content_chunk({"type": "resource", "resource": {"uri": "file:///c", "blob": "AAEC"}}),
        mapping.user_content_chunk(
            {"type": "image", "mimeType": "image/png", "data": "aGk=", "uri": "file:///d"}
        ),
        mapping.plan_from_result(ToolResult(text("ok"), False, meta=todos)),
        mapping.mode_update("plan"),
        mapping.usage_update(10, 100),
        mapping.available_commands([("mode", "Set the mode", "mode id"), ("forget", "Forget rules", None)]),
    ]


@pytest.mark.parametrize("ctx", CONTEXTS, ids=["terminal-meta", "plain", "small-budget"])
def test_every_update_matches_its_declared_shape(ctx: mapping.WireContext) -> None:
    updates = _cards(ctx) + _others()
    problems = [p for update in updates for p in conforms(update, wire.Update)]
    assert not problems, problems[:10]
    # And each one matches the very member its `sessionUpdate` names (not merely some member).
    members = {get_args(get_type_hints(m)["sessionUpdate"]): m for m in get_args(wire.Update)}
    for update in updates:
        (member,) = [m for kinds, m in members.items() if update["sessionUpdate"] in kinds]
        assert not conforms(update, member), update


def test_the_permission_request_matches_its_declared_shapes() -> None:
    for ctx in CONTEXTS:
        for view in (None, TerminalCallView(title="rm -rf b"), GenericCallView(title="t", kind="other")):
            call = mapping.permission_tool_call(ctx, "c1", "tool", {"command": "rm -rf b"}, view, "why")
            assert not conforms(call, wire.ToolCallUpdate)
    options = mapping.permission_options("`rm` commands")
    assert not [p for option in options for p in conforms(option, wire.PermissionOption)]


def test_the_check_sees_a_shape_that_drifted() -> None:
    """The checker above is not vacuous: an undeclared key, a missing one and a wrong literal are caught."""
    good = mapping.tool_call_status(CONTEXTS[0], "c1", "completed")
    assert not conforms(good, wire.ToolCallProgress)
    assert conforms({**good, "label": "bash"}, wire.ToolCallProgress) == ["update.label: not declared"]
    assert conforms({"sessionUpdate": "tool_call_update"}, wire.ToolCallProgress) == [
        "update.toolCallId: missing"
    ]
    assert conforms({**good, "status": "done"}, wire.ToolCallProgress)
