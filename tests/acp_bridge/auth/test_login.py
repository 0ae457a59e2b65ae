"""Login end to end: `acp-bridge login` as a real subprocess on a pseudo-terminal (the key is not echoed)
or with the key piped in, checked against the real local OpenAI-compatible server and stored with mode
0600 in the user's config directory (a temporary XDG_CONFIG_HOME); `acp-bridge logout`; and the ACP side of
a running bridge: `authMethods` (an agent method, and a terminal one for clients that can run it, as the
schema says), `authenticate`, `logout`, and `auth_required` (-32000) for a missing or refused key until a
login stores a good one, without a restart."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp import schema
from acp.exceptions import RequestError

from acp_bridge.common.credentials import store_key
from tests.support.acp_unstable_schema import validate_auth_method
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import REPO, Bridge
from tests.support.fake_openai_server import FakeOpenAIServer, chat

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}
GOOD, BAD = "sk-good-0123456789", "sk-bad-9876543210"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(models=[{"id": "fake-model"}], accepted_keys=[GOOD]) as running:
        yield running


@pytest.fixture
def config_home(tmp_path: Path) -> Path:
    return tmp_path / "config"


def _credentials(config_home: Path) -> Path:
    return config_home / "acp-bridge" / "credentials.json"


def _env(config_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
    env.update(XDG_CONFIG_HOME=str(config_home), PYTHONPATH=str(REPO))
    return env


def _cli(*args: str, config_home: Path, key: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_bridge", *args],
        input=key + "\n",
        capture_output=True,
        text=True,
        env=_env(config_home),
        timeout=60,
        check=False,
    )


def _read_until(fd: int, wanted: bytes, seen: bytearray, within: float = 30.0) -> bool:
    """Read the pty into `seen` until `wanted` shows up (True) or it closes (False)."""
    deadline = time.monotonic() + within
    while wanted not in seen:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{wanted!r} not seen; got {bytes(seen)!r}")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other side closed
            return False
        if not chunk:
            return False
        seen += chunk
    return True


def test_login_asks_for_the_key_without_echo_checks_it_and_stores_it_privately(
    server: FakeOpenAIServer, config_home: Path
) -> None:
    controller, terminal = pty.openpty()
    # A session of its own, so the login has no controlling terminal but this pty on its stdin.
    child = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "login", "--base-url", server.base_url],
        stdin=terminal, stdout=terminal, stderr=terminal, env=_env(config_home), start_new_session=True,
    )  # fmt: skip
    os.close(terminal)
    seen = bytearray()
    try:
        assert _read_until(controller, b"(input hidden): ", seen)
        os.write(controller, GOOD.encode() + b"\n")
        with contextlib.suppress(TimeoutError):
            _read_until(controller, b"\x00never", seen, within=20)
        assert child.wait(timeout=30) == 0, bytes(seen)
    finally:
        if child.poll() is None:
            child.kill()
        os.close(controller)
    assert GOOD.encode() not in seen  # not echoed, not printed
    assert b"Logged in to" in seen
    path = _credentials(config_home)
    assert path.stat().st_mode & 0o777 == 0o600
    stored = json.loads(path.read_text())["endpoints"][server.base_url]
    assert stored["apiKey"] == GOOD
    assert server.model_requests[-1].headers["authorization"] == f"Bearer {GOOD}"


def test_a_refused_key_is_not_stored(server: FakeOpenAIServer, config_home: Path) -> None:
    done = _cli("login", "--base-url", server.base_url, config_home=config_home, key=BAD)
    assert done.returncode == 1
    assert "refused the key (HTTP 401)" in done.stderr
    assert BAD not in done.stdout + done.stderr
    assert not _credentials(config_home).exists()


def test_logout_removes_the_stored_key(server: FakeOpenAIServer, config_home: Path) -> None:
    assert _cli("login", "--base-url", server.base_url, config_home=config_home, key=GOOD).returncode == 0
    done = _cli("logout", "--base-url", server.base_url, config_home=config_home, key="")
    assert done.returncode == 0
    assert f"Logged out of {server.base_url}." in done.stdout
    assert not _credentials(config_home).exists()


async def _bridge(bridges: StartBridge, server: FakeOpenAIServer, config_home: Path, *args: str) -> Bridge:
    env = {**NO_KEYS, "XDG_CONFIG_HOME": str(config_home)}
    return await bridges("--base-url", server.base_url, *args, model="openai:fake-model", env=env)


async def test_a_missing_key_answers_auth_required_until_the_terminal_login_stores_one(
    bridges: StartBridge, server: FakeOpenAIServer, config_home: Path, workspace: Path
) -> None:
    server.enqueue(chat(text="Logged in at last."))
    bridge = await _bridge(bridges, server, config_home)
    init = await bridge.initialize_raw({"auth": {"terminal": True}})
    terminal = next(m for m in init["authMethods"] if m.get("type") == "terminal")
    session_id = await bridge.new_session(workspace)
    with pytest.raises(RequestError) as caught:
        await bridge.prompt(session_id, "hi")
    assert caught.value.code == -32000
    assert "acp-bridge login" in str(caught.value)
    # What a client does with the terminal method: run our command line with its args appended.
    login = await asyncio.to_thread(
        _cli, "serve", "--model", "openai:fake-model", "--base-url", server.base_url, *terminal["args"],
        config_home=config_home, key=GOOD,
    )  # fmt: skip
    assert login.returncode == 0, login.stderr
    assert await bridge.prompt(session_id, "hi again") == "end_turn"
    assert server.requests[-1].headers["authorization"] == f"Bearer {GOOD}"


async def test_the_older_terminal_auth_signal_gets_a_runnable_login_whose_method_checks_the_stored_key(
    bridges: StartBridge, server: FakeOpenAIServer, config_home: Path, workspace: Path
) -> None:
    """Zed and the ACP Registry's check signal terminal login with `_meta["terminal-auth"]`: the method
    they get carries the whole command, which stores the key, and `authenticate` with it then passes."""
    server.enqueue(chat(text="Logged in the older way."))
    bridge = await _bridge(bridges, server, config_home)
    init = await bridge.initialize_raw({"_meta": {"terminal_output": True, "terminal-auth": True}})
    methods = init["authMethods"]
    assert [(m.get("type"), m["id"]) for m in methods] == [(None, "stored-key"), (None, "terminal-login")]
    for method in methods:
        assert validate_auth_method(method) == [], method
    login = methods[1]["_meta"]["terminal-auth"]
    assert Path(login["command"]).is_absolute() and login["args"][-1] == "--login"
    with pytest.raises(RequestError) as missing:
        await bridge.request("authenticate", {"methodId": "terminal-login"})
    assert missing.value.code == -32000  # no key stored yet
    ran = await asyncio.to_thread(
        subprocess.run,
        [login["command"], *login["args"]],
        input=GOOD + "\n",
        capture_output=True,
        text=True,
        env={**_env(config_home), **login["env"]},
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert await bridge.request("authenticate", {"methodId": "terminal-login"}) == {}
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    assert server.requests[-1].headers["authorization"] == f"Bearer {GOOD}"


async def test_auth_methods_follow_the_schema_and_the_clients_terminal_capability(
    bridges: StartBridge, server: FakeOpenAIServer, config_home: Path
) -> None:
    plain = await _bridge(bridges, server, config_home)
    result = await plain.initialize_raw({})
    schema.InitializeResponse.model_validate(result)
    assert [m["id"] for m in result["authMethods"]] == ["stored-key"]
    assert "type" not in result["authMethods"][0]  # an `agent` method
    assert result["agentCapabilities"]["auth"] == {"logout": {}}

    capable = await _bridge(bridges, server, config_home)
    result = await capable.initialize_raw({"auth": {"terminal": True}})
    methods = result["authMethods"]
    assert [(m.get("type"), m["id"]) for m in methods] == [(None, "stored-key"), ("terminal", "login")]
    assert methods[1]["args"] == ["--login"]
    for method in methods:
        assert validate_auth_method(method) == [], method


async def test_authenticate_checks_the_stored_key_and_logout_forgets_it(
    bridges: StartBridge, server: FakeOpenAIServer, config_home: Path, workspace: Path
) -> None:
    path = _credentials(config_home)
    store_key(server.base_url, BAD, path=path)
    bridge = await _bridge(bridges, server, config_home)
    await bridge.initialize()
    with pytest.raises(RequestError) as refused:
        await bridge.request("authenticate", {"methodId": "stored-key"})
    assert refused.value.code == -32000
    with pytest.raises(RequestError) as terminal:
        await bridge.request("authenticate", {"methodId": "login"})
    assert terminal.value.code == -32602  # a terminal method is never passed to authenticate

    store_key(server.base_url, GOOD, path=path)
    assert await bridge.request("authenticate", {"methodId": "stored-key"}) == {}
    assert await bridge.request("logout", {}) == {}
    assert not path.exists()
    session_id = await bridge.new_session(workspace)
    with pytest.raises(RequestError) as caught:
        await bridge.prompt(session_id, "hi")
    assert caught.value.code == -32000
