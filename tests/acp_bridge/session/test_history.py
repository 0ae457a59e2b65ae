"""History on by default: session logs go to the platform's user state directory (here the test's own
`XDG_STATE_HOME`, see tests/conftest.py), `--state-dir` moves them, `--no-history` keeps none; and what
`initialize` advertises follows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.exceptions import RequestError

from acp_bridge.common.state_dir import default_state_dir
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import write_script


def _absent(path: Path) -> bool:
    return not path.exists()


def _script(tmp_path: Path) -> Path:
    return write_script(tmp_path / "script.json", [[{"text": "hello"}]])


async def test_history_is_kept_by_default_in_the_user_state_directory(
    bridges: StartBridge, tmp_path: Path, workspace: Path, state_home: Path
) -> None:
    bridge = await bridges(model=_script(tmp_path))
    init = await bridge.initialize()
    caps = init.agent_capabilities
    assert caps is not None and caps.load_session is True
    sessions = caps.session_capabilities
    assert sessions is not None
    for capability in (sessions.list, sessions.resume, sessions.delete, sessions.additional_directories):
        assert capability is not None
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    log = state_home / "acp-bridge" / "sessions" / f"{session_id}.jsonl"
    first = json.loads(log.read_text().splitlines()[0])
    assert (first["type"], first["cwd"]) == ("session", str(workspace))
    listed = await bridge.conn.list_sessions()
    assert [s.session_id for s in listed.sessions] == [session_id]


async def test_state_dir_replaces_the_default(
    bridges: StartBridge, tmp_path: Path, workspace: Path, state_home: Path
) -> None:
    state = tmp_path / "elsewhere"
    bridge = await bridges("--state-dir", str(state), model=_script(tmp_path))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    assert (state / "sessions" / f"{session_id}.jsonl").is_file()
    assert _absent(state_home)


async def test_no_history_writes_nothing_and_offers_no_stored_sessions(
    bridges: StartBridge, tmp_path: Path, workspace: Path, state_home: Path
) -> None:
    bridge = await bridges("--no-history", model=_script(tmp_path))
    init = await bridge.initialize()
    caps = init.agent_capabilities
    assert caps is not None and caps.load_session is False
    sessions = caps.session_capabilities
    assert sessions is not None
    assert (sessions.list, sessions.resume, sessions.delete) == (None, None, None)
    assert sessions.additional_directories is not None  # roots do not need history
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    with pytest.raises(RequestError) as refused:
        await bridge.conn.resume_session(cwd=str(workspace), session_id=session_id)
    assert refused.value.code == -32601
    assert _absent(state_home)


@pytest.mark.parametrize(
    ("platform", "env", "expected"),
    [
        ("linux", {"XDG_STATE_HOME": "/xdg/state"}, "/xdg/state/acp-bridge"),
        ("linux", {}, "/home/u/.local/state/acp-bridge"),
        ("linux", {"XDG_STATE_HOME": "relative/state"}, "/home/u/.local/state/acp-bridge"),
        ("freebsd14", {}, "/home/u/.local/state/acp-bridge"),
        ("darwin", {"XDG_STATE_HOME": "/xdg/state"}, "/home/u/Library/Application Support/acp-bridge"),
        ("win32", {"LOCALAPPDATA": "/appdata/local"}, "/appdata/local/acp-bridge"),
        ("win32", {}, "/home/u/AppData/Local/acp-bridge"),
    ],
)
def test_the_default_state_directory_follows_the_platform(
    platform: str, env: dict[str, str], expected: str
) -> None:
    assert default_state_dir(env, platform, Path("/home/u")) == Path(expected)
