"""What users attach reaches the model: embedded resources (text with its URI, bounded; binary described),
images (to a vision model as OpenAI `image_url` data URLs; a model without vision refuses the prompt,
saying why), and images a tool returns (a `read` of a PNG: on the card, and to the model)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from acp_bridge.prompt_blocks import CONTEXT_BUDGET_BYTES
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
