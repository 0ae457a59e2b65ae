"""The OpenAI-compatible backend's model controls, against the real local SSE server: the session's model
and reasoning effort in the request, prompt-cache hits read from either provider's usage shape, the
endpoint's model list, and a key looked up at each request (the environment first, then the stored one)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.common import credentials
from acp_bridge.models import ModelError, OpenAIBackend, StepComplete, StepRequest, UserMessage, load_backend
from tests.support.fake_openai_server import FakeOpenAIServer, chat

KEY_VARS = ("ACP_BRIDGE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(credentials, "_claimed", {})
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


@pytest.fixture
async def closing() -> AsyncIterator[list[Any]]:
    made: list[Any] = []
    yield made
    for backend in made:
        await backend.aclose()


def _request(**fields: Any) -> StepRequest:
    return StepRequest(
        **{"messages": [UserMessage("hi")], "tools": [], "turn_index": 0, "step_index": 0, **fields}
    )


async def _complete(backend: Any, **fields: Any) -> StepComplete:
    events = [event async for event in backend.stream_step(_request(**fields))]
    last = events[-1]
    assert isinstance(last, StepComplete)
    return last


async def test_the_sessions_model_and_effort_go_into_the_request(
    server: FakeOpenAIServer, closing: list[Any]
) -> None:
    server.enqueue(chat(text="a"), chat(text="b"))
    backend = OpenAIBackend("configured", api_key="k", base_url=server.base_url)
    closing.append(backend)
    await _complete(backend)
    await _complete(backend, model="chosen", reasoning_effort="high")
    first, second = (r.json() for r in server.requests)
    assert (first["model"], "reasoning_effort" in first) == ("configured", False)
    assert (second["model"], second["reasoning_effort"]) == ("chosen", "high")


@pytest.mark.parametrize(
    "usage",
    [
        {
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 60},
        },  # OpenAI
        {"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 60},  # DeepSeek
    ],
)
async def test_prompt_cache_hits_are_read_from_either_usage_shape(
    server: FakeOpenAIServer, closing: list[Any], usage: dict[str, Any]
) -> None:
    server.enqueue(chat(text="a", usage=usage))
    backend = OpenAIBackend("m", api_key="k", base_url=server.base_url)
    closing.append(backend)
    reported = (await _complete(backend)).usage
    assert reported is not None
    assert (reported.input_tokens, reported.cached_input_tokens, reported.output_tokens) == (100, 60, 5)


async def test_a_stored_key_is_used_and_a_later_login_or_logout_counts_without_a_restart(
    server: FakeOpenAIServer, config_home: Path, closing: list[Any]
) -> None:
    server.accept_keys(["stored-1", "stored-2"])
    server.enqueue(chat(text="a"), chat(text="b"))
    backend = load_backend("openai:m", base_url=server.base_url, require_key=False)
    closing.append(backend)
    with pytest.raises(ModelError) as caught:
        await _complete(backend)
    assert caught.value.kind == "auth" and "acp-bridge login" in caught.value.message
    credentials.store_key(server.base_url, "stored-1")
    await _complete(backend)
    credentials.store_key(server.base_url, "stored-2")
    await _complete(backend)
    credentials.forget_key(server.base_url)
    with pytest.raises(ModelError):
        await _complete(backend)
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer stored-1", "Bearer stored-2"]


async def test_an_environment_key_wins_over_the_stored_one(
    server: FakeOpenAIServer, config_home: Path, closing: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials.store_key(server.base_url, "stored")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "from-env")
    server.enqueue(chat(text="a"))
    backend = load_backend("openai:m", base_url=server.base_url)
    closing.append(backend)
    await _complete(backend)
    assert server.requests[0].headers["authorization"] == "Bearer from-env"


async def test_a_refused_stored_key_says_to_log_in_again(
    server: FakeOpenAIServer, config_home: Path, closing: list[Any]
) -> None:
    server.accept_keys(["good"])
    credentials.store_key(server.base_url, "expired")
    backend = load_backend("openai:m", base_url=server.base_url)
    closing.append(backend)
    with pytest.raises(ModelError) as caught:
        await _complete(backend)
    assert caught.value.kind == "auth"
    assert "Log in again" in caught.value.message and credentials.STORED_KEY_SOURCE in caught.value.message
    assert "expired" not in caught.value.message


def test_the_credentials_file_is_private_and_filed_by_endpoint(config_home: Path) -> None:
    path = credentials.store_key("https://API.example.com/v1/", "sk-1")
    credentials.store_key("http://127.0.0.1:9/v1", "sk-2")
    assert path == config_home / "acp-bridge" / "credentials.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert credentials.read_stored_key("https://api.example.com/v1") == "sk-1"
    assert credentials.forget_key("https://api.example.com/v1") is True
    assert credentials.read_stored_key("https://api.example.com/v1") is None
    assert credentials.read_stored_key("http://127.0.0.1:9/v1") == "sk-2"
    assert credentials.forget_key("http://127.0.0.1:9/v1") is True
    assert not path.exists()
