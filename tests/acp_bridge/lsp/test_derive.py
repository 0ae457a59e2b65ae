"""acp_bridge.lsp.derive: session updates (as acp_bridge.mapping builds them) → log lines, progress,
follow-along. Inputs are produced by the real mapping so a change of card shape shows up here."""

from __future__ import annotations

from typing import Any

from acp_bridge import mapping
from acp_bridge.lsp.derive import (
    Begin,
    End,
    Log,
    Report,
    Show,
    UpdateView,
    failure_reason,
    last_output_line,
    one_line,
)
from registry_core import ToolFailureInfo, ToolResult, text
from registry_core.presentation import (
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    ReadFileLine,
    ReadResultView,
    TerminalCallView,
    TerminalResultView,
)

CWD = "/work/proj"
META = mapping.WireContext(cwd=CWD, terminal_meta=True)
PLAIN = mapping.WireContext(cwd=CWD, terminal_meta=False)


def _view(progress: bool = True, follow: bool = True) -> UpdateView:
    return UpdateView(progress=progress, follow=follow)


def _of(actions: list[Any], kind: type) -> list[Any]:
    return [a for a in actions if isinstance(a, kind)]


def _bash_started(ctx: mapping.WireContext, status: mapping.ToolStatus = "in_progress") -> dict[str, Any]:
    return mapping.tool_call_started(
        ctx, "c1", "bash", {"command": "npm test"}, TerminalCallView(title="npm test"), status
    )


def _ok(output: str = "", exit_code: int = 0) -> tuple[ToolResult, TerminalResultView]:
    # A command that ran is no tool error, whatever its exit code (the card fails on a non-zero one).
    result = ToolResult(content=text(output), is_error=False)
    return result, TerminalResultView(output=output, exit_code=exit_code)


# --- agent text -------------------------------------------------------------------------------------


def test_agent_text_is_logged_in_whole_lines_not_chunks() -> None:
    view = _view()
    assert view.feed("s", mapping.agent_message_chunk("Hel")) == []
    assert view.feed("s", mapping.agent_message_chunk("lo\nwor")) == [Log("info", "Hello")]
    assert view.flush_text("s") == [Log("info", "wor")]
    assert view.flush_text("s") == []


def test_thoughts_are_marked_and_kept_in_order_with_text() -> None:
    view = _view()
    actions = view.feed("s", mapping.agent_thought_chunk("plan it"))
    actions += view.feed("s", mapping.agent_message_chunk("Done.\n"))
    assert actions == [Log("log", "(thinking) plan it"), Log("info", "Done.")]


def test_a_card_finishes_the_pending_text_line_first() -> None:
    view = _view()
    view.feed("s", mapping.agent_message_chunk("Running the tests"))
    actions = view.feed("s", _bash_started(META))
    assert actions[0] == Log("info", "Running the tests")
    assert isinstance(actions[-1], Begin)


def test_sessions_do_not_mix_their_lines() -> None:
    view = _view()
    view.feed("a", mapping.agent_message_chunk("from a "))
    view.feed("b", mapping.agent_message_chunk("from b\n"))
    assert view.flush_text("a") == [Log("info", "from a ")]


# --- progress -----------------------------------------------------------------------------------------


def test_terminal_call_begins_reports_live_lines_and_ends_completed() -> None:
    view = _view()
    begin = _of(view.feed("s", _bash_started(META)), Begin)
    assert len(begin) == 1 and begin[0].title == "npm test" and begin[0].message == "running"
    token = begin[0].token
    live = mapping.terminal_output(META, "c1", "PASS a.test\nPASS b.te", "")
    assert _of(view.feed("s", live), Report) == [Report(token, "PASS b.te")]
    live2 = mapping.terminal_output(META, "c1", "st\n", "")
    assert _of(view.feed("s", live2), Report) == [Report(token, "PASS b.test")]
    result, result_view = _ok("PASS a.test\nPASS b.test\n")
    final = mapping.tool_call_completed(
        META, "c1", "bash", {"command": "npm test"}, TerminalCallView(title="npm test"), result, result_view,
        terminal_output_sent=True,
    )  # fmt: skip
    ends = [a for u in final for a in view.feed("s", u) if isinstance(a, End)]
    assert ends == [End(token, "completed")]


def test_live_output_without_the_terminal_meta_reads_the_console_block() -> None:
    view = _view()
    token = _of(view.feed("s", _bash_started(PLAIN)), Begin)[0].token
    call_view = TerminalCallView(title="npm test")
    live = mapping.terminal_output(PLAIN, "c1", "", "", call_view=call_view)
    assert _of(view.feed("s", live), Report) == []  # only the `$ npm test` line: no output yet
    live = mapping.terminal_output(PLAIN, "c1", "", "step 1\nstep 2\n", call_view=call_view)
    assert _of(view.feed("s", live), Report) == [Report(token, "step 2")]


def test_a_multi_line_command_is_not_mistaken_for_its_output() -> None:
    view = _view()
    command = "for i in 1 2\ndo echo $i; done"
    call_view = TerminalCallView(title=command)
    started = mapping.tool_call_started(PLAIN, "c1", "bash", {"command": command}, call_view, "in_progress")
    view.feed("s", started)
    assert (
        _of(view.feed("s", mapping.terminal_output(PLAIN, "c1", "", "", call_view=call_view)), Report) == []
    )
    live = mapping.terminal_output(PLAIN, "c1", "", "1\n", call_view=call_view)
    assert [r.message for r in _of(view.feed("s", live), Report)] == ["1"]


def test_carriage_return_redraws_and_colours_show_what_the_terminal_shows() -> None:
    assert last_output_line("\x1b[32mok\x1b[0m\n 10%\r 50%\r100%") == "100%"
    assert last_output_line("\n\n") is None


def test_a_pending_call_waits_for_approval_only_while_the_editor_asks() -> None:
    view = _view()
    begin = _of(view.feed("s", _bash_started(META, "pending")), Begin)[0]
    assert begin.message == "pending"  # the policy will ask, but no question is open yet
    assert view.asking("s", "c1") == [Report(begin.token, "waiting for your approval")]
    assert view.asking("s", "unknown") == []
    view.answered("s", "c1")
    moved = view.feed("s", mapping.tool_call_status(META, "c1", "in_progress"))
    assert moved == [Report(begin.token, "running")]
    # The same status again is not news.
    assert view.feed("s", mapping.tool_call_status(META, "c1", "in_progress")) == []


def _refinement(card: dict[str, Any]) -> dict[str, Any]:
    """The `tool_call_update` the turn sends when a call announced while streaming is complete (as
    `acp_bridge.turn.loop` relabels the full card)."""
    return {"content": [], "locations": [], **card, "sessionUpdate": "tool_call_update"}


def test_a_call_announced_while_streaming_takes_its_refined_title() -> None:
    view = _view()
    # The early card: the arguments are still streaming, so the title is the tool's name.
    early = mapping.tool_call_started(PLAIN, "c1", "bash", None, None, "pending")
    started = view.feed("s", early)
    (begin,) = _of(started, Begin)
    assert (begin.title, begin.message) == ("bash", "pending")  # not "waiting for your approval"
    assert _of(started, Log) == [Log("log", "tool: bash (pending)")]
    # The step completed: the card is refined with the call's title, kind and arguments.
    refined = mapping.tool_call_started(
        PLAIN, "c1", "bash", {"command": "npm test"}, TerminalCallView(title="npm test"), "pending"
    )
    actions = view.feed("s", _refinement(refined))
    assert actions == [Log("log", "tool: npm test (pending)"), Report(begin.token, "npm test: pending")]
    assert view.asking("s", "c1") == [Report(begin.token, "npm test: waiting for your approval")]
    view.answered("s", "c1")
    assert view.feed("s", mapping.tool_call_status(PLAIN, "c1", "in_progress")) == [
        Report(begin.token, "npm test: running")
    ]
    # The refined rawInput's command tells the command apart from its output in the console fallback.
    live = mapping.terminal_output(
        PLAIN, "c1", "", "PASS a.test\n", call_view=TerminalCallView(title="npm test")
    )
    assert _of(view.feed("s", live), Report) == [Report(begin.token, "npm test: PASS a.test")]
    result, result_view = _ok("PASS a.test\n")
    final = mapping.tool_call_completed(
        PLAIN, "c1", "bash", {"command": "npm test"}, TerminalCallView(title="npm test"), result, result_view
    )
    actions = [a for u in final for a in view.feed("s", u)]
    assert _of(actions, End) == [End(begin.token, "npm test: completed")]
    assert _of(actions, Log) == [Log("log", "tool: npm test (completed)")]


def test_a_refinement_that_allows_at_once_reports_running_under_its_title() -> None:
    view = _view()
    early = mapping.tool_call_started(PLAIN, "r1", "read", None, None, "pending")
    token = _of(view.feed("s", early), Begin)[0].token
    card = GenericCallView(title="Read a.py", kind="read")
    refined = mapping.tool_call_started(PLAIN, "r1", "read", {"file_path": "a.py"}, card, "in_progress")
    assert _of(view.feed("s", _refinement(refined)), Report) == [Report(token, "Read a.py: running")]


def test_failed_call_ends_with_the_short_reason() -> None:
    view = _view()
    token = _of(view.feed("s", _bash_started(META, "pending")), Begin)[0].token
    denied = ToolResult(
        content=text("The user rejected this `bash` call."),
        is_error=True,
        error=ToolFailureInfo("The user rejected this `bash` call.", "DENIED"),
    )
    final = mapping.tool_call_completed(
        META, "c1", "bash", {"command": "npm test"}, TerminalCallView(title="npm test"), denied, None
    )
    ends = [a for u in final for a in view.feed("s", u) if isinstance(a, End)]
    assert ends == [End(token, "failed: The user rejected this `bash` call.")]


def test_nonzero_exit_names_the_exit_code() -> None:
    view = _view()
    token = _of(view.feed("s", _bash_started(PLAIN)), Begin)[0].token
    result, result_view = _ok("boom\n", exit_code=2)
    final = mapping.tool_call_completed(
        PLAIN, "c1", "bash", {"command": "npm test"}, TerminalCallView(title="npm test"), result, result_view
    )
    ends = [a for u in final for a in view.feed("s", u) if isinstance(a, End)]
    assert ends == [End(token, "failed: exit code 2")]
    assert [u["status"] for u in final if "status" in u] == ["failed"]


def test_every_call_gets_its_own_token_and_updates_after_the_end_are_ignored() -> None:
    view = _view()
    a = mapping.tool_call_started(
        META, "a", "read", {}, GenericCallView(title="Read x", kind="read"), "in_progress"
    )
    b = mapping.tool_call_started(
        META, "b", "read", {}, GenericCallView(title="Read y", kind="read"), "in_progress"
    )
    tokens = [_of(view.feed("s", u), Begin)[0].token for u in (a, b)]
    assert tokens[0] != tokens[1]
    done = mapping.tool_call_completed(META, "a", "read", {}, None, ToolResult(text("x"), False), None)
    assert _of(view.feed("s", done[0]), End) == [End(tokens[0], "completed")]
    assert view.feed("s", mapping.tool_call_status(META, "a", "in_progress")) == []


def test_without_progress_support_only_log_lines_are_derived() -> None:
    view = _view(progress=False)
    actions = view.feed("s", _bash_started(META))
    assert not _of(actions, Begin) and _of(actions, Log)
    assert view.end_all("bye") == []


def test_end_all_ends_the_open_progress_of_one_session() -> None:
    view = _view()
    token_a = _of(view.feed("a", _bash_started(META)), Begin)[0].token
    token_b = _of(view.feed("b", _bash_started(META)), Begin)[0].token
    assert view.end_all("the turn ended", "a") == [End(token_a, "the turn ended")]
    assert view.end_all("closed") == [End(token_b, "closed")]


def test_failure_reason_prefers_the_error_then_the_note() -> None:
    assert failure_reason({"rawOutput": {"error": {"message": "line one\nline two"}}}) == "line one line two"
    assert (
        failure_reason({"_meta": {"acpBridge": {"note": "Cancelled by the user."}}})
        == "Cancelled by the user."
    )
    assert failure_reason({}) == "the call failed"
    assert len(one_line("x" * 500)) == 200


# --- follow-along -------------------------------------------------------------------------------------


def _read(status: mapping.ToolStatus) -> dict[str, Any]:
    view = GenericCallView(
        title="Read /work/proj/src/a.py",
        kind="read",
        locations=(FileLocation(path="/work/proj/src/a.py", line=10),),
    )
    return mapping.tool_call_started(META, "r1", "read", {"file_path": "src/a.py"}, view, status)


def test_a_running_read_is_followed_at_its_line_once() -> None:
    view = _view()
    assert _of(view.feed("s", _read("in_progress")), Show) == [Show("/work/proj/src/a.py", 10)]
    result = ToolResult(text("..."), False)
    read_view = ReadResultView(
        path="/work/proj/src/a.py", offset=10, lines=(ReadFileLine(number=10, text="x"),), total_lines=20
    )
    final = mapping.tool_call_completed(META, "r1", "read", {}, None, result, read_view)
    assert _of(view.feed("s", final[0]), Show) == []  # the same place: no second jump


def test_a_pending_call_is_not_followed_and_follow_off_never_follows() -> None:
    assert _of(_view().feed("s", _read("pending")), Show) == []
    assert _of(_view(follow=False).feed("s", _read("in_progress")), Show) == []


def test_an_edit_is_followed_when_it_completed_not_when_it_failed() -> None:
    diff = FileDiff(path="/work/proj/b.py", old_text="a\n", new_text="b\n")
    call = DiffCallView(title="Edit /work/proj/b.py", diffs=(diff,))
    done = DiffResultView(diffs=(diff,), locations=(FileLocation(path="/work/proj/b.py", line=3),))
    for is_error, expected in ((False, [Show("/work/proj/b.py", 3)]), (True, [])):
        view = _view()
        view.feed("s", mapping.tool_call_started(META, "e1", "edit", {}, call, "pending"))
        view.feed("s", mapping.tool_call_status(META, "e1", "in_progress"))
        final = mapping.tool_call_completed(
            META, "e1", "edit", {}, call, ToolResult(text("ok"), is_error), done
        )
        assert [a for u in final for a in view.feed("s", u) if isinstance(a, Show)] == expected


def test_plan_updates_become_log_lines() -> None:
    plan = {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "read", "priority": "high", "status": "completed"},
            {"content": "fix", "priority": "medium", "status": "pending"},
        ],
    }
    assert _view().feed("s", plan) == [Log("log", "plan: [x] read"), Log("log", "plan: [ ] fix")]
