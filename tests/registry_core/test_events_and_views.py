from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from registry_core import (
    DiffCallView,
    FileDiff,
    FileLocation,
    GenericCallView,
    ReadFileLine,
    ReadResultView,
    SearchResultView,
    TextBlock,
    ToolCallEvent,
    ToolExecutionInput,
    ToolRegistry,
    ToolResult,
    ToolResultEvent,
    ToolRunContext,
    safe_present_call,
    safe_present_result,
)
from tests.support.raw_tools import raw_tool


async def test_durable_events_round_trip_and_never_hold_the_value() -> None:
    captured: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return {"secret": "canonical value"}

    registry = ToolRegistry()
    registry.register(
        raw_tool(
            "t", body, render=lambda a, v: (TextBlock("shown"),), presentation_meta=lambda a, v: {"m": 1}
        )
    )
    registry.on_result(lambda ex, r: captured.append((ToolCallEvent.of(ex), ToolResultEvent.of(ex, r))))
    await registry.execute(ToolExecutionInput("c9", "t", {"path": "a"}))
    call_event, result_event = captured[0]
    wire_call = json.loads(json.dumps(call_event.to_json()))
    wire_result = json.loads(json.dumps(result_event.to_json()))
    assert wire_call == {"type": "tool/call", "callId": "c9", "name": "t", "arguments": {"path": "a"}}
    assert wire_result == {
        "type": "tool/result",
        "callId": "c9",
        "name": "t",
        "content": [{"type": "text", "text": "shown"}],
        "isError": False,
        "meta": {"m": 1},
    }
    assert "canonical value" not in json.dumps(wire_result)
    assert ToolCallEvent.from_json(wire_call) == call_event
    replayed = ToolResultEvent.from_json(wire_result)
    assert replayed.to_result() == ToolResult((TextBlock("shown"),), False, None, {"m": 1})


async def test_failed_results_persist_their_error() -> None:
    captured: list[Any] = []
    registry = ToolRegistry()
    registry.on_result(lambda ex, r: captured.append(ToolResultEvent.of(ex, r).to_json()))
    await registry.execute(ToolExecutionInput("c1", "ghost", "raw"))
    assert captured[0]["isError"] is True
    assert captured[0]["error"]["code"] == "UNKNOWN_TOOL"


def test_a_presenter_that_raises_yields_no_view() -> None:
    def boom() -> Any:
        raise RuntimeError("presenter bug")

    assert safe_present_call(boom, "t") is None
    assert safe_present_result(boom, "t") is None


def test_an_invalid_view_yields_no_view() -> None:
    assert safe_present_call(lambda: {"card": "hologram", "title": "x"}) is None
    assert safe_present_call(lambda: {"card": "generic"}) is None  # title missing
    assert (
        safe_present_result(
            lambda: {"card": "read", "path": "/a", "offset": 0, "lines": [], "total_lines": 0}
        )
        is None
    )
    assert safe_present_call(lambda: "not a view") is None


def test_valid_views_pass_as_typed_models() -> None:
    view = safe_present_call(
        lambda: {
            "card": "diff",
            "title": "Edit a",
            "diffs": [{"path": "/a", "old_text": None, "new_text": "x"}],
        }
    )
    assert view == DiffCallView(title="Edit a", diffs=(FileDiff(path="/a", old_text=None, new_text="x"),))
    generic = GenericCallView(title="Read a", kind="read")
    assert safe_present_call(lambda: generic) is generic
    read = safe_present_result(lambda: ReadResultView(path="/a", offset=5, lines=(), total_lines=3))
    assert isinstance(read, ReadResultView) and read.offset == 5


@pytest.mark.parametrize(
    "build",
    [
        lambda: ReadResultView(path="/a", offset=0, lines=(), total_lines=0),  # offset is 1-based
        lambda: ReadResultView(path="/a", offset=1, lines=(), total_lines=-1),
        lambda: GenericCallView(title=3),  # type: ignore[arg-type]
        lambda: GenericCallView(title="x", kind="teleport"),  # type: ignore[arg-type]
        lambda: GenericCallView(title="x", card="diff"),  # type: ignore[arg-type]
        lambda: GenericCallView(title="x", colour="red"),  # type: ignore[call-arg]
        lambda: GenericCallView(),  # type: ignore[call-arg]
        lambda: FileLocation(path="/a", line=0),
        lambda: DiffCallView(title="x", diffs=({"path": "/a", "new_text": "x"},)),  # type: ignore[arg-type]
        lambda: SearchResultView(shape="paths", truncated="no", total=0),  # type: ignore[arg-type]
        lambda: ReadResultView(path="/a", offset=1, lines=("line",), total_lines=1),  # type: ignore[arg-type]
    ],
)
def test_a_view_is_checked_when_built(build: Callable[[], Any]) -> None:
    with pytest.raises(ValueError):
        build()
    assert safe_present_call(build) is None and safe_present_result(build) is None


def test_views_take_lists_and_mappings_for_their_parts_and_stay_frozen() -> None:
    view = DiffCallView(
        title="Edit a",
        diffs=[{"path": "/a", "old_text": None, "new_text": "x"}],  # type: ignore[list-item]
        locations=[FileLocation(path="/a", line=1)],  # type: ignore[arg-type]
    )
    assert view.diffs == (FileDiff(path="/a", old_text=None, new_text="x"),)
    assert view.locations == (FileLocation(path="/a", line=1),)
    assert hash(view) == hash(DiffCallView(title="Edit a", diffs=view.diffs, locations=view.locations))
    assert view != GenericCallView(title="Edit a")
    with pytest.raises(AttributeError):
        view.title = "other"  # type: ignore[misc]
    assert "Edit a" in repr(view)


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ({"number": 0, "text": "a"}, "ReadFileLine.number: must be at least 1, got 0"),
        ({"number": 1.0, "text": "a"}, "ReadFileLine.number: expected an integer, got float"),
        ({"number": 1, "text": 2}, "ReadFileLine.text: expected a string, got int"),
    ],
)
def test_a_read_line_is_checked_as_a_record_field_is(values: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=f"^{error}$"):
        ReadFileLine(**values)
    with pytest.raises(ValueError, match=error):  # inside a view, from a mapping
        ReadResultView(path="/a", offset=1, lines=[values], total_lines=1)  # type: ignore[list-item]


def test_a_read_window_is_the_lines_built_one_by_one() -> None:
    window = ReadFileLine.window(9, ("a", "b"))
    assert window == (ReadFileLine(number=9, text="a"), ReadFileLine(number=10, text="b"))
    assert all(type(line) is ReadFileLine for line in window)
    assert [(line.number, line.text) for line in window] == [(9, "a"), (10, "b")]
    assert (
        ReadFileLine(number=True, text="x").number == 1
        and type(ReadFileLine(number=True, text="x")[0]) is int
    )
    assert repr(window[0]) == "ReadFileLine(number=9, text='a')"
    assert copy.deepcopy(window) == window and pickle.loads(pickle.dumps(window)) == window
    view = ReadResultView(path="/a", offset=9, lines=window, total_lines=10)
    assert view.lines is window  # checked lines pass as they are
    for first, texts in ((0, ("a",)), (True, ("a",)), (1, ("a", 2))):
        with pytest.raises(ValueError):
            ReadFileLine.window(first, texts)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # a bare pair is no checked line
        ReadResultView(path="/a", offset=1, lines=((1, "a"),), total_lines=1)  # type: ignore[arg-type]


def test_a_float_field_takes_json_numbers_but_not_booleans_or_strings() -> None:
    from registry_core.presentation import StatusProgress

    assert StatusProgress(progress=3, total=10.5).progress == 3.0
    with pytest.raises(ValueError, match="number"):
        StatusProgress(progress=True)
    with pytest.raises(ValueError, match="number"):
        StatusProgress(total="10")
