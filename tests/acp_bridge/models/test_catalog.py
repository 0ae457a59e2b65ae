"""The model catalog: the models a session may pick, read once from the backend's list (a real
OpenAI-compatible server on 127.0.0.1, or a script), and where each model's window, price and reasoning
efforts come from: the endpoint's metadata, the built-in table, or the command line; never a guess."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import pytest

from acp_bridge.models import OpenAIBackend, ScriptedBackend, parse_script
from acp_bridge.models.catalog import (
    ENDPOINT_SOURCE,
    GPT5_EFFORTS,
    PRICE_FLAG_SOURCE,
    TABLE_SOURCE,
    WINDOW_FLAG_SOURCE,
    CatalogSettings,
    ModelCatalog,
    Price,
    known_model,
)
from tests.support.fake_openai_server import FakeOpenAIServer


@pytest.fixture
async def backends() -> AsyncIterator[list[OpenAIBackend]]:
    made: list[OpenAIBackend] = []
    yield made
    for backend in made:
        await backend.aclose()


def _backend(
    made: list[OpenAIBackend], base_url: str, model: str = "fake-model", key: str = "k"
) -> OpenAIBackend:
    backend = OpenAIBackend(model, api_key=key, base_url=base_url)
    made.append(backend)
    return backend


async def test_the_endpoints_chat_models_are_offered_with_what_their_metadata_says(
    server: FakeOpenAIServer, backends: list[OpenAIBackend]
) -> None:
    server.set_models([
        {"id": "zeta", "max_model_len": 8_192},  # vLLM
        {"id": "fake-model", "context_window": 16_000},  # Groq
        {"id": "router/thinker", "top_provider": {"context_length": 200_000},  # OpenRouter
         "supported_parameters": ["tools", "reasoning_effort"]},
        {"id": "whisper-1"}, {"id": "text-embedding-3-large"}, {"id": "tts-1"}, {"id": "dall-e-3"},
    ])  # fmt: skip
    catalog = ModelCatalog(_backend(backends, server.base_url))
    models = await catalog.load()
    assert [m.id for m in models] == ["fake-model", "router/thinker", "zeta"]
    assert (models[0].context_window, models[0].window_source) == (16_000, ENDPOINT_SOURCE)
    assert (models[1].context_window, models[1].efforts) == (200_000, ("low", "medium", "high"))
    assert models[2].context_window == 8_192
    assert models[0].price is None and models[0].efforts == ()
    assert catalog.problem is None


async def test_the_table_fills_in_what_the_endpoint_does_not_say_and_the_flags_describe_the_configured_model(
    server: FakeOpenAIServer, backends: list[OpenAIBackend]
) -> None:
    server.set_models([{"id": "gpt-5-mini-2025-08-07"}, {"id": "fake-model"}, {"id": "unknown-model"}])
    settings = CatalogSettings(context_window=4_096, price=Price(1.0, 2.0))
    catalog = ModelCatalog(_backend(backends, server.base_url), settings)
    by_id = {m.id: m for m in await catalog.load()}
    gpt = by_id["gpt-5-mini-2025-08-07"]
    assert (gpt.context_window, gpt.window_source, gpt.price_source) == (400_000, TABLE_SOURCE, TABLE_SOURCE)
    assert gpt.efforts == GPT5_EFFORTS
    mine = by_id["fake-model"]
    assert (mine.context_window, mine.window_source) == (4_096, WINDOW_FLAG_SOURCE)
    assert (mine.price, mine.price_source) == (Price(1.0, 2.0), PRICE_FLAG_SOURCE)
    unknown = by_id["unknown-model"]
    assert (unknown.context_window, unknown.price) == (None, None)  # the flags are not about it


def test_the_table_matches_a_name_exactly_after_a_vendor_prefix_or_with_a_date_but_never_a_cousin() -> None:
    assert known_model("gpt-4o") == known_model("openai/gpt-4o") == known_model("gpt-4o-2024-08-06")
    assert known_model("deepseek-chat") is not None
    assert known_model("o3-pro") is None
    assert known_model("gpt-4o-mini-tts") is None
    assert known_model("my-gpt-4o") is None


async def test_a_refused_key_or_a_missing_route_offers_the_configured_model_and_says_why(
    server: FakeOpenAIServer, backends: list[OpenAIBackend]
) -> None:
    server.set_models([{"id": "fake-model"}, {"id": "other"}])
    server.accept_keys(["good"])
    refused = ModelCatalog(_backend(backends, server.base_url, key="bad"))
    assert [m.id for m in await refused.load()] == ["fake-model"]
    assert refused.problem is not None and "401" in refused.problem
    server.set_models(None)
    missing = ModelCatalog(_backend(backends, server.base_url, key="good"))
    assert [m.id for m in await missing.load()] == ["fake-model"]
    assert missing.problem is not None and "404" in missing.problem


async def test_a_list_refused_for_the_key_is_asked_again_once_a_key_works(
    server: FakeOpenAIServer, backends: list[OpenAIBackend]
) -> None:
    server.set_models([{"id": "fake-model"}, {"id": "other"}])
    server.accept_keys(["good"])
    catalog = ModelCatalog(_backend(backends, server.base_url, key="bad"))
    assert [m.id for m in await catalog.load()] == ["fake-model"]
    server.accept_keys(None)  # as if the user logged in with a good key
    assert [m.id for m in await catalog.load()] == ["fake-model", "other"]
    assert catalog.problem is None
    await catalog.load()
    assert len(server.model_requests) == 2


async def test_the_list_is_read_once_however_many_sessions_ask(
    server: FakeOpenAIServer, backends: list[OpenAIBackend]
) -> None:
    server.set_models([{"id": "fake-model"}])
    catalog = ModelCatalog(_backend(backends, server.base_url))
    await asyncio.gather(*(catalog.load() for _ in range(5)))
    await catalog.load()
    assert len(server.model_requests) == 1


async def test_an_endpoint_that_never_answers_costs_at_most_the_timeout(
    backends: list[OpenAIBackend],
) -> None:
    silent: list[asyncio.StreamWriter] = []

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        silent.append(writer)

    listener = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        catalog = ModelCatalog(_backend(backends, f"http://127.0.0.1:{port}/v1"), timeout=0.3)
        started = time.monotonic()
        assert [m.id for m in await catalog.load()] == ["fake-model"]
        assert time.monotonic() - started < 2.0
        assert catalog.problem is not None and "0.3 s" in catalog.problem
    finally:
        for writer in silent:
            writer.close()
        listener.close()
        with contextlib.suppress(Exception):
            await listener.wait_closed()


async def test_a_script_offers_itself_with_its_window() -> None:
    backend = ScriptedBackend(parse_script({"turns": [], "context_window": 2_000}), name="scripted:demo")
    (model,) = await ModelCatalog(backend).load()
    assert (model.id, model.context_window, model.window_source) == ("scripted:demo", 2_000, ENDPOINT_SOURCE)
    (plain,) = await ModelCatalog(ScriptedBackend(parse_script({"turns": []}))).load()
    assert plain.context_window is None


async def test_a_models_override_skips_the_endpoint(
    server: FakeOpenAIServer, backends: list[OpenAIBackend]
) -> None:
    server.set_models([{"id": "fake-model"}, {"id": "listed"}])
    catalog = ModelCatalog(
        _backend(backends, server.base_url), CatalogSettings(models=("a", "fake-model", "b"))
    )
    assert [m.id for m in await catalog.load()] == ["fake-model", "a", "b"]
    assert server.model_requests == []
