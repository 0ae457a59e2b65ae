"""`session/delete` and session titles end to end.

Delete: the session leaves `session/list`, its log is deleted, and a session open in the connection is
closed first. Titles: the first prompt titles a session, the client hears it (`session_info_update`, with
`updatedAt`) when the prompt ends, and a title the user sets (ACP's `session/set_title`, advertised as
`sessionCapabilities.title`; its older alias `_acpBridge/setSessionTitle`; or `/title`) replaces it, in the
list too, after a restart as well."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from acp import schema
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script


def _exists(path: Path) -> bool:
    return path.exists()


def _infos(bridge: Bridge, session_id: str) -> list[dict[str, Any]]:
    return [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "session_info_update"]


async def _started(bridges: StartBridge, tmp_path: Path, *args: str, turns: int = 3) -> Bridge:
    script = write_script(tmp_path / "script.json", [[{"text": f"answer {n}"}] for n in range(turns)])
    bridge = await bridges("--state-dir", str(tmp_path / "state"), *args, model=script)
    await bridge.initialize()
    return bridge


async def test_delete_removes_the_session_from_the_list_and_deletes_its_log(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await _started(bridges, tmp_path)
    kept, doomed = await bridge.new_session(workspace), await bridge.new_session(workspace)
    for session_id in (kept, doomed):
        assert await bridge.prompt(session_id, "hello") == "end_turn"
    log = tmp_path / "state" / "sessions" / f"{doomed}.jsonl"
    assert _exists(log)
    await bridge.stop()

    again = await _started(bridges, tmp_path)
    answer = await again.request("session/delete", {"sessionId": doomed})
    schema.DeleteSessionResponse.model_validate(answer)
    assert not _exists(log)
    listed = await again.conn.list_sessions(cwd=str(workspace))
    assert [s.session_id for s in listed.sessions] == [kept]
    with pytest.raises(RequestError) as gone:
        await again.conn.load_session(cwd=str(workspace), session_id=doomed, mcp_servers=[])
    assert gone.value.code == -32002
    with pytest.raises(RequestError) as twice:
        await again.request("session/delete", {"sessionId": doomed})
    assert twice.value.code == -32002


async def test_deleting_an_open_session_closes_it(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await _started(bridges, tmp_path)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hello") == "end_turn"
    await bridge.request("session/delete", {"sessionId": session_id})
    with pytest.raises(RequestError) as closed:
        await bridge.prompt(session_id, "still there?")
    assert closed.value.code == -32002
    assert (await bridge.conn.list_sessions()).sessions == []


async def test_the_first_prompt_titles_the_session_and_each_prompt_reports_its_activity(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await _started(bridges, tmp_path)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "Fix the\n  greeting in app.py") == "end_turn"
    assert await bridge.prompt(session_id, "and the README") == "end_turn"
    first, second = _infos(bridge, session_id)
    assert first["title"] == "Fix the greeting in app.py"
    assert "title" not in second  # only what changed
    for info in (first, second):
        assert datetime.fromisoformat(info["updatedAt"]).tzinfo is not None
    # Sent when the prompt ends: after the model's answer, before the prompt's response.
    kinds = [u["sessionUpdate"] for u in bridge.updates(session_id)]
    assert kinds.index("agent_message_chunk") < kinds.index("session_info_update")
    (listed,) = (await bridge.conn.list_sessions()).sessions
    assert listed.title == "Fix the greeting in app.py"


async def test_a_title_is_the_words_typed_without_the_links_and_files_attached(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await _started(bridges, tmp_path)
    session_id = await bridge.new_session(workspace)
    (workspace / "guide.md").write_text("# Guide\n")
    link = schema.ResourceContentBlock(
        type="resource_link",
        uri=(workspace / "guide.md").as_uri(),
        name="guide.md",
        mime_type="text/markdown",
    )
    embedded = schema.EmbeddedResourceContentBlock(
        type="resource",
        resource=schema.TextResourceContents(uri=(workspace / "a.py").as_uri(), text="x = 1\n"),
    )
    typed = schema.TextContentBlock(type="text", text="Explain this with @guide.md please")
    await bridge.conn.prompt(session_id=session_id, prompt=[typed, embedded, link])
    (listed,) = (await bridge.conn.list_sessions()).sessions
    assert listed.title == "Explain this with @guide.md please"


async def test_a_title_the_user_sets_replaces_it_and_survives_a_restart(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await _started(bridges, tmp_path)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "first words") == "end_turn"
    answer = await bridge.conn.ext_method(
        "acpBridge/setSessionTitle", {"sessionId": session_id, "title": " Greeting\nwork "}
    )
    assert answer == {"title": "Greeting work"}
    assert _infos(bridge, session_id)[-1] == {
        "sessionUpdate": "session_info_update",
        "title": "Greeting work",
    }
    with pytest.raises(RequestError) as empty:
        await bridge.conn.ext_method("acpBridge/setSessionTitle", {"sessionId": session_id, "title": "  "})
    assert empty.value.code == -32602
    await bridge.stop()

    again = await _started(bridges, tmp_path)
    (listed,) = (await again.conn.list_sessions(cwd=str(workspace))).sessions
    assert listed.title == "Greeting work"
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert _infos(again, session_id)[-1]["title"] == "Greeting work"
    assert await again.prompt(session_id, "/title Greeting, finished") == "end_turn"
    assert _infos(again, session_id)[-1]["title"] == "Greeting, finished"
    (listed,) = (await again.conn.list_sessions(cwd=str(workspace))).sessions
    assert listed.title == "Greeting, finished"


@pytest.mark.parametrize("history", [True, False])
async def test_session_set_title_is_advertised_and_renames_for_good(
    bridges: StartBridge, tmp_path: Path, workspace: Path, history: bool
) -> None:
    script = write_script(tmp_path / "script.json", [[{"text": "one"}], [{"text": "two"}]])
    args = ("--state-dir", str(tmp_path / "state")) if history else ("--no-history",)
    bridge = await bridges(*args, model=script)
    init = await bridge.initialize_raw({})
    assert init["agentCapabilities"]["sessionCapabilities"]["title"] == {}
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "first words") == "end_turn"
    assert _infos(bridge, session_id)[-1]["title"] == "first words"

    answer = await bridge.request("session/set_title", {"sessionId": session_id, "title": "  Named\nhere "})
    assert answer == {"title": "Named here"}  # as stored: one line, trimmed
    assert _infos(bridge, session_id)[-1] == {"sessionUpdate": "session_info_update", "title": "Named here"}
    # A later prompt never replaces it (ACP: the agent SHOULD NOT retitle after a set_title).
    assert await bridge.prompt(session_id, "second words") == "end_turn"
    assert all(info.get("title", "Named here") == "Named here" for info in _infos(bridge, session_id)[-2:])
    if history:
        (listed,) = (await bridge.conn.list_sessions(cwd=str(workspace))).sessions
        assert listed.title == "Named here"

    with pytest.raises(RequestError) as empty:
        await bridge.request("session/set_title", {"sessionId": session_id, "title": " \n "})
    assert (empty.value.code, empty.value.data) == (-32602, {"field": "title"})
    with pytest.raises(RequestError) as unknown:
        await bridge.request("session/set_title", {"sessionId": "nope", "title": "x"})
    assert unknown.value.code == -32002
