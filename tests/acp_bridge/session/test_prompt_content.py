"""What users attach reaches the model: embedded resources (text with its URI, bounded; binary described),
images (to a vision model as OpenAI `image_url` data URLs; a model without vision refuses the prompt,
saying why), and images a tool returns (a `read` of a PNG: on the card, and to the model). The session log
keeps a prompt's blocks as the user sent them (bounded), so `session/load` replays them as sent."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from acp_bridge.session.prompt_blocks import CONTEXT_BUDGET_BYTES
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script
from tests.support.fake_openai_server import FakeOpenAIServer, chat

from .conftest import openai_bridge, sent_messages, text_of, write_png


async def _prompt(bridge: Bridge, session_id: str, blocks: list[dict[str, Any]]) -> str:
    answer = await asyncio.wait_for(
        bridge.request("session/prompt", {"sessionId": session_id, "prompt": blocks}), 20
    )
    return str(answer["stopReason"])


def _image_block(png: bytes) -> dict[str, Any]:
    return {"type": "image", "mimeType": "image/png", "data": base64.b64encode(png).decode()}


def _user_content(server: FakeOpenAIServer, index: int = 0) -> Any:
    return next(m["content"] for m in sent_messages(server, index) if m["role"] == "user")


async def test_an_embedded_resource_reaches_the_model_with_its_uri_and_text(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="I see the selection."))
    bridge = await openai_bridge(bridges, server)
    session_id = await bridge.new_session(workspace)
    uri = f"file://{workspace}/app.py#L3-4"
    blocks = [
        {"type": "text", "text": "Explain this:"},
        {
            "type": "resource",
            "resource": {"uri": uri, "mimeType": "text/x-python", "text": "def f():\n    pass\n"},
        },
    ]
    assert await _prompt(bridge, session_id, blocks) == "end_turn"
    content = _user_content(server)
    assert content.startswith("Explain this:\n\n")
    assert f'<resource uri="{uri}" mimeType="text/x-python">\ndef f():\n    pass\n</resource>' in content


async def test_embedded_context_is_bounded_and_binary_resources_are_described(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="ok"))
    bridge = await openai_bridge(bridges, server)
    session_id = await bridge.new_session(workspace)
    big = "".join(f"line {n:06d}\n" for n in range(60_000))  # 720 KB
    blocks = [
        {"type": "text", "text": "Summarise"},
        {"type": "resource", "resource": {"uri": "file:///big.log", "text": big}},
        {"type": "resource", "resource": {"uri": "file:///small.txt", "text": "small and whole"}},
        {
            "type": "resource",
            "resource": {"uri": "file:///a.zip", "mimeType": "application/zip", "blob": "UEsDBA=="},
        },
    ]
    assert await _prompt(bridge, session_id, blocks) == "end_turn"
    content = _user_content(server)
    assert len(content.encode()) < CONTEXT_BUDGET_BYTES + 2_000
    assert "line 000000" in content and "line 059999" in content  # cut in the middle
    assert "bytes of this resource left out" in content
    assert "small and whole" in content
    assert "[Attached binary resource: file:///a.zip (application/zip, 4 bytes)" in content


async def test_an_image_reaches_a_vision_model_as_a_data_url(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    server.enqueue(chat(text="A grey square."))
    bridge = await openai_bridge(bridges, server, "--vision")
    session_id = await bridge.new_session(workspace)
    png = write_png(tmp_path / "shot.png")
    assert (
        await _prompt(bridge, session_id, [{"type": "text", "text": "What is it?"}, _image_block(png)])
        == "end_turn"
    )
    assert _user_content(server) == [
        {"type": "text", "text": "What is it?"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()},
        },
    ]


async def test_an_image_for_a_model_without_vision_is_refused_with_a_clear_error(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    bridge = await openai_bridge(bridges, server, model="deepseek-chat")
    session_id = await bridge.new_session(workspace)
    png = write_png(tmp_path / "shot.png")
    with pytest.raises(RequestError) as refused:
        await _prompt(bridge, session_id, [{"type": "text", "text": "What is it?"}, _image_block(png)])
    assert refused.value.code == -32602
    assert "openai:deepseek-chat cannot see images" in str(refused.value)
    assert "--vision" in str(refused.value)
    assert server.requests == []  # nothing reached the model


async def test_the_scripted_model_sees_the_prompts_image_and_a_read_png(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    attached = write_png(tmp_path / "attached.png", 4, 5)
    write_png(workspace / "diagram.png", 2, 3)
    steps = [
        {"text": "Let me look at the diagram too.",
         "tool_calls": [{"id": "r1", "name": "read", "arguments": {"file_path": "diagram.png"}}]},
        {"text": "Seen.", "describe_images": True},
    ]  # fmt: skip
    bridge = await bridges(model=write_script(tmp_path / "s.json", [steps]))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert (
        await _prompt(bridge, session_id, [{"type": "text", "text": "Compare"}, _image_block(attached)])
        == "end_turn"
    )
    said = text_of(bridge.updates(session_id))
    assert "I was given 2 image(s): image/png 4×5" in said
    assert "image/png 2×3" in said and "(from `read`)" in said
    final = bridge.call_updates("r1")[-1]
    assert final["status"] == "completed" and final["title"] == "Read diagram.png"
    images = [b["content"] for b in final["content"] if b["content"]["type"] == "image"]
    data = base64.b64encode((workspace / "diagram.png").read_bytes()).decode()
    assert images == [{"type": "image", "mimeType": "image/png", "data": data}]


@pytest.mark.parametrize("vision", [True, False])
async def test_a_read_png_is_given_to_a_vision_model_and_named_to_others(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, vision: bool
) -> None:
    png = write_png(workspace / "diagram.png")
    read = {"id": "call_r", "name": "read", "arguments": {"file_path": "diagram.png"}}
    server.enqueue(chat(tool_calls=[read]), chat(text="Seen."))
    bridge = await openai_bridge(bridges, server, "--vision" if vision else "--no-vision")
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "look at the diagram") == "end_turn"
    messages = sent_messages(server, 1)
    roles = [m["role"] for m in messages]
    tool = messages[roles.index("tool")]
    if vision:
        assert roles[-2:] == ["tool", "user"]  # the image follows the step's tool messages
        image = messages[-1]["content"][-1]
        assert image == {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()},
        }
    else:
        assert roles[-1] == "tool"
        assert "this model cannot see images" in tool["content"]


async def test_a_prompts_image_is_stored_replayed_by_load_and_seen_again_after_a_restart(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    png = write_png(tmp_path / "shot.png", 6, 7)
    script = write_script(
        tmp_path / "s.json", [[{"text": "Noted."}], [{"text": "Still here.", "describe_images": True}]]
    )
    state = ("--state-dir", str(tmp_path / "state"))
    live = await bridges(*state, model=script)
    await live.initialize()
    session_id = await live.new_session(workspace)
    assert (
        await _prompt(live, session_id, [{"type": "text", "text": "Keep this"}, _image_block(png)])
        == "end_turn"
    )
    await live.stop()

    again = await bridges(*state, model=script)
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    user = [u["content"] for u in again.updates(session_id) if u["sessionUpdate"] == "user_message_chunk"]
    assert user == [
        {"type": "text", "text": "Keep this"},
        {"type": "image", "mimeType": "image/png", "data": base64.b64encode(png).decode()},
    ]
    assert await again.prompt(session_id, "what did I show you?") == "end_turn"
    assert "I was given 1 image(s): image/png 6×7" in text_of(again.updates(session_id))


def _user_chunks(bridge: Bridge, session_id: str) -> list[dict[str, Any]]:
    return [u["content"] for u in bridge.updates(session_id) if u["sessionUpdate"] == "user_message_chunk"]


def _logged_prompts(state_home: Path, session_id: str) -> list[dict[str, Any]]:
    log = state_home / "acp-bridge" / "sessions" / f"{session_id}.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [event for event in events if event.get("type") == "user"]


async def test_load_replays_a_prompt_with_attachments_as_the_blocks_the_user_sent(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    """What Zed sends for "@a.txt @app.py explain, and this screenshot": the user's words, a link, an
    embedded file and an image come back as those four chips, not as the text the model was given; and
    the model's context after the load is the one it had before."""
    png = write_png(tmp_path / "shot.png", 3, 4)
    blocks = [
        {"type": "text", "text": "Explain these, and the screenshot:"},
        {
            "type": "resource_link",
            "uri": f"file://{workspace}/a.txt",
            "name": "a.txt",
            "mimeType": "text/plain",
        },
        {
            "type": "resource",
            "resource": {
                "uri": f"file://{workspace}/app.py",
                "mimeType": "text/x-python",
                "text": "print(1)\n",
            },
        },
        _image_block(png),
    ]
    server.enqueue(chat(text="Two files and a grey square."), chat(text="Nothing else."))
    live = await openai_bridge(bridges, server, "--vision")
    session_id = await live.new_session(workspace)
    assert await _prompt(live, session_id, blocks) == "end_turn"
    assert await live.prompt(session_id, "Anything else?") == "end_turn"
    context_before = sent_messages(server, 1)
    await live.stop()

    server.enqueue(chat(text="Nothing else."))
    again = await openai_bridge(bridges, server, "--vision")
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert _user_chunks(again, session_id) == [*blocks, {"type": "text", "text": "Anything else?"}]
    assert again.schema_errors == []
    assert await again.prompt(session_id, "Anything else?") == "end_turn"
    # The context the model had live, then the exchange that followed it.
    continued = [
        {"role": "assistant", "content": "Nothing else."},
        {"role": "user", "content": "Anything else?"},
    ]
    assert sent_messages(server, 2) == [*context_before, *continued]


async def test_an_oversized_attachment_is_bounded_in_the_log_and_replayed_as_the_model_saw_it(
    bridges: StartBridge, tmp_path: Path, workspace: Path, state_home: Path
) -> None:
    big = "".join(f"line {n:06d}\n" for n in range(60_000))  # 720 KB
    archive = base64.b64encode(b"PK\x03\x04" + bytes(400_000)).decode()  # 400 KB of zip
    blocks = [
        {"type": "text", "text": "Summarise"},
        {"type": "resource", "resource": {"uri": "file:///logs/big.log", "text": big}},
        {
            "type": "resource",
            "resource": {"uri": "file:///dl/a.zip", "mimeType": "application/zip", "blob": archive},
        },
    ]
    script = write_script(tmp_path / "s.json", [[{"text": "Summarised."}]])
    live = await bridges(model=script)
    await live.initialize()
    session_id = await live.new_session(workspace)
    assert await _prompt(live, session_id, blocks) == "end_turn"
    await live.stop()

    (prompt,) = _logged_prompts(state_home, session_id)
    # The blocks add about one budget to the line (what the model was given), not the megabyte sent.
    assert len(json.dumps(prompt["blocks"])) < 1.2 * CONTEXT_BUDGET_BYTES
    text, resource, link = prompt["blocks"]
    assert text == blocks[0]
    kept = resource["resource"]["text"]
    assert kept.startswith("line 000000") and kept.rstrip().endswith("line 059999")
    assert "bytes of this resource left out" in kept and len(kept) < CONTEXT_BUDGET_BYTES + 1_000
    assert link == {
        "type": "resource_link", "uri": "file:///dl/a.zip", "name": "a.zip",
        "mimeType": "application/zip", "size": 400_004,
    }  # fmt: skip

    again = await bridges(model=script)
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert _user_chunks(again, session_id) == [
        text,
        {"type": "resource", "resource": {"uri": "file:///logs/big.log", "text": kept}},
        link,
    ]
    assert again.schema_errors == []


async def test_a_log_with_prompts_logged_before_and_after_their_blocks_were_kept_replays_each(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path, state_home: Path
) -> None:
    """A prompt logged without its blocks (by an older bridge) replays as it always did, its text then
    its images; one logged with them replays them; both give the model the text they logged."""
    png = base64.b64encode(write_png(tmp_path / "shot.png")).decode()
    session_id = "sess_" + "0" * 31 + "7"
    link = {"type": "resource_link", "uri": f"file://{workspace}/a.txt", "name": "a.txt"}
    lines = [
        {"type": "session", "sessionId": session_id, "cwd": str(workspace), "roots": [str(workspace)],
         "createdAt": "2026-01-01T00:00:00+00:00"},
        {"type": "user", "text": "Old prompt", "images": [{"mimeType": "image/png", "data": png}]},
        {"type": "assistant", "text": "Seen.", "thought": "", "toolCalls": []},
        {"type": "user", "text": f"New prompt\n\n[Resource: a.txt](file://{workspace}/a.txt)",
         "blocks": [{"type": "text", "text": "New prompt"}, link]},
        {"type": "assistant", "text": "Read.", "thought": "", "toolCalls": []},
    ]  # fmt: skip
    sessions = state_home / "acp-bridge" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{session_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    server.enqueue(chat(text="ok"))
    bridge = await openai_bridge(bridges, server, "--vision")
    await bridge.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert _user_chunks(bridge, session_id) == [
        {"type": "text", "text": "Old prompt"},
        {"type": "image", "mimeType": "image/png", "data": png},
        {"type": "text", "text": "New prompt"},
        link,
    ]
    assert bridge.schema_errors == []
    assert await bridge.prompt(session_id, "Next") == "end_turn"
    said = [m["content"] for m in sent_messages(server, 0) if m["role"] == "user"]
    assert said == [
        [{"type": "text", "text": "Old prompt"},
         {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}],
        f"New prompt\n\n[Resource: a.txt](file://{workspace}/a.txt)",
        "Next",
    ]  # fmt: skip
