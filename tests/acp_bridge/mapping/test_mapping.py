"""acp_bridge.mapping: cards → ACP wire updates. Pure functions, so pure tables: no event loop, no I/O.

The golden/schema tests at the bottom prove the wire shape: every update these functions produce must
round-trip through the official SDK's pydantic models unchanged (the SDK silently drops or nulls invalid
parts, so plain validation would not be enough).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from acp import schema
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge.mapping import (
    DEFAULT_MAX_UPDATE_BYTES,
    MAX_LOCATIONS,
    Update,
    WireContext,
    agent_message_chunk,
    agent_thought_chunk,
    available_commands,
    bound_update,
    display_path,
    mode_update,
    permission_tool_call,
    plan_from_result,
    relativize_title,
    resolve_path,
    terminal_output,
    tool_call_completed,
    tool_call_refined,
    tool_call_started,
    tool_call_status,
    usage_update,
    user_content_chunk,
    user_message_chunk,
)
from registry_core import ToolFailureInfo, ToolResult
from registry_core.content import ImageBlock, TextBlock
from registry_core.json_values import snapshot
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
from tests.support.acp_unstable_schema import as_the_sdk_knows_it, tool_call_name_problems

CWD = "/work/proj"
PLAIN = WireContext(CWD)
TERM = WireContext(CWD, terminal_meta=True)


# --- helpers -----------------------------------------------------------------------------------------


def ok(text: str = "done") -> ToolResult:
    return ToolResult((TextBlock(text),), False)


def failed(message: str, content: str | None = None, code: str = "TOOL_FAILED") -> ToolResult:
    return ToolResult(
        (TextBlock(content if content is not None else message),), True, ToolFailureInfo(message, code)
    )


def wire_size(update: Update) -> int:
    return len(json.dumps(update, ensure_ascii=False, separators=(",", ":")).encode())


def texts(update: Update) -> str:
    """All text shown in the update's content blocks, joined."""
    out = []
    for block in update.get("content") or []:
        if block.get("type") == "content" and block["content"].get("type") == "text":
            out.append(block["content"]["text"])
    return "\n".join(out)


def content_types(update: Update) -> list[str]:
    return [b["type"] for b in update.get("content") or []]


def only(updates: list[Update]) -> Update:
    assert len(updates) == 1, updates
    return updates[0]


def assert_wire_update(update: Update) -> None:
    """The update is exactly what the SDK's schema accepts: validate, dump, compare."""
    model = schema.SessionNotification.model_validate({"sessionId": "s1", "update": update})
    dumped = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert dumped["update"] == as_the_sdk_knows_it(dict(update))
    if update["sessionUpdate"] == "tool_call":
        assert isinstance(update.get("name"), str) and update["name"]


def assert_wire_permission(tool_call: Update) -> None:
    request = {
        "sessionId": "s1",
        "toolCall": tool_call,
        "options": [
            {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
            {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
        ],
    }
    model = schema.RequestPermissionRequest.model_validate(request)
    assert model.model_dump(mode="json", by_alias=True, exclude_unset=True) == {
        **request,
        "toolCall": as_the_sdk_knows_it(dict(tool_call)),
    }
    assert tool_call_name_problems({"method": "session/request_permission", "params": request}) == []


def longest_backtick_run(text: str) -> int:
    return max((len(r) for r in re.findall(r"`+", text)), default=0)


def fences(text: str) -> list[str]:
    """Opening fences (``` runs at line start followed by an optional info string)."""
    return re.findall(r"^(`{3,})[\w+#.\-]*$", text, flags=re.M)


# --- fixtures: one of every card ---------------------------------------------------------------------

READ_CALL = GenericCallView(
    title=f"Read {CWD}/src/app.py (10 - 12)",
    kind="read",
    raw_input={"file_path": "src/app.py"},
    locations=(FileLocation(path=f"{CWD}/src/app.py", line=10),),
)
GREP_CALL = GenericCallView(title=f"Search 'TODO' in {CWD}/src", kind="search")
TODO_CALL = GenericCallView(title="Update plan", kind="think")
BASH_CALL = TerminalCallView(title="pytest -q", description="Run the tests")
BASH_MULTILINE = TerminalCallView(title="cat <<'EOF'\nhello `world`\nEOF\n", description=None, cwd="sub")
EDIT_CALL = DiffCallView(
    title=f"Edit {CWD}/src/app.py",
    diffs=(FileDiff(path=f"{CWD}/src/app.py", old_text="x = 1", new_text="x = 2"),),
    locations=(FileLocation(path=f"{CWD}/src/app.py", line=3),),
)
WRITE_CALL = DiffCallView(
    title="Write notes/new.md", diffs=(FileDiff(path="notes/new.md", old_text=None, new_text="# hi\n"),)
)

READ_RESULT = ReadResultView(
    title=f"Read {CWD}/src/app.py (10 - 12)",
    path=f"{CWD}/src/app.py",
    offset=10,
    lines=(
        ReadFileLine(number=10, text="def f():"),
        ReadFileLine(number=11, text="    return '```'"),
        ReadFileLine(number=12, text="# end"),
    ),
    total_lines=40,
    lang="python",
)
SEARCH_RESULT = SearchResultView(
    shape="matches",
    title=f"Search 'TODO' in {CWD}/src",
    truncated=True,
    total=7,
    files=4,
    matches=(
        SearchFileMatches(
            path=f"{CWD}/src/a.py",
            lines=(SearchLine(number=3, text="# TODO a"), SearchLine(number=9, text="# TODO b")),
        ),
        SearchFileMatches(path=f"{CWD}/src/b.py", lines=(SearchLine(number=1, text="# TODO c"),)),
    ),
)
GLOB_RESULT = SearchResultView(
    shape="paths", truncated=False, total=2, paths=(f"{CWD}/src/a.py", "/elsewhere/b.py")
)
DIFF_RESULT = DiffResultView(
    title=f"Edit {CWD}/src/app.py",
    diffs=(
        FileDiff(path=f"{CWD}/src/app.py", old_text="a\nx = 1\nb", new_text="a\nx = 2\nb"),
        FileDiff(path=f"{CWD}/src/app.py", old_text="c\nx = 1\nd", new_text="c\nx = 2\nd"),
    ),
    locations=(
        FileLocation(path=f"{CWD}/src/app.py", line=3),
        FileLocation(path=f"{CWD}/src/app.py", line=30),
    ),
)
CREATE_RESULT = DiffResultView(diffs=(FileDiff(path="notes/new.md", old_text=None, new_text="# hi\n"),))
WEB_FETCH = WebResultView(
    kind="fetch", url="https://example.org/doc", status_code=200, content_type="text/html", truncated=True
)
WEB_SEARCH = WebResultView(
    kind="search",
    answer="It is 42.",
    sources=(WebSource(url="https://a.example/x", title="The [answer]", snippet="forty\ntwo"),),
)
TERMINAL_RESULT = TerminalResultView(output="1 passed\n\n", exit_code=0)


# === paths ===========================================================================================


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        (f"{CWD}/src/a.py", CWD, "src/a.py"),
        (f"{CWD}/..cache/x", CWD, "..cache/x"),  # a name starting with "..", not a parent segment
        (f"{CWD}/...", CWD, "..."),
        (f"{CWD}/../x", CWD, "/work/x"),  # outside: absolute
        ("/work/proj2/x", CWD, "/work/proj2/x"),  # a prefix on a character, not a segment
        ("/etc/hosts", CWD, "/etc/hosts"),
        (CWD, CWD, "."),
        (f"{CWD}/", CWD, "."),
        ("src/a.py", CWD, "src/a.py"),  # relative inputs resolve against cwd
        ("../x", CWD, "/work/x"),
        ("..cache/x", CWD, "..cache/x"),
        (f"{CWD}/a/../b", CWD, "b"),
        (f"{CWD}/src/a.py", CWD + "/", "src/a.py"),
        ("/etc/hosts", "/", "etc/hosts"),
    ],
)
def test_display_path(path: str, cwd: str, expected: str) -> None:
    assert display_path(path, cwd) == expected


@pytest.mark.parametrize(
    ("title", "paths", "expected"),
    [
        (f"Read {CWD}/src/a.py (1 - 5)", [f"{CWD}/src/a.py"], "Read src/a.py (1 - 5)"),
        (f"Read {CWD}/..cache/x", [f"{CWD}/..cache/x"], "Read ..cache/x"),
        ("Read /work/x", [f"{CWD}/../x"], "Read /work/x"),  # outside stays absolute
        (f"Read {CWD}/../x", [f"{CWD}/../x"], f"Read {CWD}/../x"),
        (f"cp {CWD}/a {CWD}/a/b", [f"{CWD}/a", f"{CWD}/a/b"], "cp a a/b"),  # longest first
        (f"Edit {CWD}/src2/x", [f"{CWD}/src"], f"Edit {CWD}/src2/x"),  # not a path boundary
        (f"Edit {CWD}/src/x", [f"{CWD}/src"], "Edit src/x"),  # a listed directory prefixes a path
        (f"Open /mnt{CWD}/a", [f"{CWD}/a"], f"Open /mnt{CWD}/a"),  # glued on the left
        (f"Both {CWD}/a and {CWD}/a.", [f"{CWD}/a"], "Both a and a."),
        (f"Read {CWD}/a", {f"{CWD}/a": "A!"}, "Read A!"),  # a mapping gives the display itself
        ("Read relative/a", ["relative/a"], "Read relative/a"),
    ],
)
def test_relativize_title(title: str, paths: Any, expected: str) -> None:
    assert relativize_title(title, paths, CWD) == expected


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (f"Read {CWD}/src/app.py (10 - 12)", "Read src/app.py (10 - 12)"),
        (f"Search 'x' in {CWD}/src", "Search 'x' in src"),  # not a listed path: the cwd rule still applies
        (f"Search 'x' in {CWD}", "Search 'x' in ."),
        (f"Search 'x' in {CWD}/../other", f"Search 'x' in {CWD}/../other"),
        ("Search 'x' in /opt/lib", "Search 'x' in /opt/lib"),
        (f"List {CWD}/..cache", "List ..cache"),
        (f"List {CWD}/. and {CWD}/src/.. then {CWD}/src.", "List . and . then src."),
        ("Line one\nline two\r\nthree", "Line one ↵ line two ↵ three"),
        ("   ", "probe"),  # blank → the tool name
    ],
)
def test_generic_card_titles_are_relative_and_single_line(title: str, expected: str) -> None:
    view = GenericCallView(title=title, kind="read", locations=(FileLocation(path=f"{CWD}/src/app.py"),))
    update = tool_call_started(PLAIN, "c1", "probe", {}, view, "in_progress")
    assert update["title"] == expected
    assert "\n" not in update["title"]


def test_long_titles_are_capped() -> None:
    update = tool_call_started(
        PLAIN, "c1", "bash", {}, TerminalCallView(title="echo " + "x" * 5000), "pending"
    )
    assert len(update["title"]) <= 300
    assert update["title"].endswith("…")
    assert "x" * 4000 in texts(update)  # the full command is still on the card


_segment = st.text(alphabet="abc.-_ ", min_size=1, max_size=6).filter(lambda s: s not in {".", ".."})
_parts = st.lists(st.one_of(_segment, st.sampled_from([".", "..", "..cache", "...", ""])), max_size=6)


@settings(max_examples=300)
@given(cwd_parts=st.lists(_segment, min_size=1, max_size=4), rel_parts=_parts, absolute=st.booleans())
def test_display_path_properties(cwd_parts: list[str], rel_parts: list[str], absolute: bool) -> None:
    cwd = "/" + "/".join(cwd_parts)
    rel = "/".join(rel_parts)
    path = os.path.join(cwd, rel) if absolute else rel
    target = os.path.normpath(os.path.join(cwd, path))
    shown = display_path(path, cwd)
    # Round trip: joining the display back onto cwd names the same file.
    assert os.path.normpath(os.path.join(cwd, shown)) == target
    norm_cwd = os.path.normpath(cwd)
    inside = target == norm_cwd or target.startswith(norm_cwd + "/")
    if inside:
        assert not os.path.isabs(shown)
        assert shown != ".." and not shown.startswith("../")
    else:
        assert shown == target  # outside: absolute and normalised


# === tool_call (start) ===============================================================================


@pytest.mark.parametrize(
    ("ctx", "view", "kind", "title", "types", "locations"),
    [
        (PLAIN, None, "other", "mystery", [], None),
        (
            PLAIN,
            READ_CALL,
            "read",
            "Read src/app.py (10 - 12)",
            [],
            [{"path": f"{CWD}/src/app.py", "line": 10}],
        ),
        (PLAIN, GREP_CALL, "search", "Search 'TODO' in src", [], None),
        (PLAIN, EDIT_CALL, "edit", "Edit src/app.py", ["diff"], [{"path": f"{CWD}/src/app.py", "line": 3}]),
        (
            PLAIN,
            WRITE_CALL,
            "edit",
            "Write notes/new.md",
            ["diff"],
            [{"path": f"{CWD}/notes/new.md", "line": 1}],
        ),
        (PLAIN, BASH_CALL, "execute", "pytest -q", ["content", "content"], None),
        (TERM, BASH_CALL, "execute", "pytest -q", ["content", "terminal"], None),
        (TERM, BASH_MULTILINE, "execute", "cat <<'EOF' ↵ hello `world` ↵ EOF", ["content", "terminal"], None),
        (
            TERM,
            READ_CALL,
            "read",
            "Read src/app.py (10 - 12)",
            [],
            [{"path": f"{CWD}/src/app.py", "line": 10}],
        ),
    ],
)
def test_tool_call_started(
    ctx: WireContext, view: Any, kind: str, title: str, types: list[str], locations: Any
) -> None:
    args = {"file_path": "src/app.py"}
    update = tool_call_started(ctx, "c1", "mystery" if view is None else "tool", args, view, "pending")
    assert update["sessionUpdate"] == "tool_call"
    assert update["toolCallId"] == "c1"
    assert update["status"] == "pending"
    assert update["kind"] == kind
    assert update["title"] == title
    assert content_types(update) == types
    assert update.get("locations") == locations
    assert update["rawInput"] == args
    assert update["_meta"]["acpBridge"]["tool"] == ("mystery" if view is None else "tool")
    assert_wire_update(update)


def test_diff_paths_are_absolute() -> None:
    update = tool_call_started(PLAIN, "c1", "write", {}, WRITE_CALL, "pending")
    assert update["content"] == [
        {"type": "diff", "path": f"{CWD}/notes/new.md", "oldText": None, "newText": "# hi\n"}
    ]


@pytest.mark.parametrize(
    ("view_cwd", "expected"),
    [(None, CWD), ("sub", f"{CWD}/sub"), ("/abs/dir", "/abs/dir"), ("../up", "/work/up")],
)
def test_terminal_start_with_opt_in_has_terminal_block_and_info(view_cwd: str | None, expected: str) -> None:
    view = TerminalCallView(title="ls", description="List", cwd=view_cwd)
    update = tool_call_started(TERM, "call-7", "bash", {"command": "ls"}, view, "in_progress")
    assert {"type": "terminal", "terminalId": "call-7"} in update["content"]
    assert update["_meta"]["terminal_info"] == {"terminal_id": "call-7", "cwd": expected}
    assert update["_meta"]["acpBridge"]["description"] == "List"
    assert texts(update).startswith("List")  # the description renders above the terminal
    assert_wire_update(update)


def test_terminal_start_without_opt_in_shows_the_command() -> None:
    update = tool_call_started(PLAIN, "c1", "bash", {"command": "pytest -q"}, BASH_CALL, "pending")
    assert "terminal_info" not in update["_meta"]
    assert "terminal" not in content_types(update)
    assert "```console\n$ pytest -q\n```" in texts(update)


def test_multiline_command_is_shown_in_full() -> None:
    update = tool_call_started(TERM, "c1", "bash", {}, BASH_MULTILINE, "pending")
    body = texts(update)
    assert "$ cat <<'EOF'\nhello `world`\nEOF" in body


@pytest.mark.parametrize(
    ("arguments", "raw"),
    [
        ({"a": 1}, {"a": 1}),
        (snapshot({"a": [1, {"b": "c"}]}), {"a": [1, {"b": "c"}]}),  # frozen values thaw
        ('{"broken": ', '{"broken": '),  # a raw string stays a string
        (None, None),
    ],
)
def test_raw_input_is_the_arguments(arguments: Any, raw: Any) -> None:
    update = tool_call_started(PLAIN, "c1", "t", arguments, None, "pending")
    assert update.get("rawInput") == raw
    assert update["title"] == "t"
    assert_wire_update(update)


def test_raw_input_is_bounded() -> None:
    huge = {"file_path": "big.txt", "content": "x" * 10_000_000}
    update = tool_call_started(PLAIN, "c1", "write", huge, None, "pending")
    assert wire_size({"r": update["rawInput"]}) < 40_000
    assert update["rawInput"]["file_path"] == "big.txt"
    assert "bytes omitted" in update["rawInput"]["content"]


def test_tool_call_status() -> None:
    update = tool_call_status(PLAIN, "c1", "in_progress")
    assert update == {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"}
    assert_wire_update(update)


@pytest.mark.parametrize("view", [None, READ_CALL, EDIT_CALL])
def test_a_refined_card_is_the_full_card_as_an_update_that_replaces_content_and_locations(view: Any) -> None:
    started = tool_call_started(PLAIN, "c1", "t", {"file_path": "a.py"}, view, "pending")
    refined = tool_call_refined(PLAIN, "c1", "t", {"file_path": "a.py"}, view, "pending")
    assert refined["sessionUpdate"] == "tool_call_update"
    assert {k: v for k, v in refined.items() if k != "sessionUpdate"} == {
        "content": [],
        "locations": [],
        **{k: v for k, v in started.items() if k != "sessionUpdate"},
    }
    assert_wire_update(refined)


def test_session_state_updates() -> None:
    assert mode_update("plan") == {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}
    assert usage_update(120, 64000) == {"sessionUpdate": "usage_update", "used": 120, "size": 64000}
    assert available_commands([("forget", "Forget rules", None), ("mode", "Switch mode", "mode id")]) == {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [
            {"name": "forget", "description": "Forget rules"},
            {"name": "mode", "description": "Switch mode", "input": {"hint": "mode id"}},
        ],
    }


# === live terminal output ============================================================================


def test_live_output_with_opt_in_is_a_delta() -> None:
    update = terminal_output(TERM, "c1", "line 2\n", "line 1\nline 2\n")
    assert update == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "_meta": {"terminal_output": {"terminal_id": "c1", "data": "line 2\n"}},
    }
    assert_wire_update(update)


def test_live_output_without_opt_in_is_the_whole_console_block() -> None:
    update = terminal_output(PLAIN, "c1", "b\n", "a\nb\n\n", call_view=BASH_CALL)
    assert "_meta" not in update
    assert update["content"][0]["content"]["text"] == "Run the tests"
    assert update["content"][-1]["content"]["text"] == "```console\n$ pytest -q\na\nb\n```"
    assert_wire_update(update)


def test_live_output_without_opt_in_keeps_a_bounded_tail() -> None:
    so_far = "".join(f"line {i}\n" for i in range(100_000))
    update = terminal_output(PLAIN, "c1", "", so_far)
    body = texts(update)
    assert "line 99999" in body and "line 0\n" not in body
    assert re.search(r"\(truncated, \d+ bytes of earlier output omitted\)", body)
    assert wire_size(update) < 80_000


# === completed: terminal =============================================================================


def test_terminal_completed_with_opt_in_sends_no_content() -> None:
    update = only(tool_call_completed(TERM, "c1", "bash", {}, BASH_CALL, ok("1 passed"), TERMINAL_RESULT))
    assert "content" not in update  # content would replace (wipe) the terminal block
    assert update["status"] == "completed"
    assert update["_meta"]["terminal_output"] == {"terminal_id": "c1", "data": "1 passed\n\n"}
    assert update["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": 0, "signal": None}
    assert update["rawOutput"]["exitCode"] == 0
    assert_wire_update(update)


def test_terminal_completed_does_not_resend_streamed_output() -> None:
    update = only(
        tool_call_completed(
            TERM, "c1", "bash", {}, BASH_CALL, ok(), TERMINAL_RESULT, terminal_output_sent=True
        )
    )
    assert "terminal_output" not in update["_meta"]
    assert update["_meta"]["terminal_exit"]["terminal_id"] == "c1"


@pytest.mark.parametrize(
    ("view", "sent", "data"),
    [
        # Killed by a timeout after streaming: the reason goes on a fresh line of the terminal.
        (TerminalResultView(output="tick\n", signal="SIGKILL"), True, "\r\ntimed out after 120 s\r\n"),
        (TerminalResultView(output="tick\n", signal="SIGKILL"), False, "tick\ntimed out after 120 s\r\n"),
        (TerminalResultView(output="tick", signal="SIGKILL"), False, "tick\r\ntimed out after 120 s\r\n"),
    ],
)
def test_terminal_failure_message_goes_into_the_terminal(
    view: TerminalResultView, sent: bool, data: str
) -> None:
    result = failed("timed out after 120 s", "tick\n[timed out]", code="TIMEOUT")
    update = only(
        tool_call_completed(TERM, "c1", "bash", {}, BASH_CALL, result, view, terminal_output_sent=sent)
    )
    assert update["status"] == "failed"
    assert update["_meta"]["terminal_output"]["data"] == data
    assert update["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": None, "signal": "SIGKILL"}
    assert update["rawOutput"]["error"] == {"message": "timed out after 120 s", "code": "TIMEOUT"}
    assert_wire_update(update)


def test_rejected_terminal_with_opt_in_closes_the_terminal_with_the_reason() -> None:
    result = failed('the user rejected tool "bash"', code="DENIED")
    update = only(tool_call_completed(TERM, "c1", "bash", {}, BASH_CALL, result, None))
    assert update["_meta"]["terminal_output"]["data"] == 'the user rejected tool "bash"'  # said once
    assert update["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": None, "signal": None}


def test_terminal_note_and_full_output_path_with_opt_in() -> None:
    view = TerminalResultView(output="ok\n", exit_code=0, full_output_path=f"{CWD}/.out/full.log")
    update = only(
        tool_call_completed(
            TERM, "c1", "bash", {}, BASH_CALL, ok(), view, note="allowed by rule: bash `pytest`"
        )
    )
    assert update["_meta"]["terminal_output"]["data"] == (
        "ok\nFull output: .out/full.log\r\nallowed by rule: bash `pytest`\r\n"
    )
    assert update["_meta"]["acpBridge"]["note"] == "allowed by rule: bash `pytest`"


def test_huge_unsent_terminal_output_is_split_not_cut() -> None:
    ctx = WireContext(CWD, terminal_meta=True, max_update_bytes=64 * 1024)
    output = "".join(f"{i:07d}\n" for i in range(20_000))  # 160 KB
    updates = tool_call_completed(
        ctx, "c1", "bash", {}, BASH_CALL, ok(), TerminalResultView(output=output, exit_code=0)
    )
    assert len(updates) > 1
    assert "".join(u["_meta"]["terminal_output"]["data"] for u in updates) == output
    assert all("status" not in u for u in updates[:-1])
    assert updates[-1]["status"] == "completed" and "terminal_exit" in updates[-1]["_meta"]
    for update in updates:
        assert wire_size(update) <= ctx.max_update_bytes
        assert_wire_update(update)


@pytest.mark.parametrize(
    ("output", "exit_code", "signal", "block", "status_line"),
    [
        ("1 passed\n\n\n", 0, None, "```console\n$ pytest -q\n1 passed\n```", None),
        ("", 0, None, "```console\n$ pytest -q\n```", None),
        (
            "use ```fences```\n",
            1,
            None,
            "````console\n$ pytest -q\nuse ```fences```\n````",
            "Exited with code 1",
        ),
        ("\x1b[31mred\x1b[0m\n10%\r50%\r100%\n", 0, None, "```console\n$ pytest -q\nred\n100%\n```", None),
        ("partial", None, "SIGTERM", "```console\n$ pytest -q\npartial\n```", "Terminated by signal SIGTERM"),
    ],
)
def test_terminal_completed_without_opt_in_is_a_console_block(
    output: str, exit_code: int | None, signal: str | None, block: str, status_line: str | None
) -> None:
    view = TerminalResultView(output=output, exit_code=exit_code, signal=signal)
    update = only(tool_call_completed(PLAIN, "c1", "bash", {}, BASH_CALL, ok(output), view))
    shown = [b["content"]["text"] for b in update["content"]]
    assert shown[0] == "Run the tests"
    assert shown[1] == block
    assert (shown[2] if len(shown) > 2 else None) == status_line
    assert "terminal_exit" not in update["_meta"]
    assert_wire_update(update)


def test_terminal_without_opt_in_failure_shows_error() -> None:
    result = failed("command not found: pytset", "bash: pytset: command not found")
    view = TerminalResultView(output="bash: pytset: command not found\n", exit_code=127)
    update = only(tool_call_completed(PLAIN, "c1", "bash", {}, BASH_CALL, result, view))
    assert update["status"] == "failed"
    assert "command not found: pytset" in texts(update)
    assert "Exited with code 127" in texts(update)


def test_terminal_call_with_failed_presenter_falls_back_to_raw_text() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "bash", {}, BASH_CALL, ok("raw out\n"), None))
    assert "```console\n$ pytest -q\nraw out\n```" in texts(update)
    update = only(tool_call_completed(TERM, "c1", "bash", {}, BASH_CALL, ok("raw out\n"), None))
    assert update["_meta"]["terminal_output"]["data"] == "raw out\n"
    assert "content" not in update


@pytest.mark.parametrize("call_view", [None, READ_CALL, EDIT_CALL])
@pytest.mark.parametrize("ctx", [PLAIN, TERM])
def test_orphan_terminal_result_falls_back_to_generic(ctx: WireContext, call_view: Any) -> None:
    update = only(tool_call_completed(ctx, "c1", "t", {}, call_view, ok("raw result"), TERMINAL_RESULT))
    assert "terminal_output" not in update["_meta"] and "terminal_exit" not in update["_meta"]
    assert texts(update) == "raw result"
    assert "exitCode" not in update["rawOutput"]
    assert_wire_update(update)


# === completed: generic, diff, search, read, web =====================================================


@pytest.mark.parametrize(
    ("view", "result", "expected_text", "title"),
    [
        (None, ok("plain"), "plain", None),
        (None, ok("two\nlines"), "```\ntwo\nlines\n```", None),
        (GenericResultView(content=(ContentText(text="**nice**"),)), ok("raw"), "**nice**", None),
        (
            GenericResultView(title=f"Did {CWD}/src/app.py"),
            ok("raw"),
            "raw",
            "Did src/app.py",
        ),  # no content: raw
        (GenericResultView(content=()), ok("raw"), "raw", None),
        (GenericResultView(content=None), ok("raw"), "raw", None),
    ],
)
def test_generic_result(view: Any, result: ToolResult, expected_text: str, title: str | None) -> None:
    update = only(tool_call_completed(PLAIN, "c1", "t", {}, READ_CALL, result, view))
    assert update["status"] == "completed"
    assert texts(update) == expected_text
    assert update.get("title") == title
    assert "locations" not in update  # the call's locations stay
    assert_wire_update(update)


def test_result_without_anything_to_show_keeps_the_pending_content() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "t", {}, EDIT_CALL, ToolResult((), False), None))
    assert "content" not in update  # never `content: []`, which would blank the card


def test_image_results_are_kept() -> None:
    result = ToolResult((TextBlock("a picture"), ImageBlock("aGk=", "image/png")), False)
    update = only(tool_call_completed(PLAIN, "c1", "t", {}, None, result, None))
    assert update["content"][1] == {
        "type": "content",
        "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"},
    }
    assert_wire_update(update)
    big = ToolResult((ImageBlock("A" * 600_000, "image/png"),), False)
    update = only(tool_call_completed(PLAIN, "c1", "t", {}, None, big, None))
    assert texts(update) == "[image image/png, 600000 bytes: too large to show]"


def test_diff_result_one_block_per_hunk_and_locations() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "edit", {}, EDIT_CALL, ok("edited"), DIFF_RESULT))
    assert update["kind"] == "edit"
    assert update["title"] == "Edit src/app.py"
    assert [b["type"] for b in update["content"]] == ["diff", "diff"]
    assert update["content"][0] == {
        "type": "diff",
        "path": f"{CWD}/src/app.py",
        "oldText": "a\nx = 1\nb",
        "newText": "a\nx = 2\nb",
    }
    assert update["locations"] == [
        {"path": f"{CWD}/src/app.py", "line": 3},
        {"path": f"{CWD}/src/app.py", "line": 30},
    ]
    assert_wire_update(update)


def test_create_result_is_absolute_with_null_old_text() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "write", {}, WRITE_CALL, ok(), CREATE_RESULT))
    assert update["content"] == [
        {"type": "diff", "path": f"{CWD}/notes/new.md", "oldText": None, "newText": "# hi\n"}
    ]
    assert update["locations"] == [{"path": f"{CWD}/notes/new.md", "line": 1}]


def test_empty_diff_result_keeps_raw_content() -> None:
    update = only(
        tool_call_completed(PLAIN, "c1", "edit", {}, EDIT_CALL, ok("no change"), DiffResultView(diffs=()))
    )
    assert texts(update) == "no change"


def test_search_matches() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "grep", {}, GREP_CALL, ok("raw"), SEARCH_RESULT))
    assert update["kind"] == "search"
    assert update["title"] == "Search 'TODO' in src"
    assert texts(update) == (
        "7 matches in 4 files; showing the first 3 matches in 2 files\n\n"
        "```\nsrc/a.py:3: # TODO a\nsrc/a.py:9: # TODO b\n\nsrc/b.py:1: # TODO c\n```"
    )
    assert update["locations"] == [
        {"path": f"{CWD}/src/a.py", "line": 3},
        {"path": f"{CWD}/src/a.py", "line": 9},
        {"path": f"{CWD}/src/b.py", "line": 1},
    ]
    assert update["rawOutput"] == {"isError": False, "total": 7, "truncated": True, "text": "raw"}
    assert_wire_update(update)


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        (GLOB_RESULT, "Found 2 paths\n\n```\nsrc/a.py\n/elsewhere/b.py\n```"),
        (
            SearchResultView(
                shape="matches",
                truncated=True,
                total=18_316,
                files=6_136,
                matches=(SearchFileMatches(path=f"{CWD}/a", lines=(SearchLine(number=1, text="x"),)),),
            ),
            "18,316 matches in 6,136 files; showing the first 1 match in 1 file\n\n```\na:1: x\n```",
        ),
        (
            # A card from an older log: the files found in all are not known, so none are claimed.
            SearchResultView(
                shape="matches",
                truncated=True,
                total=450,
                matches=(SearchFileMatches(path=f"{CWD}/a", lines=(SearchLine(number=1, text="x"),)),),
            ),
            "450 matches; showing the first 1 match in 1 file\n\n```\na:1: x\n```",
        ),
        (
            SearchResultView(shape="paths", truncated=True, total=13_353, paths=(f"{CWD}/a",)),
            "Found 13,353 paths (showing 1 of 13,353)\n\n```\na\n```",
        ),
        (SearchResultView(shape="matches", truncated=False, total=0), "No matches."),
        (SearchResultView(shape="paths", truncated=False, total=0), "No files found."),
        (
            SearchResultView(
                shape="matches",
                truncated=False,
                total=3,
                matches=(
                    SearchFileMatches(path=f"{CWD}/a", count=2),
                    SearchFileMatches(path=f"{CWD}/b", count=1),
                ),
            ),
            "Found 3 results\n\n```\na: 2 matches\n\nb: 1 match\n```",
        ),
        (
            SearchResultView(
                shape="matches",
                truncated=False,
                total=1,
                matches=(
                    SearchFileMatches(path=f"{CWD}/a", lines=(SearchLine(number=1, text="x ``` y\tz"),)),
                ),
            ),
            "Found 1 match in 1 file\n\n````\na:1: x ``` y    z\n````",
        ),
    ],
)
def test_search_shapes(view: SearchResultView, expected: str) -> None:
    update = only(tool_call_completed(PLAIN, "c1", "glob", {}, None, ok(), view))
    assert texts(update) == expected
    assert_wire_update(update)


def test_search_locations_are_capped() -> None:
    matches = tuple(
        SearchFileMatches(path=f"{CWD}/f{i}.py", lines=(SearchLine(number=1, text="hit"),))
        for i in range(500)
    )
    view = SearchResultView(shape="matches", truncated=False, total=500, matches=matches)
    update = only(tool_call_completed(PLAIN, "c1", "grep", {}, None, ok(), view))
    assert len(update["locations"]) == MAX_LOCATIONS
    assert texts(update).count("hit") == 500  # the text lists them all; only the anchors are capped


def test_read_result() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "read", {}, READ_CALL, ok("raw"), READ_RESULT))
    assert update["kind"] == "read"
    assert update["title"] == "Read src/app.py (10 - 12)"
    assert texts(update) == (
        "````python\n10 │ def f():\n11 │     return '```'\n12 │ # end\n````\n\nLines 10–12 of 40"
    )
    assert update["locations"] == [{"path": f"{CWD}/src/app.py", "line": 10}]
    assert update["rawOutput"]["path"] == f"{CWD}/src/app.py"
    assert_wire_update(update)


def test_read_windows_anywhere_in_a_file_number_their_lines_alike() -> None:
    """Numbers are aligned to the last line's width, however the prefixes are made (kept per width up
    to a bound, grown as later windows reach further, formatted per line past it), in any order."""
    starts = [8, 1, 95, 9_990, 9_998, 3, 99_999, 1]
    for first in starts:
        view = ReadResultView(
            path="a.py", offset=first, lines=ReadFileLine.window(first, ["a", "b", "c"]), total_lines=10**6
        )
        update = only(tool_call_completed(PLAIN, "c1", "read", {}, None, ok(), view))
        width = len(str(first + 2))
        rows = [f"{str(first + k).rjust(width)} │ {t}" for k, t in enumerate("abc")]
        assert texts(update).split("\n")[1:4] == rows, first


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        (ReadResultView(path="a.txt", offset=1, lines=(), total_lines=0), "(empty file)"),
        (
            ReadResultView(path="a.txt", offset=90, lines=(), total_lines=5),
            "(no lines from line 90: the file has 5 lines)",
        ),
        (
            ReadResultView(path="a.bin", offset=1, lines=(), total_lines=3, content="binary file (3 KB)"),
            "```\nbinary file (3 KB)\n```",
        ),
        (
            ReadResultView(
                path="a.md",
                offset=1,
                lines=(ReadFileLine(number=1, text="hi"),),
                total_lines=1,
                lang="markdown",
            ),
            "```markdown\n1 │ hi\n```",
        ),
        (
            ReadResultView(
                path="a.md",
                offset=1,
                lines=(ReadFileLine(number=1, text="hi"),),
                total_lines=1,
                truncated=True,
            ),
            "```\n1 │ hi\n```\n\nLines 1–1 of 1 (truncated)",
        ),
        (  # a partial window across a digit boundary: the numbers aligned to the last one's width
            ReadResultView(
                path="a.py", offset=8, lines=ReadFileLine.window(8, ["a", "", "{x}", "d"]), total_lines=99
            ),
            "```\n 8 │ a\n 9 │ \n10 │ {x}\n11 │ d\n```\n\nLines 8–11 of 99",
        ),
        (  # lines built from mappings, as a presenter returning a plain mapping gives them
            ReadResultView(
                path="a.py",
                offset=99,
                lines=[{"number": 99, "text": "y"}, {"number": 100, "text": "z"}],  # type: ignore[list-item]
                total_lines=100,
            ),
            "```\n 99 │ y\n100 │ z\n```\n\nLines 99–100 of 100",
        ),
    ],
)
def test_read_shapes(view: ReadResultView, expected: str) -> None:
    update = only(tool_call_completed(PLAIN, "c1", "read", {}, None, ok(), view))
    assert texts(update) == expected
    assert update["locations"] == [{"path": resolve_path(view.path, CWD), "line": view.offset}]


def test_web_fetch() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "web_fetch", {}, None, ok("# Title\nbody"), WEB_FETCH))
    assert update["kind"] == "fetch"
    assert texts(update) == (
        "Fetched <https://example.org/doc> · HTTP 200 · `text/html` (truncated)\n```\n# Title\nbody\n```"
    )
    assert update["rawOutput"]["url"] == "https://example.org/doc"
    assert update["rawOutput"]["statusCode"] == 200
    assert_wire_update(update)


def test_web_search() -> None:
    update = only(tool_call_completed(PLAIN, "c1", "web_search", {}, None, ok(), WEB_SEARCH))
    assert texts(update) == "It is 42.\n\n1. [The \\[answer\\]](<https://a.example/x>) — forty ↵ two"
    empty = only(
        tool_call_completed(PLAIN, "c1", "web_search", {}, None, ok("nothing"), WebResultView(kind="search"))
    )
    assert texts(empty) == "nothing"


@pytest.mark.parametrize(
    ("view", "result", "expected_first"),
    [
        (None, failed("file not found: a.py", "Error: file not found: a.py"), "Error: file not found: a.py"),
        (None, failed("boom", "something else"), "```\nboom\n```"),
        (DiffResultView(diffs=()), failed("old_string not found"), "old_string not found"),
        (GenericResultView(content=(ContentText(text="pretty"),)), failed("bad args"), "```\nbad args\n```"),
        (None, ToolResult((), True, None), "```\nthe tool failed\n```"),
    ],
)
def test_failed_calls_show_the_error(view: Any, result: ToolResult, expected_first: str) -> None:
    update = only(tool_call_completed(PLAIN, "c1", "t", {}, EDIT_CALL, result, view))
    assert update["status"] == "failed"
    assert update["content"][0]["content"]["text"] == expected_first
    assert update["rawOutput"]["isError"] is True
    assert_wire_update(update)


def test_note_is_shown_first() -> None:
    update = only(
        tool_call_completed(
            PLAIN, "c1", "read", {}, READ_CALL, ok(), READ_RESULT, note="allowed: read in roots"
        )
    )
    assert update["content"][0]["content"]["text"] == "allowed: read in roots"
    assert update["_meta"]["acpBridge"]["note"] == "allowed: read in roots"


def test_non_terminal_result_on_terminal_card_still_closes_the_terminal() -> None:
    update = only(tool_call_completed(TERM, "c1", "bash", {}, BASH_CALL, ok(), READ_RESULT))
    assert update["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": None, "signal": None}
    assert_wire_update(update)


def test_raw_output_is_bounded() -> None:
    result = ok("y" * 5_000_000)
    update = only(tool_call_completed(PLAIN, "c1", "t", {}, None, result, None))
    assert len(json.dumps(update["rawOutput"])) < 12_000
    assert "bytes omitted" in update["rawOutput"]["text"]
    term = only(
        tool_call_completed(
            PLAIN,
            "c1",
            "bash",
            {},
            BASH_CALL,
            result,
            TerminalResultView(output="z" * 5_000_000 + "END", exit_code=0),
        )
    )
    assert term["rawOutput"]["output"].endswith("END")
    assert len(json.dumps(term["rawOutput"])) < 12_000


# === payload budget ==================================================================================

TEN_MB = 10 * 1024 * 1024


@pytest.mark.parametrize("cap", [DEFAULT_MAX_UPDATE_BYTES, 64 * 1024])
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda ctx: tool_call_started(
                ctx,
                "c",
                "write",
                {},
                DiffCallView(
                    title="Write a", diffs=(FileDiff(path="a", old_text=None, new_text="n" * TEN_MB),)
                ),
                "pending",
            ),
            id="huge-create-diff",
        ),
        pytest.param(
            lambda ctx: only(
                tool_call_completed(
                    ctx,
                    "c",
                    "edit",
                    {},
                    None,
                    ok(),
                    DiffResultView(
                        diffs=tuple(
                            FileDiff(path=f"f{i}", old_text="o" * 100_000, new_text="é" * 100_000)
                            for i in range(300)
                        )
                    ),
                )
            ),
            id="many-large-diffs",
        ),
        pytest.param(
            lambda ctx: only(tool_call_completed(ctx, "c", "t", {}, None, ok("line\n" * 2_000_000), None)),
            id="huge-text",
        ),
        pytest.param(
            lambda ctx: only(
                tool_call_completed(
                    ctx,
                    "c",
                    "t",
                    {},
                    None,
                    ok(),
                    GenericResultView(content=(ContentText(text="\x00" * TEN_MB),)),
                )
            ),
            id="escape-heavy-text",
        ),
        pytest.param(
            lambda ctx: tool_call_completed(
                ctx,
                "c",
                "bash",
                {},
                BASH_CALL,
                ok(),
                TerminalResultView(output="o" * TEN_MB + "\n", exit_code=0),
            ),
            id="huge-console",
        ),
        pytest.param(lambda ctx: terminal_output(ctx, "c", "d" * TEN_MB, "d" * TEN_MB), id="huge-live-delta"),
        pytest.param(
            lambda ctx: permission_tool_call(
                ctx,
                "c",
                "write",
                {"content": "c" * TEN_MB},
                DiffCallView(
                    title="Write a", diffs=(FileDiff(path="a", old_text="x" * TEN_MB, new_text="c" * TEN_MB),)
                ),
                "why",
            ),
            id="huge-permission",
        ),
        pytest.param(
            lambda ctx: agent_message_chunk("m" * TEN_MB, max_bytes=ctx.max_update_bytes), id="huge-chunk"
        ),
    ],
)
def test_every_update_fits_the_budget(cap: int, make: Any) -> None:
    for terminal_meta in (False, True):
        ctx = WireContext(CWD, terminal_meta=terminal_meta, max_update_bytes=cap)
        made = make(ctx)
        updates = made if isinstance(made, list) else [made]
        for update in updates:
            assert wire_size(update) <= cap
        # Cut visibly, never silently.
        assert re.search(
            r"truncated, \d+ bytes (of earlier output )?omitted|content omitted", json.dumps(updates)
        )


def test_truncation_keeps_fences_closed() -> None:
    ctx = WireContext(CWD, max_update_bytes=64 * 1024)
    text = "```\n" + "a" * 500_000 + "\n````x"
    update = only(tool_call_completed(ctx, "c", "t", {}, None, ok(text), None))
    body = texts(update)
    opening = fences(body)[0]
    assert len(opening) > longest_backtick_run(text)
    assert body.endswith("\n" + opening)


def test_bound_update_is_public_and_idempotent_for_small_updates() -> None:
    small = agent_message_chunk("hi")
    assert bound_update(dict(small)) == small


# === permission prompts ==============================================================================


@pytest.mark.parametrize(
    ("ctx", "view", "reason", "types", "must_show"),
    [
        (PLAIN, EDIT_CALL, "edits need approval", ["content", "diff"], ["edits need approval"]),
        (PLAIN, WRITE_CALL, None, ["diff"], []),
        (
            PLAIN,
            BASH_CALL,
            "bash asks",
            ["content", "content", "content"],
            ["```console\n$ pytest -q\n```", "bash asks"],
        ),
        (TERM, BASH_CALL, None, ["content", "content", "terminal"], ["```console\n$ pytest -q\n```"]),
        (PLAIN, READ_CALL, "outside roots", ["content", "content"], ['"file_path": "src/app.py"']),
        (PLAIN, None, None, ["content"], ['"file_path": "src/app.py"']),
        (
            PLAIN,
            GenericCallView(title="Tell", content=(ContentText(text="what"),)),
            None,
            ["content"],
            ["what"],
        ),
    ],
)
def test_permission_tool_call(
    ctx: WireContext, view: Any, reason: str | None, types: list[str], must_show: list[str]
) -> None:
    tool_call = permission_tool_call(ctx, "c1", "tool", {"file_path": "src/app.py"}, view, reason)
    assert "sessionUpdate" not in tool_call
    assert tool_call["toolCallId"] == "c1"
    assert tool_call["status"] == "pending"
    assert content_types(tool_call) == types
    for text in must_show:
        assert text in texts(tool_call)
    if reason:
        assert tool_call["content"][0]["content"]["text"] == reason
    assert_wire_permission(tool_call)


def test_permission_for_a_diff_has_absolute_locations() -> None:
    tool_call = permission_tool_call(PLAIN, "c1", "write", {}, WRITE_CALL, None)
    assert tool_call["locations"] == [{"path": f"{CWD}/notes/new.md", "line": 1}]
    assert tool_call["title"] == "Write notes/new.md"
    assert tool_call["kind"] == "edit"


# === plans ===========================================================================================


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (
            {
                "todos": [
                    {"content": "a", "status": "completed", "priority": "high"},
                    {"content": "b", "status": "pending"},
                ]
            },
            [
                {"content": "a", "priority": "high", "status": "completed"},
                {"content": "b", "priority": "medium", "status": "pending"},
            ],
        ),
        (
            {"plan": [{"content": "x", "status": "in_progress", "priority": None}]},
            [{"content": "x", "priority": "medium", "status": "in_progress"}],
        ),
        (
            snapshot({"todos": [{"content": "f", "status": "pending", "activeForm": "Fing"}]}),
            [{"content": "f", "priority": "medium", "status": "pending"}],
        ),
        ({"todos": []}, []),
        ({"todos": [{"content": "a", "status": "done"}]}, None),
        ({"todos": [{"content": "a", "status": "pending", "priority": "urgent"}]}, None),
        ({"todos": [{"status": "pending"}]}, None),
        ({"todos": ["a"]}, None),
        ({"todos": "a"}, None),
        ({"other": 1}, None),
        (None, None),
        ([1, 2], None),
    ],
)
def test_plan_from_result(meta: Any, expected: list[dict[str, str]] | None) -> None:
    update = plan_from_result(ToolResult((TextBlock("ok"),), False, None, meta))
    if expected is None:
        assert update is None
    else:
        assert update == {"sessionUpdate": "plan", "entries": expected}
        assert_wire_update(update)


def test_failed_todo_write_is_not_a_plan() -> None:
    meta = {"todos": [{"content": "a", "status": "pending"}]}
    assert plan_from_result(ToolResult((TextBlock("bad"),), True, ToolFailureInfo("bad"), meta)) is None


# === message chunks ==================================================================================


@pytest.mark.parametrize(
    ("fn", "kind"),
    [
        (agent_message_chunk, "agent_message_chunk"),
        (agent_thought_chunk, "agent_thought_chunk"),
        (user_message_chunk, "user_message_chunk"),
    ],
)
def test_message_chunks(fn: Any, kind: str) -> None:
    update = fn("hello")
    assert update == {"sessionUpdate": kind, "content": {"type": "text", "text": "hello"}}
    assert_wire_update(update)
    with_id = fn("x", message_id="m1")
    assert with_id["messageId"] == "m1"
    assert_wire_update(with_id)


PROMPT_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "Explain:"},
    {"type": "resource_link", "uri": "file:///w/a.txt", "name": "a.txt", "title": "A",
     "mimeType": "text/plain", "description": "the notes", "size": 12},
    {"type": "resource",
     "resource": {"uri": "file:///w/b.py", "mimeType": "text/x-python", "text": "x = 1\n"}},
    {"type": "resource", "resource": {"uri": "file:///w/c.bin", "blob": "AAEC"}},
    {"type": "image", "mimeType": "image/png", "data": "aGk=", "uri": "file:///w/d.png"},
]  # fmt: skip


def test_a_replayed_prompts_blocks_become_user_chunks_as_they_were_sent() -> None:
    for block in PROMPT_BLOCKS:
        update = user_content_chunk(block)
        assert update == {"sessionUpdate": "user_message_chunk", "content": block}
        assert_wire_update(update)
    for junk in ({"type": "audio"}, {"type": "text"}, {"type": "resource", "resource": {"text": "no uri"}},
                 {"type": "image", "data": "aGk="}, {"type": "resource_link", "name": "no uri"}):  # fmt: skip
        assert user_content_chunk(junk) is None


def test_a_replayed_prompts_blocks_stay_within_the_payload_budget() -> None:
    text = user_content_chunk(
        {"type": "resource", "resource": {"uri": "file:///w/big.log", "text": "y" * 50_000}}, max_bytes=4096
    )
    assert text is not None and len(json.dumps(text)) <= 4096
    assert text["content"]["type"] == "resource" and "truncated" in json.dumps(text)
    blob = user_content_chunk(
        {"type": "resource", "resource": {"uri": "file:///w/a%20b.zip", "mimeType": "application/zip",
                                          "blob": "A" * 8000}},
        max_bytes=4096,
    )  # fmt: skip
    assert blob == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "resource_link", "uri": "file:///w/a%20b.zip", "name": "a b.zip", "size": 6000,
                    "mimeType": "application/zip"},
    }  # fmt: skip
    image = user_content_chunk({"type": "image", "mimeType": "image/png", "data": "A" * 8000}, max_bytes=4096)
    assert image is not None and image["content"] == {
        "type": "text",
        "text": "[image image/png, 6000 bytes: too large to show]",
    }
    for update in (text, blob, image):
        assert_wire_update(update)


# === golden: every update the module can produce validates against the SDK ============================

CALL_VIEWS: list[Any] = [
    None,
    READ_CALL,
    GREP_CALL,
    TODO_CALL,
    BASH_CALL,
    BASH_MULTILINE,
    EDIT_CALL,
    WRITE_CALL,
]
RESULT_VIEWS: list[Any] = [
    None,
    GenericResultView(title="t", content=(ContentText(text="c"),)),
    TERMINAL_RESULT,
    TerminalResultView(output=None, signal="SIGINT", full_output_path="/tmp/full.log"),
    DIFF_RESULT,
    CREATE_RESULT,
    SEARCH_RESULT,
    GLOB_RESULT,
    READ_RESULT,
    WEB_FETCH,
    WEB_SEARCH,
]
RESULTS = [ok("fine\n"), failed("nope", "Error: nope"), ToolResult((ImageBlock("aGk=", "image/png"),), False)]


def _every_update() -> list[tuple[str, Update]]:
    out: list[tuple[str, Update]] = []
    for ctx in (PLAIN, TERM):
        tag = "term" if ctx.terminal_meta else "plain"
        for ci, call_view in enumerate(CALL_VIEWS):
            out.append(
                (f"{tag}-start-{ci}", tool_call_started(ctx, "c", "t", {"a": 1}, call_view, "pending"))
            )
            out.append(
                (f"{tag}-refine-{ci}", tool_call_refined(ctx, "c", "t", {"a": 1}, call_view, "in_progress"))
            )
            out.append((f"{tag}-live-{ci}", terminal_output(ctx, "c", "x\n", "w\nx\n", call_view=call_view)))
            for ri, result_view in enumerate(RESULT_VIEWS):
                for xi, result in enumerate(RESULTS):
                    for sent in (False, True):
                        updates = tool_call_completed(
                            ctx,
                            "c",
                            "t",
                            {"a": 1},
                            call_view,
                            result,
                            result_view,
                            terminal_output_sent=sent,
                            note="n",
                        )
                        out += [(f"{tag}-done-{ci}-{ri}-{xi}-{sent}", u) for u in updates]
    out.append(("status", tool_call_status(PLAIN, "c", "failed")))
    plan = plan_from_result(ToolResult((), False, None, {"todos": [{"content": "a", "status": "pending"}]}))
    assert plan is not None
    out.append(("plan", plan))
    out += [
        ("agent", agent_message_chunk("a")),
        ("thought", agent_thought_chunk("t")),
        ("user", user_message_chunk("u")),
        ("usage", usage_update(1200, 64000)),
        ("commands", available_commands([("forget", "Forget", None), ("mode", "Mode", "mode id")])),
    ]
    out += [
        (f"mode-{mode}", mode_update(mode)) for mode in ("default", "accept_edits", "plan", "full_access")
    ]
    return out


EVERY_UPDATE = _every_update()


def test_golden_every_update_round_trips_through_the_sdk_schema() -> None:
    assert len(EVERY_UPDATE) > 1000
    for label, update in EVERY_UPDATE:
        try:
            assert_wire_update(update)
        except AssertionError as exc:  # pragma: no cover - names the failing card
            raise AssertionError(f"{label}: {exc}") from exc
        assert wire_size(update) <= DEFAULT_MAX_UPDATE_BYTES
        if "title" in update:
            assert "\n" not in update["title"]
        for location in update.get("locations") or []:
            assert os.path.isabs(location["path"])
        content = update.get("content")
        for block in content if isinstance(content, list) else []:
            if block["type"] == "diff":
                assert os.path.isabs(block["path"])
        meta = update.get("_meta") or {}
        # The terminal convention only when the client opted in.
        if any(k in meta for k in ("terminal_info", "terminal_output", "terminal_exit")):
            assert label.startswith("term")


def test_golden_every_permission_request_round_trips() -> None:
    for ctx in (PLAIN, TERM):
        for view in CALL_VIEWS:
            for reason in (None, "because"):
                assert_wire_permission(permission_tool_call(ctx, "c", "t", {"a": 1}, view, reason))


def test_golden_terminal_card_with_opt_in_never_gets_content_after_start() -> None:
    checked = 0
    for label, update in EVERY_UPDATE:
        # Terminal call views (4, 5) completed by a terminal, generic or missing result view (0-3).
        parts = label.split("-")
        if parts[0] == "term" and parts[1] == "done" and parts[2] in ("4", "5") and parts[3] in "0123":
            assert "content" not in update, label
            checked += 1
    assert checked > 0


@settings(max_examples=200)
@given(st.text(alphabet=st.sampled_from("`a\n ~"), max_size=60))
def test_fences_are_longer_than_any_backtick_run(text: str) -> None:
    view = ReadResultView(
        path="x", offset=1, lines=(ReadFileLine(number=1, text=text.replace("\n", " ")),), total_lines=1
    )
    update = only(tool_call_completed(PLAIN, "c", "read", {}, None, ok(), view))
    body = texts(update)
    opening = fences(body)[0]
    assert len(opening) > longest_backtick_run(text)
    assert len(opening) >= 3
