"""The LSP face shows a program's calls as progress of the program's own work-done token: no progress of
their own, one report per move, each starting with the call's title. Inputs come from the real mapping."""

from __future__ import annotations

from typing import Any

from acp_bridge import mapping
from acp_bridge.lsp.derive import Begin, End, Log, Report, Show, UpdateView
from registry_core import ToolResult, text
from registry_core.presentation import DiffCallView, FileDiff, FileLocation, GenericCallView

CWD = "/work/proj"
WIRE = mapping.WireContext(cwd=CWD, terminal_meta=True)
PROGRAM = GenericCallView(title="Fix b", kind="execute")


def _of(actions: list[Any], kind: type) -> list[Any]:
    return [a for a in actions if isinstance(a, kind)]


def _edit_started() -> dict[str, Any]:
    view = DiffCallView(
        title="Edit b.txt",
        diffs=(FileDiff(path=f"{CWD}/b.txt", old_text="b", new_text="c"),),
        locations=(FileLocation(path=f"{CWD}/b.txt", line=1),),
    )
    started = mapping.tool_call_started(WIRE, "p1:code:1", "edit", {"file_path": "b.txt"}, view, "pending")
    return mapping.with_parent(started, "p1")


def test_a_program_s_calls_report_through_the_program_s_progress() -> None:
    view = UpdateView(progress=True, follow=True)
    actions = view.feed(
        "s", mapping.tool_call_started(WIRE, "p1", "run_code", {"code": "1"}, PROGRAM, "in_progress")
    )
    (begin,) = _of(actions, Begin)
    assert begin.title == "Fix b"

    actions = view.feed("s", _edit_started())
    assert _of(actions, Begin) == []
    assert _of(actions, Report) == [Report(begin.token, "Edit b.txt: pending")]
    assert view.token_of("s", "p1:code:1") == begin.token  # an approval waits for the program's progress
    assert _of(view.asking("s", "p1:code:1"), Report) == [
        Report(begin.token, "Edit b.txt: waiting for your approval")
    ]
    view.answered("s", "p1:code:1")

    moved = view.feed(
        "s", mapping.with_parent(mapping.tool_call_status(WIRE, "p1:code:1", "in_progress"), "p1")
    )
    assert _of(moved, Report) == [Report(begin.token, "Edit b.txt: running")]
    assert _of(moved, Show) == []  # a status update names no location

    done = mapping.tool_call_completed(
        WIRE, "p1:code:1", "edit", {"file_path": "b.txt"}, None, ToolResult(text("ok"), False), None
    )
    actions = [a for update in done for a in view.feed("s", mapping.with_parent(update, "p1"))]
    assert _of(actions, End) == []
    assert _of(actions, Report) == [Report(begin.token, "Edit b.txt: completed")]
    assert Log("log", "tool:   Edit b.txt (completed)") in actions

    finished = mapping.tool_call_completed(
        WIRE, "p1", "run_code", {"code": "1"}, PROGRAM, ToolResult(text("returned"), False), None
    )
    actions = [a for update in finished for a in view.feed("s", update)]
    assert _of(actions, End) == [End(begin.token, "completed")]
    assert view.end_all("bye") == []


def test_a_replayed_sub_call_born_finished_reports_once_and_ends_nothing() -> None:
    view = UpdateView(progress=True, follow=False)
    (begin,) = _of(
        view.feed("s", mapping.tool_call_started(WIRE, "p1", "run_code", {}, PROGRAM, "in_progress")), Begin
    )
    started = mapping.with_parent(
        mapping.tool_call_started(WIRE, "p1:code:1", "read", {"file_path": "a.txt"}, None, "completed"), "p1"
    )
    actions = view.feed("s", started)
    assert _of(actions, Begin) == [] and _of(actions, End) == []
    assert _of(actions, Report)[-1] == Report(begin.token, "read: completed")
    assert [e.token for e in _of(view.end_all("gone"), End)] == [begin.token]
