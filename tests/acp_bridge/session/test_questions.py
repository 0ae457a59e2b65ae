"""The `ask_user` tool end to end: a form elicitation (`elicitation/create`) when the client offers one,
else a permission request whose options are the answers (free text as the answer's `_meta.feedback`);
the answer reaches the card and the model. And a rejection's reason reaches the model whichever place of
the answer carries it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient, selected, write_script
from tests.support.fake_openai_server import FakeOpenAIServer, chat

from .conftest import openai_bridge, sent_messages


def _ask(options: list[str], free_text: bool = False) -> dict[str, Any]:
    arguments = {
        "question": "Which colour should the button be?",
        "options": options,
        "allow_free_text": free_text,
    }
    return {"id": "q1", "name": "ask_user", "arguments": arguments}


async def _asking(
    bridges: StartBridge,
    tmp_path: Path,
    workspace: Path,
    client: RecordingClient,
    call: dict[str, Any],
    *,
    form: bool,
) -> tuple[Bridge, str]:
    script = write_script(tmp_path / "s.json", [[{"tool_calls": [call]}, {"text": "Thanks."}]])
    bridge = await bridges(model=script, client=client)
    await bridge.initialize(elicitation=form)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "style the button") == "end_turn"
    return bridge, session_id


def _card(bridge: Bridge) -> tuple[str, str]:
    final = bridge.call_updates("q1")[-1]
    return final["status"], str(final.get("content"))


async def test_a_question_is_a_form_elicitation_when_the_client_offers_one(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = RecordingClient(elicitation=lambda request: {"action": "accept", "content": {"answer": "Blue"}})
    bridge, session_id = await _asking(bridges, tmp_path, workspace, client, _ask(["Red", "Blue"]), form=True)
    (asked,) = client.elicitations
    assert asked == {
        "message": "Which colour should the button be?",
        "sessionId": session_id,
        "toolCallId": "q1",
        "requestedSchema": {
            "type": "object",
            "properties": {"answer": {"type": "string", "title": "Answer", "oneOf": [
                {"const": "Red", "title": "Red"}, {"const": "Blue", "title": "Blue"}]}},
            "required": ["answer"],
        },
    }  # fmt: skip
    assert client.permission_requests == []
    status, content = _card(bridge)
    assert status == "completed" and "**Answer:** Blue" in content


async def test_a_free_text_form_answer_and_a_declined_form(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    answers = iter([{"action": "accept", "content": {"answer": "Red", "other": "Teal, please"}}])
    client = RecordingClient(elicitation=lambda request: next(answers, {"action": "decline"}))
    bridge, _ = await _asking(
        bridges, tmp_path, workspace, client, _ask(["Red", "Blue"], free_text=True), form=True
    )
    schema = client.elicitations[0]["requestedSchema"]
    assert set(schema["properties"]) == {"answer", "other"} and "required" not in schema
    assert "**Answer:** Teal, please" in _card(bridge)[1]

    declined = RecordingClient(elicitation=lambda request: {"action": "decline"})
    other, _ = await _asking(bridges, tmp_path, workspace, declined, _ask(["Red", "Blue"]), form=True)
    status, content = _card(other)
    assert status == "completed" and "Declined." in content


async def test_without_elicitation_the_answers_are_the_options_of_a_permission_request(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = RecordingClient(lambda s, call, options: selected("answer_1"))
    bridge, _ = await _asking(bridges, tmp_path, workspace, client, _ask(["Red", "Green"]), form=False)
    (request,) = client.permission_requests
    assert [(o["optionId"], o["name"], o["kind"]) for o in request["options"]] == [
        ("answer_0", "Red", "allow_once"),
        ("answer_1", "Green", "allow_once"),
        ("decline", "Decline", "reject_once"),
    ]
    assert request["toolCall"]["toolCallId"] == "q1"
    assert "Which colour should the button be?" in request["toolCall"]["title"]
    assert "**Answer:** Green" in _card(bridge)[1]


async def test_a_free_text_answer_travels_as_the_feedback_of_the_permission_answer(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    typed = {"outcome": {"outcome": "selected", "optionId": "reply", "_meta": {"feedback": "Sea green"}}}
    client = RecordingClient(lambda s, call, options: typed)
    bridge, _ = await _asking(bridges, tmp_path, workspace, client, _ask([]), form=False)
    (request,) = client.permission_requests
    assert [o["optionId"] for o in request["options"]] == ["reply", "decline"]
    assert "**Answer:** Sea green" in _card(bridge)[1]


async def test_the_answer_reaches_the_model(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    call = {
        "id": "call_q",
        "name": "ask_user",
        "arguments": {"question": "Tabs or spaces?", "options": ["Tabs", "Spaces"]},
    }
    server.enqueue(chat(tool_calls=[call]), chat(text="Spaces it is."))
    client = RecordingClient(
        elicitation=lambda request: {"action": "accept", "content": {"answer": "Spaces"}}
    )
    bridge = await bridges("--base-url", server.base_url, model="openai:fake-model", client=client,
                           env={"ACP_BRIDGE_API_KEY": "test-key"})  # fmt: skip
    await bridge.initialize(elicitation=True)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "indent the file") == "end_turn"
    tool = next(m for m in sent_messages(server, 1) if m["role"] == "tool")
    assert tool["content"] == "The user answered: Spaces"
    tools = {t["function"]["name"] for t in server.requests[0].json()["tools"]}
    assert "ask_user" in tools


async def test_a_rejections_reason_on_the_response_reaches_the_model(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    call = {"id": "call_1", "name": "bash", "arguments": {"command": "rm -rf dist"}}
    server.enqueue(chat(tool_calls=[call]), chat(text="Keeping dist."))
    answer = {"outcome": {"outcome": "selected", "optionId": "reject_once"},
              "_meta": {"feedback": "dist holds the signed build"}}  # fmt: skip
    bridge = await openai_bridge(bridges, server, client=RecordingClient(lambda s, c, o: answer))
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "clean") == "end_turn"
    tool = next(m for m in sent_messages(server, 1) if m["role"] == "tool")
    assert "The user said: dist holds the signed build" in tool["content"]
