"""`ask_user` on the LSP face: the real session core behind the real LSP channel (a recording transport in
place of pygls) asks with `window/showMessageRequest`, one action per option; the chosen action is the
answer, a dismissed request a decline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from acp_bridge.lsp.channel import SESSION_UPDATE, LspChannel
from acp_bridge.lsp.options import EditorFeatures, LspOptions
from acp_bridge.models import ScriptedBackend, parse_script
from acp_bridge.session.manager import SessionManager
from presenters import build_tools
from tests.support.lsp_fakes import FakeDocuments, FakeTransport

ASK = {"id": "q1", "name": "ask_user", "arguments": {"question": "Which branch?", "options": ["main", "dev"]}}
FEATURES = EditorFeatures(show_message_request=True)


async def _ask(tmp_path: Path, answer: Any) -> tuple[FakeTransport, str]:
    transport = FakeTransport()
    transport.answers[types.WINDOW_SHOW_MESSAGE_REQUEST] = lambda _params: answer
    channel = LspChannel(transport, FakeDocuments(), options=LspOptions(), features=FEATURES)
    backend = ScriptedBackend(parse_script({"turns": [{"steps": [{"tool_calls": [ASK]}, {"text": "ok"}]}]}))
    manager = SessionManager(channel, backend, build_tools())
    session = manager.new_session(str(tmp_path))
    assert await session.prompt([{"type": "text", "text": "merge it"}]) == "end_turn"
    await manager.shutdown()
    updates = [p["update"] for p in transport.of(SESSION_UPDATE) if p["update"].get("toolCallId") == "q1"]
    return transport, str(updates[-1].get("content"))


@pytest.mark.parametrize(
    ("answer", "shown"), [(types.MessageActionItem(title="dev"), "**Answer:** dev"), (None, "Declined.")]
)
async def test_a_question_is_a_show_message_request_with_one_action_per_option(
    tmp_path: Path, answer: Any, shown: str
) -> None:
    transport, card = await _ask(tmp_path, answer)
    (request,) = transport.of(types.WINDOW_SHOW_MESSAGE_REQUEST)
    assert request.message == "acp-bridge asks: Which branch?"
    assert [action.title for action in request.actions] == ["main", "dev"]
    assert shown in card
