"""Fixtures for every test: no test writes to the real user's state directory, nor reads their config. And
`server`, the fake model server most bridge tests talk to.

The bridge keeps history by default in the platform's user state directory (`acp_bridge.common.state_dir`); on
Linux that is `$XDG_STATE_HOME/acp-bridge`. Each test gets its own `XDG_STATE_HOME` under its tmp dir,
which every bridge it spawns inherits. Likewise `XDG_CONFIG_HOME`, where the bridge reads the user's own
`AGENTS.md` (and the stored API keys): a test sees only what it put there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai_server import FakeOpenAIServer


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state_home = tmp_path / "xdg-state-home"
    monkeypatch.setenv("XDG_STATE_HOME", str(state_home))
    return state_home


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config_home = tmp_path / "xdg-config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    return config_home


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible model server on 127.0.0.1 (`tests.support.fake_openai_server`); a test
    module that needs it configured (models, keys) defines its own `server`."""
    with FakeOpenAIServer() as running:
        yield running
