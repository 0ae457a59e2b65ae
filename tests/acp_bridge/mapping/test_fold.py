"""acp_bridge.mapping.fold: the update stream folded back into cards (call id → what the card shows).

Inputs are built by the real mapping, as the core sends them; the same frames read after a round trip
through the ACP SDK (as the demo receives them) fold to the same cards."""

from __future__ import annotations

import io
from typing import Any

from acp import schema
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge import mapping
from acp_bridge.demo.render import CardPrinter, Style
from acp_bridge.lsp.derive import UpdateView
from acp_bridge.mapping import (
    Card,
    CardPatch,
    ModeChange,
    PlanChange,
    TextChunk,
    card_of,
    fold_cards,
    next_card,
    read_patch,
    read_update,
)
from acp_bridge.mapping.fold import OUTPUT_TAIL_CHARS
from registry_core import ToolFailureInfo, ToolResult, text
from registry_core.presentation import (
    ContentText,
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
BASH = TerminalCallView(title="npm test", description="Run the tests")


def _fold(updates: list[Any]) -> dict[str, Card]:
    return fold_cards(updates)


def _bash_turn(ctx: mapping.WireContext) -> list[Any]:
    """A bash call as the turn streams it: announced, approved, live output, completed with exit 1."""
    args = {"command": "npm test"}
    result = ToolResult(content=text("PASS a\nFAIL b\n"), is_error=True)
    view = TerminalResultView(output="PASS a\nFAIL b\n", exit_code=1)
    return [
        mapping.tool_call_started(ctx, "b1", "bash", args, BASH, "pending"),
        mapping.tool_call_status(ctx, "b1", "in_progress"),
        mapping.terminal_output(ctx, "b1", "PASS a\n", "PASS a\n", call_view=BASH),
        mapping.terminal_output(ctx, "b1", "FAIL b\n", "PASS a\nFAIL b\n", call_view=BASH),
        *mapping.tool_call_completed(ctx, "b1", "bash", args, BASH, result, view, terminal_output_sent=True),
    ]


# --- a stream → the final cards ------------------------------------------------------------------------


def test_a_terminal_call_folds_to_its_final_card_with_the_convention() -> None:
    card = _fold(_bash_turn(META))["b1"]
    assert (card.title, card.kind, card.status) == ("npm test", "execute", "failed")
    assert card.output == "PASS a\nFAIL b\n"  # the deltas, appended
    assert card.exited == mapping.Exited(exit_code=1, signal=None)
    assert card.outcome.exit_code == 1
    assert card.command == "npm test"
    # `_meta` replaces as a whole (ACP): the final update's `acpBridge` is the card's now.
    assert card.bridge == mapping.BridgeInfo(tool="bash")
    assert _fold(_bash_turn(META)[:1])["b1"].bridge.description == "Run the tests"
    # The final update carried no content (it would wipe the terminal): the card keeps the started one's.
    assert [block["type"] for block in card.content] == ["content", "terminal"]


def test_a_terminal_call_folds_to_the_same_output_without_the_convention() -> None:
    card = _fold(_bash_turn(PLAIN))["b1"]
    assert card.status == "failed"
    assert card.output == "PASS a\nFAIL b"  # read from the card's ```console block
    assert card.exited is None
    assert "Exited with code 1" in card.texts


def test_live_console_frames_replace_the_output_and_say_what_is_new() -> None:
    started = mapping.tool_call_started(PLAIN, "b1", "bash", {"command": "npm test"}, BASH, "in_progress")
    card = next_card(None, read_patch(started))
    assert card is not None and card.output == "" and card.new_output == ""
    for shown in ("step 1\n", "step 1\nstep 2\n"):
        frame = mapping.terminal_output(PLAIN, "b1", "", shown, call_view=BASH)
        card = next_card(card, read_patch(frame))
        assert card is not None and card.output == shown.rstrip("\n") == card.new_output
    status = next_card(card, read_patch(mapping.tool_call_status(PLAIN, "b1", "completed")))
    assert status is not None and status.new_output is None and status.output == "step 1\nstep 2"


def test_a_multi_line_command_is_not_taken_for_output() -> None:
    command = "for i in 1 2\ndo echo $i; done"
    view = TerminalCallView(title=command)
    updates = [
        mapping.tool_call_started(PLAIN, "b1", "bash", {"command": command}, view, "in_progress"),
        mapping.terminal_output(PLAIN, "b1", "", "1\n2\n", call_view=view),
    ]
    assert _fold(updates)["b1"].output == "1\n2"


def test_the_terminal_output_kept_is_a_bounded_tail() -> None:
    card = next_card(None, read_patch(mapping.tool_call_started(META, "b1", "bash", {}, BASH, "in_progress")))
    for index in range(5):
        frame = mapping.terminal_output(META, "b1", f"{index}" * OUTPUT_TAIL_CHARS, "")
        card = next_card(card, read_patch(frame))
    assert card is not None and card.output == "4" * OUTPUT_TAIL_CHARS


def test_an_edit_folds_to_its_applied_diff_and_anchors() -> None:
    diff = FileDiff(path=f"{CWD}/a.py", old_text="x = 1\n", new_text="x = 2\n")
    call = DiffCallView(title=f"Edit {CWD}/a.py", diffs=(diff,))
    applied = DiffResultView(diffs=(diff,), locations=(FileLocation(path=f"{CWD}/a.py", line=1),))
    args = {"file_path": "a.py"}
    updates = [
        mapping.tool_call_started(META, "e1", "edit", args, call, "pending"),
        mapping.tool_call_status(META, "e1", "in_progress"),
        *mapping.tool_call_completed(META, "e1", "edit", args, call, ToolResult(text("ok"), False), applied),
    ]
    card = _fold(updates)["e1"]
    assert (card.title, card.kind, card.status) == ("Edit a.py", "edit", "completed")
    assert card.diffs == [{"type": "diff", "path": f"{CWD}/a.py", "oldText": "x = 1\n", "newText": "x = 2\n"}]
    assert card.locations == ({"path": f"{CWD}/a.py", "line": 1},)
    assert card.outcome == mapping.Outcome()


def test_a_failed_call_keeps_its_reason_and_note() -> None:
    denied = ToolResult(text("no"), True, ToolFailureInfo("The user rejected this `read` call.", "DENIED"))
    updates = [
        mapping.tool_call_started(
            META, "r1", "read", {}, GenericCallView(title="Read x", kind="read"), "pending"
        ),
        *mapping.tool_call_completed(META, "r1", "read", {}, None, denied, None, note="Denied: a rule."),
    ]
    card = _fold(updates)["r1"]
    assert card.status == "failed"
    assert card.outcome.error == "The user rejected this `read` call."
    assert card.bridge.note == "Denied: a rule."


def test_a_card_announced_while_streaming_takes_its_refined_fields() -> None:
    view = GenericCallView(
        title=f"Read {CWD}/a.py", kind="read", locations=(FileLocation(path=f"{CWD}/a.py", line=3),)
    )
    updates = [
        mapping.tool_call_started(META, "r1", "read", None, None, "pending"),
        mapping.tool_call_refined(META, "r1", "read", {"file_path": "a.py"}, view, "in_progress"),
    ]
    card = _fold(updates)["r1"]
    assert (card.title, card.kind, card.status) == ("Read a.py", "read", "in_progress")
    assert card.raw_input == {"file_path": "a.py"}
    assert card.locations == ({"path": f"{CWD}/a.py", "line": 3},)


def test_calls_fold_apart_and_a_repeated_tool_call_starts_its_card_afresh() -> None:
    read = GenericCallView(title="Read x", kind="read", content=(ContentText(text="first"),))
    updates = [
        mapping.tool_call_started(META, "a", "read", {}, read, "in_progress"),
        mapping.tool_call_started(
            META, "b", "bash", {"command": "ls"}, TerminalCallView(title="ls"), "pending"
        ),
        mapping.tool_call_status(META, "a", "completed"),
        mapping.tool_call_started(
            META, "b", "grep", {}, GenericCallView(title="Search", kind="search"), "pending"
        ),
    ]
    cards = _fold(updates)
    assert (cards["a"].status, cards["a"].texts) == ("completed", ["first"])
    assert (cards["b"].title, cards["b"].kind, cards["b"].bridge.tool) == ("Search", "search", "grep")
    assert cards["b"].raw_input == {} and cards["b"].command is None


def test_an_update_for_a_card_that_never_appeared_changes_nothing() -> None:
    assert next_card(None, read_patch(mapping.tool_call_status(META, "ghost", "completed"))) is None
    assert _fold([mapping.tool_call_status(META, "ghost", "completed")]) == {}


def test_a_permission_requests_tool_call_reads_as_a_card() -> None:
    call = mapping.permission_tool_call(META, "b1", "bash", {"command": "rm -rf build"}, None, "Why: cleanup")
    card = card_of(call)
    assert (card.call_id, card.status, card.command, card.bridge.tool) == (
        "b1",
        "pending",
        "rm -rf build",
        "bash",
    )
    assert card.texts[0] == "Why: cleanup"


def test_a_nested_call_s_card_names_its_program_and_keeps_it() -> None:
    args = {"file_path": "a.txt"}
    updates = [
        mapping.tool_call_started(META, "p1", "run_code", {"code": "1"}, None, "in_progress"),
        mapping.with_parent(mapping.tool_call_started(META, "p1:1", "read", args, None, "pending"), "p1"),
        mapping.tool_call_status(META, "p1:1", "in_progress"),  # no `_meta`: says nothing of the parent
        *(
            mapping.with_parent(update, "p1")
            for update in mapping.tool_call_completed(
                META, "p1:1", "read", args, None, ToolResult(text("a"), False), None
            )
        ),
    ]
    assert read_patch(updates[1]).parent == "p1"
    assert read_patch(updates[2]).parent is None
    cards = _fold(updates)
    assert (cards["p1:1"].parent, cards["p1:1"].status) == ("p1", "completed")
    assert cards["p1"].parent is None
    assert _fold(updates[:3])["p1:1"].parent == "p1"
    assert fold_cards(_through_the_sdk(updates)) == cards  # as the demo receives them


def test_a_repeated_tool_call_without_a_parent_is_a_call_of_its_own() -> None:
    nested = mapping.with_parent(mapping.tool_call_started(META, "c1", "read", {}, None, "pending"), "p1")
    again = mapping.tool_call_started(META, "c1", "read", {}, None, "pending")
    assert _fold([nested, again])["c1"].parent is None


def test_a_malformed_parent_reads_as_absent() -> None:
    started = mapping.tool_call_started(META, "c1", "read", {}, None, "pending")
    for junk in (7, "", None, {"id": "p1"}):
        update = {**started, "_meta": {**started["_meta"], "parentToolCallId": junk}}
        assert read_patch(update).parent is None


# --- the other updates -------------------------------------------------------------------------------


def test_the_other_updates_read_as_typed_events() -> None:
    assert read_update(mapping.agent_thought_chunk("hm")) == TextChunk("agent_thought_chunk", "hm")
    assert read_update(mapping.user_message_chunk("hi")) == TextChunk("user_message_chunk", "hi")
    assert read_update(mapping.mode_update("plan")) == ModeChange("plan")
    todos = {"todos": [{"content": "fix", "status": "in_progress", "priority": "high"}]}
    plan = mapping.plan_from_result(ToolResult(text("ok"), False, meta=todos))
    assert plan is not None
    assert read_update(plan) == PlanChange(({"content": "fix", "priority": "high", "status": "in_progress"},))
    assert read_update(mapping.usage_update(1, 2)) is None  # no face shows it
    assert read_update(mapping.available_commands([("mode", "Set the mode", None)])) is None


def test_a_replayed_prompts_blocks_read_as_user_chunks_the_faces_pass_over() -> None:
    """A prompt replayed as the user sent it (a link, an embedded file, an image): the fold reads each
    block as a user chunk (its text when it is one), as sent and after the SDK; the LSP face and the demo
    show no user chunk, and none of them trips on a block that is not text."""
    blocks = [
        {"type": "text", "text": "Explain"},
        {"type": "resource_link", "uri": "file:///w/a.txt", "name": "a.txt"},
        {"type": "resource", "resource": {"uri": "file:///w/b.py", "text": "x = 1\n"}},
        {"type": "resource", "resource": {"uri": "file:///w/c.bin", "blob": "AAEC"}},
        {"type": "image", "mimeType": "image/png", "data": "aGk="},
    ]
    chunks = [mapping.user_content_chunk(block) for block in blocks]
    expected = [TextChunk("user_message_chunk", "Explain"), *[TextChunk("user_message_chunk", None)] * 4]
    assert [read_update(chunk) for chunk in chunks if chunk is not None] == expected
    assert [read_update(chunk) for chunk in _through_the_sdk(chunks)] == expected
    view = UpdateView(progress=True, follow=True)
    assert [view.feed("s", chunk) for chunk in chunks if chunk is not None] == [[]] * 5
    out = io.StringIO()
    printer = CardPrinter(out, Style(enabled=False), cwd=CWD, interactive=False)
    for chunk in chunks:
        assert chunk is not None
        printer.update(chunk)
    assert out.getvalue() == ""


def test_malformed_fields_read_as_absent() -> None:
    started = mapping.tool_call_started(META, "c1", "read", {}, GenericCallView(title="Read x"), "pending")
    card = next_card(None, read_patch(started))
    junk: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "title": 5,
        "status": "exploded",
        "kind": None,
        "content": [{"type": "diff"}, "x", {"type": "content", "content": {"type": "text", "text": 3}}],
        "locations": [{"line": 2}, {"path": "/p", "line": True}],
        "_meta": {"terminal_output": {"data": 7}, "terminal_exit": "no"},
    }
    patch = read_update(junk)
    assert isinstance(patch, CardPatch)
    after = next_card(card, patch)
    assert after is not None
    assert (after.title, after.status, after.kind) == ("Read x", "pending", "other")
    assert after.content == () and after.locations == ({"path": "/p"},)
    assert after.output == "" and after.exited is None
    assert read_update({"sessionUpdate": "tool_call", "title": "no id"}) is None
    assert read_update({"sessionUpdate": "agent_message_chunk", "content": {"type": "image"}}) == TextChunk(
        "agent_message_chunk", None
    )
    assert read_update({"nothing": True}) is None


# --- properties --------------------------------------------------------------------------------------

_paths = st.sampled_from([f"{CWD}/a.py", f"{CWD}/src/b.py", "/elsewhere/c.txt"])
_texts = st.text(alphabet=st.sampled_from(list("ab \n`$:é")), max_size=30)
_locations = st.lists(
    st.builds(FileLocation, path=_paths, line=st.one_of(st.none(), st.integers(1, 40))), max_size=3
).map(tuple)
_call_views = st.one_of(
    st.none(),
    st.builds(TerminalCallView, title=_texts.filter(str.strip), description=st.one_of(st.none(), _texts)),
    st.builds(
        DiffCallView,
        title=_texts,
        diffs=st.lists(
            st.builds(FileDiff, path=_paths, old_text=st.one_of(st.none(), _texts), new_text=_texts),
            min_size=1,
            max_size=2,
        ).map(tuple),
        locations=_locations,
    ),
    st.builds(
        GenericCallView,
        title=_texts,
        kind=st.sampled_from(["read", "search", "fetch", "other"]),
        content=st.lists(st.builds(ContentText, text=_texts), max_size=2).map(tuple),
        locations=_locations,
    ),
)
_statuses = st.sampled_from(["pending", "in_progress", "completed", "failed"])
_results = st.builds(lambda words, failed: ToolResult(text(words), failed), _texts, st.booleans())
_read_views = st.builds(
    ReadResultView,
    path=_paths,
    offset=st.just(1),
    lines=st.lists(st.builds(ReadFileLine, number=st.integers(1, 9), text=_texts), max_size=2).map(tuple),
    total_lines=st.integers(0, 9),
)


@st.composite
def _replacing_updates(draw: st.DrawFn) -> Any:
    """A `tool_call_update` of card c1 with no terminal delta: every field it carries replaces the card's."""
    ctx = draw(st.sampled_from([META, PLAIN]))
    view = draw(_call_views)
    args = {"command": view.title} if isinstance(view, TerminalCallView) else {"file_path": "a"}
    choice = draw(st.sampled_from(["refined", "previewed", "status", "completed", "console"]))
    if choice == "refined":
        return mapping.tool_call_refined(ctx, "c1", "tool", args, view, draw(_statuses))
    if choice == "previewed":
        return mapping.tool_call_previewed(ctx, "c1", "tool", args, view)
    if choice == "status":
        return mapping.tool_call_status(ctx, "c1", draw(_statuses))
    if choice == "console":
        return mapping.terminal_output(PLAIN, "c1", "", draw(_texts), call_view=view)
    result_view = draw(st.one_of(st.none(), _read_views))
    return draw(
        st.sampled_from(
            mapping.tool_call_completed(ctx, "c1", "tool", args, view, draw(_results), result_view)
        )
    )


@settings(max_examples=200, deadline=None)
@given(
    start_view=_call_views,
    status=_statuses,
    before=st.lists(_replacing_updates(), max_size=4),
    update=_replacing_updates(),
)
def test_an_update_whose_fields_replace_is_idempotent(
    start_view: Any, status: Any, before: list[Any], update: Any
) -> None:
    if "_meta" in update and "terminal_output" in update["_meta"]:
        return  # a delta appends by definition (ACP extension: Zed's terminal convention)
    started = mapping.tool_call_started(META, "c1", "tool", {"file_path": "a"}, start_view, status)
    once = fold_cards([started, *before, update])
    twice = fold_cards([update], once)
    assert twice == once


@settings(max_examples=100, deadline=None)
@given(start_view=_call_views, status=_statuses, updates=st.lists(_replacing_updates(), max_size=5))
def test_a_card_reads_the_same_after_a_trip_through_the_sdk(
    start_view: Any, status: Any, updates: list[Any]
) -> None:
    """The demo reads frames as the SDK parsed them, the LSP face as the core built them: the same cards."""
    stream = [
        mapping.tool_call_started(PLAIN, "c1", "tool", {"file_path": "a"}, start_view, status),
        *updates,
    ]
    assert fold_cards(_through_the_sdk(stream)) == fold_cards(stream)


def _through_the_sdk(updates: list[Any]) -> list[Any]:
    """The updates as a client using the ACP SDK receives them (parsed, dumped back to JSON)."""
    return [
        schema.SessionNotification.model_validate({"sessionId": "s", "update": u}).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )["update"]
        for u in updates
    ]


@settings(max_examples=100, deadline=None)
@given(updates=st.lists(_replacing_updates(), max_size=6), status=_statuses)
def test_the_last_value_of_each_field_wins(updates: list[Any], status: Any) -> None:
    started = mapping.tool_call_started(META, "c1", "tool", {"file_path": "a"}, None, status)
    card = fold_cards([started, *updates])["c1"]
    stream = [started, *updates]
    for key, attribute in (("title", "title"), ("kind", "kind"), ("status", "status")):
        last = [u[key] for u in stream if key in u][-1]
        assert getattr(card, attribute) == last
    contents = [u["content"] for u in stream if "content" in u]
    assert list(card.content) == (contents[-1] if contents else [])
