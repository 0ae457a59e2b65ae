"""The session log's typed records (`session_log`): the format on disk is the one logs always had.

`fixtures/session_log_v1.jsonl` is a log the bridge wrote before the records were typed (commit 6c2b204,
the scenario below: three prompts, a mode switch, an "always" answer, a rejected call, a deferred context,
a plan, arguments that are not an object, and a write whose result never came because the bridge was
stopped after the change); `fixtures/session_log_v1.replay.json` is what that code replayed from it
(updates, history, turn index, restored permissions). Both were captured, never edited by hand.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.history.session_log import (
    AssistantStep,
    BackgroundEnded,
    CallCommitted,
    CallSettled,
    ConfigChanged,
    DeferredContext,
    PermissionsChanged,
    SessionHeader,
    UserPrompt,
    decode,
)
from acp_bridge.history.store import SessionStore
from acp_bridge.models import ImageData, ScriptedBackend, ToolCallRequest, parse_script
from acp_bridge.permissions.policy import PolicyConfig
from acp_bridge.session.manager import CoreConfig, SessionManager
from presenters import build_tools
from registry_core import TextBlock, ToolDefinition, ToolFailureInfo, ToolResultEvent, snapshot
from tests.support import bridge_tools, commit_tools
from tests.support.fake_channel import FakeChannel

FIXTURES = Path(__file__).parent / "fixtures"
STORED = FIXTURES / "session_log_v1.jsonl"
REPLAYED = FIXTURES / "session_log_v1.replay.json"
FIXTURE_CWD = "/tmp/acp-bridge-log-fixture/ws"  # where the fixture's session worked
SESSION_ID = "sess_" + "0" * 31 + "1"


def _tools() -> list[ToolDefinition]:
    return [*build_tools(), *bridge_tools.tools(), *commit_tools.tools()]


def _config() -> CoreConfig:
    return CoreConfig(policy=PolicyConfig(allow_tools=frozenset({"nap"})))


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


TODOS = [
    {"content": "Read a.txt", "status": "completed"},
    {"content": "Fix it", "status": "in_progress", "priority": "high"},
]
SCRIPT = {"turns": [
    {"steps": [
        {"thought": "Looking around first.", "text": "Let me read the file.", "tool_calls": [
            _call("r1", "read", {"file_path": "a.txt"}),
            _call("n1", "nap", {"label": "rested", "context": "Remember: the nap happened."}),
            _call("t1", "todo_write", {"todos": TODOS}),
            _call("x1", "read", '{"file_path": not json'),
        ]},
        {"tool_calls": [
            _call("w1", "write", {"file_path": "b.txt", "content": "new file\n"}),
            _call("e1", "edit", {"file_path": "a.txt", "old_string": "hello", "new_string": "hello, editor"}),
        ]},
        {"text": "Done: wrote b.txt and edited a.txt."},
    ]},
    {"steps": [
        {"tool_calls": [_call("b1", "bash", {"command": "echo hi"})]},
        {"tool_calls": [
            _call("e2", "edit", {"file_path": "a.txt", "old_string": "editor", "new_string": "world"}),
        ]},
        {"text": "ok"},
    ]},
    {"steps": [
        {"text": "Writing c.txt.", "tool_calls": [
            _call("h1", "write_then_hang", {"file_path": "c.txt", "content": "c\n"}),
        ]},
    ]},
]}  # fmt: skip


def _prompt(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _stored_lines() -> list[str]:
    return STORED.read_text(encoding="utf-8").splitlines()


def _stored_form(event: Mapping[str, Any]) -> str:
    """A line as `SessionStore` writes it."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)


def _load(events: list[dict[str, Any]]) -> tuple[FakeChannel, Any]:
    channel = FakeChannel()
    manager = SessionManager(channel, ScriptedBackend(parse_script({"turns": []})), _tools(), _config())
    header = json.loads(_stored_lines()[0])
    return channel, manager.reopen("load", SESSION_ID, FIXTURE_CWD, (header, events))


def _fields(message: Any) -> dict[str, Any]:
    # A message's fields as the fixture has them: the images a message may carry today (a field added
    # since, empty for every message of that log) are left out when there are none.
    fields = dataclasses.asdict(message)
    if fields.get("images") == ():
        del fields["images"]
    return fields


def _replayed(channel: FakeChannel, session: Any) -> dict[str, Any]:
    return {
        "updates": channel.sent(),
        "history": [[type(m).__name__, _fields(m)] for m in session.history],
        "turnIndex": session.turn_index,
        "mode": session.permissions.mode,
        "rules": [rule.describe() for rule in session.permissions.rules],
    }


def _expected() -> dict[str, Any]:
    # Through JSON both ways, so tuples in the live values compare equal to the stored lists.
    return json.loads(REPLAYED.read_text(encoding="utf-8"))


def test_every_stored_line_reads_into_a_record_that_writes_it_back_byte_for_byte() -> None:
    header, *events = _stored_lines()
    assert _stored_form(SessionHeader.from_json(json.loads(header)).to_json()) == header
    kinds = set()
    for line in events:
        record = decode(json.loads(line))
        assert record is not None, line
        kinds.add(type(record))
        assert _stored_form(record.to_json()) == line
    assert kinds == {
        UserPrompt,
        AssistantStep,
        CallCommitted,
        CallSettled,
        DeferredContext,
        PermissionsChanged,
    }


def _as_captured(replayed: dict[str, Any]) -> dict[str, Any]:
    """The replay without what the wire gained after the capture: `ToolCall.name` on every `tool_call`
    (checked here to be the tool the card's `_meta.acpBridge.tool` names), and the turn number on the first
    chunk of each prompt (checkpoints; checked here to count the prompts from 1)."""
    replayed = json.loads(json.dumps(replayed))
    cards = [u for u in replayed["updates"] if u["sessionUpdate"] == "tool_call"]
    assert cards and all(card.pop("name") == card["_meta"]["acpBridge"]["tool"] for card in cards)
    chunks = [u for u in replayed["updates"] if u["sessionUpdate"] == "user_message_chunk" and "_meta" in u]
    turns = [chunk.pop("_meta")["acpBridge"]["turn"] for chunk in chunks]
    assert turns == list(range(1, len(turns) + 1)) and turns
    return replayed


def test_a_log_written_before_the_records_were_typed_replays_as_it_did() -> None:
    events = [json.loads(line) for line in _stored_lines()[1:]]
    channel, session = _load(events)
    assert _as_captured(_replayed(channel, session)) == _expected()


def test_a_resume_rebuilds_what_a_load_does_and_sends_none_of_the_conversation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A resume draws no card (replay.py: an unseen replay); the model's history, the next turn's index and
    the permission state must still be exactly the load's, unreadable lines skipped alike."""
    events = [json.loads(line) for line in _stored_lines()[1:]]
    events.insert(3, {"type": "tool/result", "callId": "r9"})  # unreadable: no name
    header = json.loads(_stored_lines()[0])
    resumed = SessionManager(FakeChannel(), ScriptedBackend(parse_script({"turns": []})), _tools(), _config())
    session = resumed.reopen("resume", SESSION_ID, FIXTURE_CWD, (header, events))
    shown_channel, shown = _load(events)
    state = _replayed(shown_channel, shown)
    assert {k: v for k, v in _replayed(resumed.channel, session).items() if k != "updates"} == {
        k: v for k, v in state.items() if k != "updates"
    }
    assert json.loads(json.dumps(state["history"])) == _expected()["history"]  # the captured history
    kinds = {u["sessionUpdate"] for _, u in resumed.channel.updates}  # type: ignore[attr-defined]
    assert not kinds & {"user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "plan"}
    assert sum("unreadable" in r.getMessage() for r in caplog.records) == 2  # once each way


@pytest.mark.parametrize("enabled_before", [True, False])
def test_a_replay_holds_off_the_cyclic_collector_and_leaves_it_as_it_found_it(enabled_before: bool) -> None:
    """replay.py: no collection runs while a long log is replayed (each would walk every object the replay
    keeps alive), and the collector is back as it was afterwards, also when the replay raised."""
    events = [json.loads(line) for line in _stored_lines()[1:]]
    header = json.loads(_stored_lines()[0])
    # (Not the agent's words: the notes on what was restored follow the replay.)
    conversation = {"user_message_chunk", "tool_call", "tool_call_update", "plan"}
    while_replayed: list[bool] = []  # whether the collector was on, for each card the replay sent

    def sent(_session: str, update: dict[str, Any]) -> None:
        if update["sessionUpdate"] in conversation:
            while_replayed.append(gc.isenabled())

    channel = FakeChannel(on_update=sent)
    manager = SessionManager(channel, ScriptedBackend(parse_script({"turns": []})), _tools(), _config())
    was_enabled = gc.isenabled()
    try:
        (gc.enable if enabled_before else gc.disable)()
        manager.reopen("load", SESSION_ID, FIXTURE_CWD, (header, events))
        assert gc.isenabled() is enabled_before

        def failing() -> Iterator[dict[str, Any]]:
            yield from events[:3]
            raise OSError("the disk went away")

        with pytest.raises(OSError):
            manager.reopen("load", SESSION_ID, FIXTURE_CWD, (header, failing()))
        assert gc.isenabled() is enabled_before
    finally:
        (gc.enable if was_enabled else gc.disable)()
    assert len(while_replayed) > 3 and not any(while_replayed)


def test_unknown_types_and_fields_are_passed_over_and_an_unreadable_event_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[dict[str, Any]] = []
    for line in _stored_lines()[1:]:
        event = json.loads(line)
        events.append({**event, "addedLater": {"by": "a newer version"}})
        if event["type"] == "context":
            events.append({"type": "tool/call", "callId": "r1", "name": "read", "arguments": {}})
            events.append({"type": "checkpoint", "at": 3})
            events.append({"type": "user"})  # a known type missing its text
    channel, session = _load(events)
    assert _as_captured(_replayed(channel, session)) == _expected()
    (skipped,) = [r for r in caplog.records if "unreadable" in r.getMessage()]
    assert "'user'" in skipped.getMessage()


def test_decode_reads_known_types_leniently_and_returns_none_for_others() -> None:
    assert decode({"type": "user", "text": "hi", "extra": 1}) == UserPrompt("hi")
    assert decode({"type": "assistant"}) == AssistantStep("", "", ())
    assert decode({"type": "tool/call", "callId": "c"}) is None
    assert decode({"type": ["not", "a", "string"]}) is None
    assert decode({"text": "no type"}) is None
    commit = decode({"type": "tool/commit", "callId": "c"})
    assert commit == CallCommitted("c", "", CallCommitted.DEFAULT_SUMMARY, None)
    assert decode({"type": "permissions", "mode": "plan", "rules": "not a list"}) == PermissionsChanged(
        "plan", ()
    )
    with pytest.raises(KeyError):
        decode({"type": "context"})
    with pytest.raises(TypeError):
        decode({"type": "assistant", "toolCalls": [1]})


def test_each_record_round_trips_through_its_stored_form() -> None:
    result = ToolResultEvent(
        "c1", "read", (TextBlock("no such file"),), True, ToolFailureInfo("no such file", "NOT_FOUND"),
        snapshot({"path": "/w/a.txt"}),
    )  # fmt: skip
    records = [
        UserPrompt("fix it"),
        AssistantStep("On it.", "thinking", (ToolCallRequest("c1", "read", {"file_path": "a.txt"}),
                                             ToolCallRequest("c2", "read", "{broken"))),
        CallCommitted("c3", "write", "Created b.txt.", snapshot({"path": "/w/b.txt", "hunks": []})),
        CallSettled(result, "Allowed by your session rule."),
        CallSettled(result),
        BackgroundEnded(ToolResultEvent("b1", "bash", (TextBlock("Background command b1 exited."),), False,
                                        None, snapshot({"exit_code": 0, "output": "ok\n"}))),
        DeferredContext("remember this"),
        PermissionsChanged("plan", ({"allow": True, "scope": {"tool": "todo_write", "kind": "tool"}},)),
    ]  # fmt: skip
    for record in records:
        assert decode(json.loads(_stored_form(record.to_json()))) == record
    header = SessionHeader(SESSION_ID, "/w", ("/w", "/x"), "2026-01-01T00:00:00Z")
    assert SessionHeader.from_json(json.loads(_stored_form(header.to_json()))) == header


def test_a_config_record_says_auto_compact_only_when_off_and_an_older_one_reads_as_on() -> None:
    older = {"type": "config", "model": "fake-reasoner", "thoughtLevel": "low"}  # before auto-compaction
    assert decode(older) == ConfigChanged("fake-reasoner", "low", True)
    assert ConfigChanged("fake-reasoner", "low", True).to_json() == older  # on: the same line as before
    off = ConfigChanged(None, None, False)
    assert off.to_json() == {"type": "config", "model": None, "thoughtLevel": None, "autoCompact": False}
    assert decode(json.loads(_stored_form(off.to_json()))) == off
    assert decode({**older, "autoCompact": "no"}) == ConfigChanged("fake-reasoner", "low", True)


def test_a_prompts_blocks_round_trip_with_each_image_stored_once() -> None:
    png = "iVBORw0KGgo="
    blocks = (
        {"type": "text", "text": "Look"},
        {"type": "resource_link", "uri": "file:///w/a.txt", "name": "a.txt"},
        {"type": "image", "mimeType": "image/png", "data": png},
        {"type": "resource", "resource": {"uri": "file:///w/b.png", "mimeType": "image/png", "blob": png}},
    )
    record = UserPrompt("Look\n\n[Resource: a.txt](file:///w/a.txt)", (ImageData("image/png", png),) * 2,
                        tuple(snapshot(b) for b in blocks))  # fmt: skip
    stored = record.to_json()
    assert stored["blocks"][2:] == [
        {"type": "image", "mimeType": "image/png", "imageRef": 0},
        {"type": "resource", "resource": {"uri": "file:///w/b.png", "mimeType": "image/png", "imageRef": 0}},
    ]
    assert decode(json.loads(_stored_form(stored))) == record
    # A reference to no image is passed over by the replay (the block has no data to show).
    dangling = decode({**stored, "images": []})
    assert isinstance(dangling, UserPrompt) and dangling.blocks is not None
    assert dangling.blocks[2] == {"type": "image", "mimeType": "image/png", "imageRef": 0}
    assert decode({"type": "user", "text": "hi", "blocks": "not a list"}) == UserPrompt("hi")


async def test_the_bridge_writes_the_same_log_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture's scenario, run again: every line the log gets is one the old code wrote (the results
    of one step may settle in another order; nothing else may differ but the creation time)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\nsecond line\n")
    monkeypatch.setenv(commit_tools.MARKER_ENV, str(tmp_path / "marker"))
    committed = asyncio.Event()

    class Store(SessionStore):
        def append(self, session_id: str, event: Mapping[str, Any]) -> None:
            super().append(session_id, event)
            if event.get("type") == "tool/commit" and event.get("callId") == "h1":
                committed.set()  # the bridge "dies" here: the log is read as it is now

    store = Store(tmp_path / "state")
    channel = FakeChannel(answers={"w1": "allow_always", "b1": "reject_once"})
    backend = ScriptedBackend(parse_script(SCRIPT))
    manager = SessionManager(
        channel, backend, _tools(), _config(), recorder=store, session_ids=lambda: SESSION_ID
    )
    session = manager.new_session(str(workspace))
    assert await session.prompt(_prompt("Fix a.txt please")) == "end_turn"
    assert await session.prompt(_prompt("/mode accept_edits")) == "end_turn"
    assert await session.prompt(_prompt("Now run something")) == "end_turn"
    hanging = asyncio.ensure_future(session.prompt(_prompt("And write c.txt")))
    await asyncio.wait_for(committed.wait(), 10)
    written = (tmp_path / "state" / "sessions" / f"{SESSION_ID}.jsonl").read_text(encoding="utf-8")
    await manager.shutdown()
    assert await asyncio.wait_for(hanging, 5) == "cancelled"

    def comparable(text: str) -> list[str]:
        header, *events = text.splitlines()
        return [_stored_form({**json.loads(header), "createdAt": None}), *events]

    ours = comparable(written.replace(str(workspace), FIXTURE_CWD))
    stored = comparable(STORED.read_text(encoding="utf-8"))
    assert [json.loads(line)["type"] for line in ours] == [json.loads(line)["type"] for line in stored]
    assert sorted(ours) == sorted(stored)
