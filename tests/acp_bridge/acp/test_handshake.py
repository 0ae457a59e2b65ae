"""What the ACP face answers `initialize` with before the core is loaded must be what the loaded core
would say: the handshake knows the agent's methods, and `boot.model_endpoint` foresees from the
arguments alone the backend `boot.load_model` makes (whether it needs a key, and for which endpoint)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge.acp.connection import AcpAgent, AcpChannel
from acp_bridge.acp.handshake import NOTIFICATIONS, agent_requests
from acp_bridge.auth.login import keyed_endpoint
from acp_bridge.history.store import SessionStore
from acp_bridge.models import ScriptedBackend
from acp_bridge.runtime.boot import load_model, model_endpoint
from acp_bridge.session.manager import SessionManager


@pytest.mark.parametrize("history", [True, False], ids=["history", "no history"])
def test_the_handshake_knows_every_method_of_the_agent(tmp_path: Path, history: bool) -> None:
    channel = AcpChannel()
    store = SessionStore(tmp_path) if history else None
    agent = AcpAgent(channel, SessionManager(channel, ScriptedBackend.demo(), []), store)
    assert sorted(agent.requests) == sorted(agent_requests(history))
    assert sorted(agent.notifications) == sorted(NOTIFICATIONS)


@pytest.mark.parametrize(
    ("spec", "base_url"),
    [
        ("scripted", None),
        ("scripted", "https://api.example.com"),
        ("scripted:/no/such/script.json", None),
        ("openai:deepseek-chat", None),
        ("  openai:deepseek-chat ", None),
        ("openai:", None),
        ("openai:  ", None),
        ("openai", None),
        ("anthropic:claude", None),
        ("openai:m", "http://127.0.0.1:8080/v1/"),
        ("openai:m", "https://user:secret@api.example.com/v1"),
        ("openai:m", "HTTPS://API.EXAMPLE.COM"),
        ("openai:m", "http://[::1]:8000"),
        ("openai:m", "http://h:99999"),
        ("openai:m", "http://h:"),
        ("openai:m", "http://h:abc"),
        ("openai:m", "http://[::1"),
        ("openai:m", "ftp://example.com"),
        ("openai:m", "localhost:8080"),
        ("openai:m", "http://"),
        ("openai:m", "http:///path"),
        ("openai:m", "https://:80"),
        ("openai:m", " http://h"),
        ("openai:m", "http://h/\x00"),
        ("openai:m", "http://h\t/"),
    ],
)
def test_the_endpoint_foreseen_from_the_arguments_is_the_loaded_models(
    spec: str, base_url: str | None
) -> None:
    assert model_endpoint(spec, base_url) == keyed_endpoint(load_model(spec, base_url))
