"""The system prompt and the project instructions, end to end: a real bridge subprocess over pipes against
the local OpenAI-compatible server, whose recorded requests show what the model was sent. The first request
describes the environment (the cwd, the branch and status of a real git repository made here, the date)
and the session's tools; `AGENTS.md` (or `CLAUDE.md` where there is none) reaches it with its path, and the
user is shown what was loaded; a folder's own `AGENTS.md` only once a call worked there; an edit between
turns is re-read; a file over the bound is cut; the client's `systemPrompt` is honoured on new and resume;
`/init` asks the model for an AGENTS.md; `initialize` advertises the capability."""

from __future__ import annotations

import subprocess
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge
from tests.support.fake_openai_server import FakeOpenAIServer, chat

from .conftest import openai_bridge, sent_messages, text_of

NOTICES = {"session": {"notices": {}}}


def _system(server: FakeOpenAIServer, index: int) -> str:
    first = sent_messages(server, index)[0]
    assert first["role"] == "system"
    content: str = first["content"]
    return content


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=cwd, check=True, capture_output=True,
    )  # fmt: skip


def _notices(bridge: Bridge, session_id: str) -> list[dict[str, Any]]:
    return [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "notice"]


async def _new(bridge: Bridge, cwd: Path, **params: Any) -> str:
    result = await bridge.request("session/new", {"cwd": str(cwd), "mcpServers": [], **params})
    return str(result["sessionId"])


async def test_the_first_request_describes_the_environment_and_the_tools_the_session_has(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    _git(workspace, "init", "-q", "-b", "feature-x")
    _git(workspace, "add", "a.txt")
    _git(workspace, "commit", "-q", "-m", "first")
    (workspace / "a.txt").write_text("changed\n")
    server.enqueue(chat(tool_calls=[{"id": "c1", "name": "read", "arguments": {"file_path": "b.txt"}}]))
    server.enqueue(chat(text="Read it."), chat(text="Again."))
    before = date.today()
    bridge = await openai_bridge(bridges, server)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "read b") == "end_turn"

    system = _system(server, 0)
    assert f"Working directory: `{workspace}`" in system
    assert "on branch `feature-x`" in system
    assert "` M a.txt`" in system and "`?? b.txt`" in system  # the short status, as the session started
    assert any(f"Today's date: {day.isoformat()}" in system for day in (before, before + timedelta(days=1)))
    # The tools it has, with when to prefer them; Code Mode is on by default; no MCP server here.
    for guidance in (
        "`read` reads a file",
        "rather than `find`",
        "`todo_write` keeps",
        "`ask_user` asks",
        "`run_code` (Code Mode)",
        "`web_fetch` fetches",
        "`path:line`",
        "`plan` (read-only",
    ):
        assert guidance in system, guidance  # fmt: skip
    assert "MCP servers are listed" not in system
    assert "$" not in system.replace("$$", "")  # every template field was filled
    # The same text for every step and every turn (a provider caches the prefix).
    assert await bridge.prompt(session_id, "again") == "end_turn"
    assert _system(server, 1) == system and _system(server, 2) == system


async def test_code_mode_off_leaves_run_code_out_and_only_says_every_tool_goes_through_it(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="One."), chat(text="Two."))
    off = await openai_bridge(bridges, server, "--code-mode", "off")
    assert await off.prompt(await off.new_session(workspace), "hi") == "end_turn"
    assert "run_code" not in _system(server, 0)
    only = await openai_bridge(bridges, server, "--code-mode", "only")
    assert await only.prompt(await only.new_session(workspace), "hi") == "end_turn"
    assert "reached only from a `run_code` program" in _system(server, 1)


async def test_agents_md_reaches_the_model_with_its_path_and_the_user_is_shown_it(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, config_home: Path
) -> None:
    (workspace / "AGENTS.md").write_text("# Rules\nRun the tests with `make check`.\n")
    (workspace / "CLAUDE.md").write_text("Never read me: AGENTS.md wins.\n")
    (config_home / "acp-bridge").mkdir(parents=True)
    (config_home / "acp-bridge" / "AGENTS.md").write_text("Answer in French.\n")
    server.enqueue(chat(text="Compris."))
    bridge = await openai_bridge(bridges, server)
    await bridge.initialize_raw(NOTICES)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"

    system = _system(server, 0)
    assert f'<instructions path="{workspace}/AGENTS.md" applies-to="{workspace} and below">' in system
    assert "Run the tests with `make check`." in system
    assert "Never read me" not in system
    mine = config_home / "acp-bridge" / "AGENTS.md"
    assert f'<instructions path="{mine}" applies-to="every project of this user">' in system
    assert system.index("Answer in French.") < system.index("make check")  # the general first
    (notice,) = _notices(bridge, session_id)
    assert notice["title"] == "Project instructions loaded"
    assert f"`{workspace}/AGENTS.md`" in notice["description"] and f"`{mine}`" in notice["description"]
    # The same files as data, for a client that shows them as links (the VS Code extension).
    assert notice["_meta"]["acpBridge"]["instructions"] == {
        "event": "loaded",
        "files": [
            {"path": str(mine), "name": "AGENTS.md", "scope": "user"},
            {"path": f"{workspace}/AGENTS.md", "name": "AGENTS.md", "scope": "root"},
        ],
    }


async def test_without_agents_md_claude_md_is_used_and_a_plain_client_is_told_in_a_message(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    (workspace / "CLAUDE.md").write_text("Use tabs.\n")
    server.enqueue(chat(text="Okay."))
    bridge = await openai_bridge(bridges, server)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"

    system = _system(server, 0)
    assert f'path="{workspace}/CLAUDE.md"' in system and "its CLAUDE.md is used instead" in system
    assert "Use tabs." in system
    assert not _notices(bridge, session_id)
    said = text_of(bridge.updates(session_id))
    assert said.startswith(f"_Project instructions loaded:_\n- `{workspace}/CLAUDE.md` (no AGENTS.md there")
    assert said.endswith("Okay.")


async def test_a_folders_agents_md_reaches_the_model_once_after_a_call_works_there(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    sub = workspace / "pkg" / "core"
    sub.mkdir(parents=True)
    (sub / "mod.py").write_text("x = 1\n")
    (workspace / "pkg" / "AGENTS.md").write_text("Packages use absolute imports.\n")
    (sub / "AGENTS.md").write_text("The core has no I/O.\n")
    read_mod = {"id": "c3", "name": "read", "arguments": {"file_path": "pkg/core/mod.py"}}
    server.enqueue(
        chat(tool_calls=[{"id": "c1", "name": "read", "arguments": {"file_path": "a.txt"}}]),
        chat(tool_calls=[{"id": "c2", "name": "glob", "arguments": {"pattern": "*.py", "path": "pkg"}}]),
        chat(tool_calls=[read_mod]),
        chat(tool_calls=[{"id": "c4", "name": "grep", "arguments": {"pattern": "x", "path": "pkg/core"}}]),
        chat(text="Done."),
        chat(tool_calls=[{**read_mod, "id": "c5"}]),  # the next turn works there again
        chat(text="Same."),
    )
    bridge = await openai_bridge(bridges, server)
    await bridge.initialize_raw(NOTICES)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "look around") == "end_turn"
    assert await bridge.prompt(session_id, "once more") == "end_turn"

    def given(index: int, folder: str) -> list[str]:
        marker = f'<project-instructions path="{workspace}/{folder}/AGENTS.md"'
        return [m["content"] for m in sent_messages(server, index) if marker in str(m.get("content"))]

    assert "absolute imports" not in _system(server, 0)
    assert given(1, "pkg") == []  # a.txt is at the root: no folder to follow
    (message,) = given(2, "pkg")  # after the search in pkg/: right after the call's result
    assert "Packages use absolute imports." in message and "You are working in `pkg`" in message
    assert [m["role"] for m in sent_messages(server, 2)][-2:] == ["tool", "user"]
    assert given(2, "pkg/core") == []
    # The read below pkg/core/ adds that folder's file, not pkg's again; the grep there adds nothing.
    assert "The core has no I/O." in given(3, "pkg/core")[0]
    for index in (3, 4, 6):  # nor the next turn's read there
        assert (len(given(index, "pkg")), len(given(index, "pkg/core"))) == (1, 1)
    pkg, core = _notices(bridge, session_id)
    assert pkg["title"] == core["title"] == "Folder instructions added"
    assert pkg["description"] == f"- `{workspace}/pkg/AGENTS.md`, for work in `pkg`"
    assert pkg["_meta"]["acpBridge"]["instructions"] == {
        "event": "added",
        "files": [{"path": f"{workspace}/pkg/AGENTS.md", "name": "AGENTS.md", "scope": "folder"}],
    }
    assert core["description"] == f"- `{workspace}/pkg/core/AGENTS.md`, for work in `pkg/core`"
    await bridge.stop()

    # Resumed in another process, the session knows from its log what it was given.
    server.enqueue(chat(tool_calls=[{**read_mod, "id": "c6"}]), chat(text="Still."))
    again = await openai_bridge(bridges, server)
    await again.request("session/resume", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
    assert await again.prompt(session_id, "and again") == "end_turn"
    assert (len(given(8, "pkg")), len(given(8, "pkg/core"))) == (1, 1)


async def test_an_edit_between_turns_is_re_read_and_said(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    agents = workspace / "AGENTS.md"
    agents.write_text("Version one.\n")
    server.enqueue(chat(text="One."), chat(text="Two."), chat(text="Three."))
    bridge = await openai_bridge(bridges, server)
    await bridge.initialize_raw(NOTICES)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "first") == "end_turn"
    agents.write_text("Version two, longer.\n")
    assert await bridge.prompt(session_id, "second") == "end_turn"
    assert await bridge.prompt(session_id, "third") == "end_turn"

    assert "Version one." in _system(server, 0)
    second = _system(server, 1)
    assert "Version two, longer." in second and "Version one." not in second
    assert f"Re-read since earlier in this conversation: `{agents}` changed." in second
    assert _system(server, 2) == second  # unchanged since: the same text again
    loaded, changed = _notices(bridge, session_id)
    assert loaded["title"] == "Project instructions loaded"
    assert changed["title"] == "Project instructions changed"
    assert f"`{agents}` changed: re-read for this turn" in changed["description"]
    entry = {"path": str(agents), "name": "AGENTS.md", "scope": "root"}
    assert changed["_meta"]["acpBridge"]["instructions"] == {"event": "changed", "files": [entry]}


async def test_a_file_over_the_bound_is_cut_with_a_note(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    line = "Keep functions short and name them for what they do. " * 2 + "\n"
    body = line * (40 * 1024 // len(line)) + "THE-END-OF-THE-FILE\n"
    (workspace / "AGENTS.md").write_text(body)
    server.enqueue(chat(text="Okay."))
    bridge = await openai_bridge(bridges, server)
    await bridge.initialize_raw(NOTICES)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"

    system = _system(server, 0)
    assert "THE-END-OF-THE-FILE" not in system
    assert f"only its first 32 KiB are included here. Read {workspace}/AGENTS.md for the rest." in system
    included = system.split(f'applies-to="{workspace} and below">\n', 1)[1]
    assert len(included.split("\n\n[This file is", 1)[0].encode()) <= 32 * 1024
    (notice,) = _notices(bridge, session_id)
    assert f"cut to its first 32 KiB of {len(body.encode()):,} bytes" in notice["description"]


async def test_a_client_system_prompt_is_appended_or_overrides_the_built_in_one(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text("Project rule: no tabs.\n")
    server.enqueue(chat(text="One."), chat(text="Two."))
    bridge = await openai_bridge(bridges, server)
    text = [{"type": "text", "text": "You review pull requests for Acme."}]
    appended = await _new(bridge, workspace, systemPrompt={"content": text})
    assert await bridge.prompt(appended, "hi") == "end_turn"
    overridden = await _new(bridge, workspace, systemPrompt={"mode": "override", "content": text})
    assert await bridge.prompt(overridden, "hi") == "end_turn"

    first = _system(server, 0)
    assert first.startswith("You are a coding agent")
    assert "# Instructions from the client\n\nYou review pull requests for Acme." in first
    assert first.index("Acme") < first.index("Project rule: no tabs.")
    second = _system(server, 1)
    # Override replaces the built-in prompt; the project's instructions stay.
    assert second.startswith("You review pull requests for Acme.\n\n# Project instructions")
    assert "You are a coding agent" not in second and "Project rule: no tabs." in second


async def test_a_malformed_system_prompt_is_refused_and_makes_no_session(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    bridge = await openai_bridge(bridges, server)
    image = {"type": "image", "mimeType": "image/png", "data": "AAAA"}
    for bad, why in (
        ({"mode": "replace", "content": []}, "systemPrompt.mode must be"),
        ({"content": [image]}, "systemPrompt.content[0] must be a text block"),
    ):
        with pytest.raises(RequestError) as raised:
            await _new(bridge, workspace, systemPrompt=bad)
        assert raised.value.code == -32602 and why in str(raised.value.data or raised.value)


async def test_resume_takes_the_system_prompt_it_is_given(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="Hello."))
    live = await openai_bridge(bridges, server)
    session_id = await live.new_session(workspace)
    assert await live.prompt(session_id, "hi") == "end_turn"
    await live.stop()
    assert "Acme" not in _system(server, 0)

    server.enqueue(chat(text="Hello again."))
    again = await openai_bridge(bridges, server)
    await again.request(
        "session/resume",
        {"sessionId": session_id, "cwd": str(workspace), "mcpServers": [],
         "systemPrompt": {"mode": "append", "content": [{"type": "text", "text": "You work for Acme."}]}},
    )  # fmt: skip
    assert await again.prompt(session_id, "who do you work for?") == "end_turn"
    assert "# Instructions from the client\n\nYou work for Acme." in _system(server, 1)


async def test_init_asks_the_model_for_an_agents_md_and_is_listed(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="I will survey first."))
    bridge = await openai_bridge(bridges, server)
    session_id = await bridge.new_session(workspace)
    await bridge.wait_for(
        lambda: any(u["sessionUpdate"] == "available_commands_update" for u in bridge.updates(session_id))
    )
    assert await bridge.prompt(session_id, "/init the test commands") == "end_turn"

    (listed,) = [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "available_commands_update"]
    assert "init" in [c["name"] for c in listed["availableCommands"]]
    asked = sent_messages(server, 0)[-1]
    assert asked["role"] == "user"
    assert asked["content"].startswith("Write an AGENTS.md for this repository")
    assert "build, run the tests" in asked["content"] and "with the file tools" in asked["content"]
    assert asked["content"].endswith("The user asks you to focus on: the test commands")


async def test_initialize_advertises_the_system_prompt_capability(
    bridges: StartBridge, server: FakeOpenAIServer
) -> None:
    bridge = await openai_bridge(bridges, server)
    result = await bridge.initialize_raw({})
    assert result["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {"mode": {"override": {}}}
