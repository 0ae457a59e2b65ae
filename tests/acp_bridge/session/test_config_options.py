"""Config options end to end: a real bridge subprocess, over pipes, against the real local OpenAI-compatible
server (fake_openai_server.py) or a scripted model. `session/new` offers the permission mode, the models the
endpoint lists (`GET /models`) and, for a model that takes one, the thinking effort, and to a client that
takes boolean options, auto-compaction (a toggle); every way of changing one (`session/set_config_option`,
`session/set_mode`, `/mode`) sends `config_option_update`; the chosen model and effort reach the endpoint
and survive `session/load`, and so does auto-compaction turned off (for a client that can turn it back
on). Every frame is checked against the ACP schema (conftest)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import schema
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script
from tests.support.fake_openai_server import FakeOpenAIServer, chat

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}
MODELS = [
    {"id": "fake-model", "context_length": 32_000},
    {"id": "fake-reasoner", "context_length": 64_000, "supported_parameters": ["reasoning_effort", "tools"]},
    {"id": "text-embedding-3-small"},  # cannot chat: not offered
]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(models=MODELS) as running:
        yield running


async def _start(
    bridges: StartBridge, server: FakeOpenAIServer, *args: str, tmp_path: Path | None = None
) -> Bridge:
    env = {**NO_KEYS, "ACP_BRIDGE_API_KEY": "test-key"}
    if tmp_path is not None:
        env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    bridge = await bridges("--base-url", server.base_url, *args, model="openai:fake-model", env=env)
    await bridge.initialize()
    return bridge


async def _new(bridge: Bridge, cwd: Path) -> tuple[str, list[dict[str, Any]]]:
    result = await bridge.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    schema.NewSessionResponse.model_validate(result)
    return str(result["sessionId"]), list(result["configOptions"])


def _option(options: list[dict[str, Any]], option_id: str) -> dict[str, Any] | None:
    return next((o for o in options if o["id"] == option_id), None)


def _option_updates(bridge: Bridge, session_id: str) -> list[list[dict[str, Any]]]:
    return [
        u["configOptions"] for u in bridge.updates(session_id) if u["sessionUpdate"] == "config_option_update"
    ]


async def _set(bridge: Bridge, session_id: str, config_id: str, value: str) -> list[dict[str, Any]]:
    result = await bridge.request(
        "session/set_config_option", {"sessionId": session_id, "configId": config_id, "value": value}
    )
    schema.SetSessionConfigOptionResponse.model_validate(result)
    return list(result["configOptions"])


async def test_session_new_offers_the_mode_and_the_endpoints_chat_models_with_the_configured_one_first(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    bridge = await _start(bridges, server)
    _, options = await _new(bridge, workspace)
    assert [o["id"] for o in options] == ["mode", "model"]  # fake-model takes no effort
    model = _option(options, "model")
    assert model is not None
    assert (model["category"], model["type"], model["currentValue"]) == ("model", "select", "fake-model")
    assert [v["value"] for v in model["options"]] == ["fake-model", "fake-reasoner"]
    assert model["options"][0]["description"].startswith("32K context")
    assert _option(options, "mode") == {
        **_option(options, "mode"),
        "category": "mode",
        "currentValue": "default",
    }
    # Read once per process, not once per session.
    await _new(bridge, workspace)
    assert len(server.model_requests) == 1
    assert server.model_requests[0].headers["authorization"] == "Bearer test-key"


async def test_choosing_a_model_and_its_effort_changes_what_the_endpoint_is_asked(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="one"), chat(text="two"), chat(text="three"))
    bridge = await _start(bridges, server)
    session_id, _ = await _new(bridge, workspace)

    options = await _set(bridge, session_id, "model", "fake-reasoner")
    level = _option(options, "thought_level")
    assert level is not None
    assert (level["category"], level["currentValue"]) == ("thought_level", "medium")
    assert [v["value"] for v in level["options"]] == ["low", "medium", "high"]
    assert await bridge.prompt(session_id, "first") == "end_turn"

    options = await _set(bridge, session_id, "thought_level", "high")
    assert _option(options, "thought_level") == {**level, "currentValue": "high"}
    assert await bridge.prompt(session_id, "second") == "end_turn"

    # A model that takes no effort: the option goes, and no effort is sent.
    options = await _set(bridge, session_id, "model", "fake-model")
    assert _option(options, "thought_level") is None
    assert await bridge.prompt(session_id, "third") == "end_turn"

    sent = [(r.json()["model"], r.json().get("reasoning_effort")) for r in server.requests]
    assert sent == [("fake-reasoner", None), ("fake-reasoner", "high"), ("fake-model", None)]
    # Each change was announced with the full set of options.
    announced = _option_updates(bridge, session_id)
    assert [_option(o, "model")["currentValue"] for o in announced] == ["fake-reasoner"] * 2 + ["fake-model"]
    assert [_option(o, "thought_level") is not None for o in announced] == [True, True, False]


async def test_every_way_of_changing_the_mode_sends_config_option_update(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "script.json", [[{"text": "x"}]])
    bridge = await bridges(model=script)
    await bridge.initialize()
    session_id, options = await _new(bridge, workspace)
    model = _option(options, "model")
    assert model is not None and model["currentValue"] == f"scripted:{script}"  # the script offers itself

    await asyncio.wait_for(bridge.conn.set_session_mode(session_id=session_id, mode_id="accept_edits"), 10)
    await _set(bridge, session_id, "mode", "plan")
    assert await bridge.prompt(session_id, "/mode full_access") == "end_turn"

    await bridge.wait_for(lambda: len(_option_updates(bridge, session_id)) == 3)
    modes = [_option(o, "mode")["currentValue"] for o in _option_updates(bridge, session_id)]
    assert modes == ["accept_edits", "plan", "full_access"]


async def test_models_flag_replaces_the_endpoint_list(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    bridge = await _start(bridges, server, "--models", "alpha, beta,fake-model")
    _, options = await _new(bridge, workspace)
    model = _option(options, "model")
    assert model is not None
    assert [v["value"] for v in model["options"]] == ["fake-model", "alpha", "beta"]
    assert server.model_requests == []


async def test_an_endpoint_without_a_model_list_offers_the_configured_model(
    bridges: StartBridge, workspace: Path
) -> None:
    with FakeOpenAIServer() as bare:  # no GET /models (404)
        bridge = await _start(bridges, bare)
        _, options = await _new(bridge, workspace)
    model = _option(options, "model")
    assert model is not None
    assert [v["value"] for v in model["options"]] == ["fake-model"]


async def test_an_unknown_option_or_value_is_invalid_params(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    bridge = await _start(bridges, server)
    session_id, _ = await _new(bridge, workspace)
    wrong = {
        ("model", "gpt-17"): "unknown model 'gpt-17'; offered: fake-model, fake-reasoner",
        ("thought_level", "high"): "this session has: mode, model",  # fake-model takes no effort
        ("temperature", "1"): "this session has: mode, model",
        ("mode", "x"): "unknown mode 'x'",
    }
    for (config_id, value), message in wrong.items():
        with pytest.raises(RequestError) as caught:
            await _set(bridge, session_id, config_id, value)
        assert caught.value.code == -32602, (config_id, value)
        assert message in str(caught.value), (config_id, value)
    assert _option_updates(bridge, session_id) == []


async def test_the_model_and_effort_survive_session_load(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    state = str(tmp_path / "state")
    server.enqueue(chat(text="before"), chat(text="after"))
    live = await _start(bridges, server, "--state-dir", state)
    session_id, _ = await _new(live, workspace)
    await _set(live, session_id, "model", "fake-reasoner")
    await _set(live, session_id, "thought_level", "low")
    assert await live.prompt(session_id, "hi") == "end_turn"
    await live.stop()

    again = await _start(bridges, server, "--state-dir", state)
    result = await again.request(
        "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    )
    schema.LoadSessionResponse.model_validate(result)
    options = result["configOptions"]
    assert _option(options, "model")["currentValue"] == "fake-reasoner"
    assert _option(options, "thought_level")["currentValue"] == "low"
    assert await again.prompt(session_id, "and now?") == "end_turn"
    last = server.requests[-1].json()
    assert (last["model"], last["reasoning_effort"]) == ("fake-reasoner", "low")


# --- auto-compaction, a boolean option ----------------------------------------------------------------

BOOLEAN_CLIENT = {"session": {"configOptions": {"boolean": {}}, "compaction": {}}}
PLAIN_CLIENT = {"session": {"compaction": {}}}


async def _set_boolean(bridge: Bridge, session_id: str, config_id: str, value: bool) -> list[dict[str, Any]]:
    result = await bridge.request(
        "session/set_config_option",
        {"sessionId": session_id, "configId": config_id, "type": "boolean", "value": value},
    )
    schema.SetSessionConfigOptionResponse.model_validate(result)
    return list(result["configOptions"])


async def test_auto_compact_is_a_toggle_offered_only_to_a_client_that_takes_boolean_options(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    env = {**NO_KEYS, "ACP_BRIDGE_API_KEY": "test-key"}
    plain = await bridges("--base-url", server.base_url, model="openai:fake-model", env=env)
    await plain.initialize_raw(PLAIN_CLIENT)
    plain_id, options = await _new(plain, workspace)
    assert _option(options, "auto_compact") is None
    with pytest.raises(RequestError) as unknown:
        await _set_boolean(plain, plain_id, "auto_compact", False)
    assert unknown.value.code == -32602
    assert "this session has: mode, model" in str(unknown.value)

    capable = await bridges("--base-url", server.base_url, model="openai:fake-model", env=env)
    await capable.initialize_raw(BOOLEAN_CLIENT)
    session_id, options = await _new(capable, workspace)
    assert [o["id"] for o in options] == ["mode", "model", "auto_compact"]
    toggle = _option(options, "auto_compact")
    assert toggle is not None
    assert "description" in toggle and "category" not in toggle  # ACP's categories are for the pickers
    assert {k: v for k, v in toggle.items() if k != "description"} == {
        "id": "auto_compact", "name": "Auto-compact", "type": "boolean", "currentValue": True,
    }  # fmt: skip
    options = await _set_boolean(capable, session_id, "auto_compact", False)
    assert _option(options, "auto_compact")["currentValue"] is False
    (announced,) = _option_updates(capable, session_id)
    assert _option(announced, "auto_compact")["currentValue"] is False
    # A value of the wrong kind, for this option or another, is refused and changes nothing.
    wrong = [
        ({"configId": "auto_compact", "value": "false"}, "boolean option"),
        ({"configId": "auto_compact", "value": False}, 'goes with type "boolean"'),
        ({"configId": "model", "type": "boolean", "value": True}, "unknown model True"),
    ]
    for params, message in wrong:
        with pytest.raises(RequestError) as refused:
            await capable.request("session/set_config_option", {"sessionId": session_id, **params})
        assert refused.value.code == -32602, params
        assert message in str(refused.value), params
    assert len(_option_updates(capable, session_id)) == 1


def _compactions(bridge: Bridge, session_id: str) -> list[dict[str, Any]]:
    return [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "compaction_update"]


async def test_auto_compact_off_leaves_a_full_context_alone_is_logged_and_comes_back_with_the_session(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    full = {"input_tokens": 850, "output_tokens": 10}  # 860 of a 1,000-token window: past --compact-at 80
    turns = [[{"text": "One.", "usage": full}], [{"text": "Two.", "usage": full}], [{"text": "Three."}]]
    script = write_script(tmp_path / "script.json", turns)
    data = json.loads(script.read_text())
    script.write_text(json.dumps({**data, "context_window": 1_000, "summaries": ["Scripted summary."]}))
    state = ("--state-dir", str(tmp_path / "state"))

    live = await bridges(*state, model=script)
    await live.initialize_raw(BOOLEAN_CLIENT)
    kept_off, also_off = (await _new(live, workspace))[0], (await _new(live, workspace))[0]
    for session_id in (kept_off, also_off):
        await _set_boolean(live, session_id, "auto_compact", False)
        assert await live.prompt(session_id, "one") == "end_turn"
    assert await live.prompt(kept_off, "two") == "end_turn"  # full, and not compacted
    assert _compactions(live, kept_off) == []
    log = (tmp_path / "state" / "sessions" / f"{kept_off}.jsonl").read_text().splitlines()
    assert {"type": "config", "model": f"scripted:{script}", "thoughtLevel": None, "autoCompact": False} in [
        json.loads(line) for line in log
    ]
    await live.stop()

    # Loaded by a client that takes boolean options: still off, and the full context stays as it is.
    again = await bridges(*state, model=script)
    await again.initialize_raw(BOOLEAN_CLIENT)
    loaded = await again.request(
        "session/load", {"sessionId": kept_off, "cwd": str(workspace), "mcpServers": []}
    )
    assert _option(loaded["configOptions"], "auto_compact")["currentValue"] is False
    assert await again.prompt(kept_off, "three") == "end_turn"
    assert _compactions(again, kept_off) == []
    # `/compact` still compacts.
    assert await again.prompt(kept_off, "/compact") == "end_turn"
    assert [c["status"] for c in _compactions(again, kept_off)] == ["in_progress", "completed"]

    # Loaded by one that does not: no toggle to turn it back on, so the session compacts as any does.
    plain = await bridges(*state, model=script)
    await plain.initialize_raw(PLAIN_CLIENT)
    loaded = await plain.request(
        "session/load", {"sessionId": also_off, "cwd": str(workspace), "mcpServers": []}
    )
    assert _option(loaded["configOptions"], "auto_compact") is None
    assert await plain.prompt(also_off, "two") == "end_turn"
    done = _compactions(plain, also_off)[-1]
    assert (done["status"], done["_meta"]["acpBridge"]["trigger"]) == ("completed", "threshold")
