"""A session's MCP servers, end to end in the session core: real servers written with the official SDK
(`servers/workbench.py`, on stdio and on streamable HTTP at 127.0.0.1), the real registry, turn loop,
permissions and mapping, with the editor and the model replaced by recorders (see conftest.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import psutil

from acp_bridge.mcp.config import parse_acp
from acp_bridge.mcp.servers import MAX_RESTARTS
from acp_bridge.models import ToolResultMessage, UserMessage
from acp_bridge.permissions.policy import PolicyConfig
from registry_core import NEVER, ToolsChange
from tests.support.eventually import eventually
from tests.support.fake_channel import FakeChannel

from .conftest import TEXT, Core, workbench_stdio


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": f"mcp__bench__{tool}", "arguments": arguments}


def results(core: Core) -> dict[str, ToolResultMessage]:
    """What the model was told, by call id (from the last request it got)."""
    last = core.backend.requests[-1]
    return {m.call_id: m for m in last.messages if isinstance(m, ToolResultMessage)}


async def test_session_new_does_not_wait_and_a_call_renders_an_mcp_card(
    core_factory: Any, tmp_path: Path
) -> None:
    core: Core = core_factory([[{"tool_calls": [call("c1", "echo", message="hi")]}, {"text": "done"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert session.mcp is not None
    assert [h.state for h in session.mcp.handles] == ["starting"]  # session/new answered before the start

    assert await session.prompt(TEXT) == "end_turn"

    ((question, options),) = core.channel.questions  # MCP tools ask by default
    assert question["title"] == 'bench: echo (message="hi")'
    assert question["kind"] == "read"  # readOnlyHint
    assert '```json\n{\n  "message": "hi"\n}\n```' in question["content"][0]["content"]["text"]
    assert [o["optionId"] for o in options] == [
        "allow_once", "allow_always", "allow_always_server", "reject_once", "reject_always",
    ]  # fmt: skip
    assert "every tool of MCP server `bench`" in options[2]["name"]
    card = core.channel.card("c1")
    assert card["status"] == "completed"
    assert card["title"] == 'bench: echo (message="hi")'
    assert card["kind"] == "read"
    assert card["content"] == [{"type": "content", "content": {"type": "text", "text": "Echo: hi"}}]
    assert card["rawInput"] == {"message": "hi"}
    assert card["rawOutput"]["structuredContent"] == {"result": "Echo: hi"}
    assert results(core)["c1"].content == "Echo: hi"


async def test_images_resources_and_structured_content_reach_the_card(
    core_factory: Any, tmp_path: Path
) -> None:
    steps = [{"tool_calls": [call("p1", "picture"), call("r1", "refs"), call("w1", "weather", city="Paris")]}]
    core: Core = core_factory([[*steps, {"text": "done"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"

    picture = core.channel.card("p1")["content"]
    assert picture[0] == {"type": "content", "content": {"type": "text", "text": "a red dot"}}
    assert picture[1]["content"]["type"] == "image"
    assert picture[1]["content"]["mimeType"] == "image/png"
    refs = [block["content"] for block in core.channel.card("r1")["content"]]
    assert refs[0] == {"type": "resource_link", "uri": "file:///docs/guide.md", "name": "guide.md",
                       "mimeType": "text/markdown"}  # fmt: skip
    assert refs[1] == {"type": "resource", "resource": {"uri": "file:///docs/notes.txt", "text": "note one",
                                                        "mimeType": "text/plain"}}  # fmt: skip
    weather = core.channel.card("w1")
    assert weather["kind"] == "fetch"  # readOnlyHint with openWorldHint
    assert weather["rawOutput"]["structuredContent"] == {
        "city": "Paris",
        "temperature": 21,
        "conditions": "sunny",
    }
    told = results(core)
    assert "[image image/png]" in told["p1"].content
    assert "[Resource: guide.md](file:///docs/guide.md)" in told["r1"].content
    assert "note one" in told["r1"].content


async def test_nested_models_reach_the_model_inlined_and_the_server_takes_the_call(
    core_factory: Any, tmp_path: Path
) -> None:
    trip = {"traveller": "Ada", "stops": [{"city": "Lyon", "nights": 2}, {"city": "Turin", "nights": 1}]}
    core: Core = core_factory([[{"tool_calls": [call("t1", "plan", trip=trip)]}, {"text": "done"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"

    (tool,) = [t for t in core.backend.requests[0].tools if t.name == "mcp__bench__plan"]
    sent = json.dumps(tool.parameters)
    assert "$ref" not in sent and "$defs" not in sent  # the SDK sent `$defs` behind `$ref`s
    stop = tool.parameters["properties"]["trip"]["properties"]["stops"]["items"]
    assert stop["properties"]["nights"]["type"] == "integer"
    assert set(stop["required"]) == {"city", "nights"}
    assert results(core)["t1"].content == "Ada: Lyon (2), Turin (1)"


async def test_an_error_result_is_a_failed_card_with_the_servers_message(
    core_factory: Any, tmp_path: Path
) -> None:
    core: Core = core_factory([[{"tool_calls": [call("f1", "fail", why="not today")]}, {"text": "ok"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    card = core.channel.card("f1")
    assert card["status"] == "failed"
    assert card["kind"] == "delete"  # destructiveHint
    assert "refused: not today" in str(card["content"])
    told = results(core)["f1"]
    assert told.is_error and told.content == "refused: not today"


async def test_progress_is_shown_live_on_the_card(core_factory: Any, tmp_path: Path) -> None:
    core: Core = core_factory([[{"tool_calls": [call("n1", "count", steps=3)]}, {"text": "ok"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    updates = core.channel.of("n1")
    live = [u["content"][0]["content"]["text"] for u in updates if "status" not in u and "content" in u]
    assert live[-1] == "Progress: 3 of 3 (100%) · step 3"
    assert all(text.startswith("Progress: ") for text in live)
    assert updates[-1]["status"] == "completed"
    assert results(core)["n1"].content == "counted 3"


async def test_a_cancelled_call_tells_the_server(core_factory: Any, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"
    core: Core = core_factory([[{"tool_calls": [call("w1", "wait", marker=str(marker))]}]])
    session = core.session(tmp_path, [workbench_stdio()])
    running = asyncio.ensure_future(session.prompt(TEXT))
    await core.channel.until(
        lambda: any(u.get("status") == "in_progress" for u in core.channel.of("w1")), what="w1 in progress"
    )
    # The card is in progress before the request reaches the server, and a cancel before that has nothing
    # to tell it: wait until the server runs the call.
    await eventually(lambda: Path(f"{marker}.started").exists(), within=15, what="the server to run the call")
    session.cancel()
    assert await asyncio.wait_for(running, 10) == "cancelled"
    assert core.channel.card("w1")["status"] == "failed"
    # The SDK sent notifications/cancelled: the server's handler was cancelled and said so.
    # (Its text, not only the file: the file exists a moment before its text is written.)
    await eventually(
        lambda: marker.exists() and marker.read_text() != "",
        within=15,
        what="the server to record the cancel",
    )
    assert marker.read_text() == "cancelled"


async def test_list_changed_registers_the_new_tool_for_the_next_step(
    core_factory: Any, tmp_path: Path
) -> None:
    turn = [{"tool_calls": [call("g1", "grow")]}, {"tool_calls": [call("x1", "extra")]}, {"text": "ok"}]
    core: Core = core_factory([turn])
    changes: list[ToolsChange] = []
    core.manager.registry.on_tools_change(changes.append)
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    first, second, _ = core.backend.requests
    assert "mcp__bench__extra" not in {t.name for t in first.tools}
    assert "mcp__bench__extra" in {t.name for t in second.tools}
    assert results(core)["x1"].content == "extra!"
    added = [c for c in changes if c.name == "mcp__bench__extra"]
    assert added and added[0].registered and added[0].scope is session.scope
    assert core.manager.registry.get("mcp__bench__extra") is None  # scoped, never global


async def test_a_crashed_server_is_reported_and_restarted_on_its_next_call(
    core_factory: Any, tmp_path: Path
) -> None:
    turn = [
        {"tool_calls": [call("k1", "crash")]},
        {"tool_calls": [call("e1", "echo", message="again")]},
        {"text": "x"},
    ]
    core: Core = core_factory([turn, [{"text": "y"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    assert await session.prompt(TEXT) == "end_turn"
    crashed = core.channel.card("k1")
    assert crashed["status"] == "failed"
    text = str(crashed["content"])
    assert "MCP server `bench` stopped: it exited with code 3" in text
    assert "workbench: about to crash" in text  # its last stderr lines
    assert results(core)["e1"].content == "Echo: again"  # restarted for the next call
    assert "stopped" not in core.channel.messages()  # the failed card said it: not said twice


async def test_a_server_that_dies_between_prompts_is_reported_at_the_next_one(
    core_factory: Any, tmp_path: Path
) -> None:
    again = {"tool_calls": [call("e2", "echo", message="back")]}
    core: Core = core_factory([[{"text": "first"}], [again, {"text": "second"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    (server,) = core.server_processes()
    server.kill()
    assert session.mcp is not None
    await eventually(
        lambda: session.mcp is not None and session.mcp.handles[0].state == "lost",
        within=15,
        what="the server to be seen lost",
    )
    assert await session.prompt(TEXT) == "end_turn"
    said = core.channel.messages()
    assert (
        "MCP server `bench` stopped: it was killed by SIGKILL. It will be restarted on its next call." in said
    )
    assert results(core)["e2"].content == "Echo: back"


async def test_a_server_that_crashes_too_often_is_withdrawn(core_factory: Any, tmp_path: Path) -> None:
    crashes = [{"tool_calls": [call(f"k{i}", "crash")]} for i in range(MAX_RESTARTS + 1)]
    core: Core = core_factory([[*crashes, {"text": "x"}], [{"text": "y"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    last = core.backend.requests[-1]
    assert not [t for t in last.tools if t.name.startswith("mcp__bench__")]
    assert "restarted too often" in str(core.channel.card(f"k{MAX_RESTARTS}")["content"])
    assert await session.prompt(TEXT) == "end_turn"  # the session keeps working


async def test_a_server_that_never_starts_is_reported_and_the_session_goes_on(
    core_factory: Any, tmp_path: Path
) -> None:
    silent = {
        "name": "silent",
        "command": sys.executable,
        "args": [
            "-c",
            "import sys, time; print('booting slowly', file=sys.stderr, flush=True); time.sleep(60)",
        ],
        "env": [],
    }
    core: Core = core_factory([[{"text": "fine"}], [{"text": "still fine"}]], startup_timeout=6.0)
    session = core.session(tmp_path, [silent, workbench_stdio()])
    assert await asyncio.wait_for(session.prompt(TEXT), 20) == "end_turn"
    said = core.channel.messages()
    assert "MCP server `silent` did not start within 6 s." in said
    assert "booting slowly" in said
    assert said.endswith("fine")
    tools = {t.name for t in core.backend.requests[0].tools}
    assert "mcp__bench__echo" in tools and not any(t.startswith("mcp__silent") for t in tools)
    await eventually(
        lambda: (
            not [p for p in psutil.Process().children(recursive=True) if "booting" in " ".join(p.cmdline())]
        ),
        within=15,
        what="the silent server to be stopped",
    )
    assert await session.prompt(TEXT) == "end_turn"
    assert core.channel.messages().count("did not start") == 1  # reported once


async def test_a_failed_start_says_why_with_the_last_stderr_lines(core_factory: Any, tmp_path: Path) -> None:
    last_words = "import sys; print('missing API token', file=sys.stderr); sys.exit(2)"
    broken = {"name": "broken", "command": sys.executable, "env": [], "args": ["-c", last_words]}
    absent = {"name": "absent", "command": str(tmp_path / "no-such-server"), "args": [], "env": []}
    unsupported = {"type": "acp", "name": "other", "serverId": "x"}
    core: Core = core_factory([[{"text": "ok"}]])
    session = core.session(tmp_path, [broken, absent, unsupported])
    assert await session.prompt(TEXT) == "end_turn"
    said = core.channel.messages()
    assert "MCP server `broken` failed to start: it exited with code 2." in said
    assert "missing API token" in said
    assert (
        f"MCP server `absent` failed to start: the command `{tmp_path / 'no-such-server'}` was not found"
        in said
    )
    assert "MCP server `other` was left out: transport 'acp' is not supported" in said


async def test_streamable_http_servers_work_the_same(
    workbench_http: str, core_factory: Any, tmp_path: Path
) -> None:
    turn = [
        {"tool_calls": [call("h1", "echo", message="over http"), call("h2", "count", steps=2)]},
        {"text": "ok"},
    ]
    core: Core = core_factory([turn])
    server = {
        "type": "http",
        "name": "bench",
        "url": workbench_http,
        "headers": [{"name": "X-Test", "value": "1"}],
    }
    session = core.session(tmp_path, [server])
    assert await session.prompt(TEXT) == "end_turn"
    told = results(core)
    assert told["h1"].content == "Echo: over http"
    assert told["h2"].content == "counted 2"
    assert any("Progress: 2 of 2" in str(u.get("content")) for u in core.channel.of("h2"))


async def test_server_requests_roots_sampling_and_elicitation(core_factory: Any, tmp_path: Path) -> None:
    answers = {"action": "accept", "content": {"name": "Ada"}}
    channel = FakeChannel(elicit=lambda params: answers)
    # The question names its call when the call is the server's only one running (here: alone in its step).
    turn = [{"tool_calls": [call("r1", "roots"), call("s1", "sample")]}, {"tool_calls": [call("a1", "ask")]},
            {"text": "ok"}]  # fmt: skip
    core: Core = core_factory([turn], channel=channel)
    extra = tmp_path / "extra dir"
    extra.mkdir()
    session = core.manager.new_session(str(tmp_path), [str(extra)], parse_acp([workbench_stdio()]))
    assert await session.prompt(TEXT) == "end_turn"
    told = results(core)
    assert told["r1"].content.split("\n") == [tmp_path.as_uri(), extra.as_uri()]
    # Sampling is never offered: the server is told so (here, a 2026-07-28 connection, by its resolver).
    assert told["s1"].is_error and "did not declare the sampling capability" in told["s1"].content
    assert told["a1"].content == "elicited: accept {'name': 'Ada'}"
    (asked,) = channel.elicitations
    assert asked["sessionId"] == session.id
    assert asked["toolCallId"] == "a1"
    assert (asked["mode"], asked["message"]) == ("form", "Your name?")
    assert asked["requestedSchema"]["required"] == ["name"]


async def test_elicitation_is_declined_when_the_editor_cannot_answer(
    core_factory: Any, tmp_path: Path
) -> None:
    core: Core = core_factory([[{"tool_calls": [call("a1", "ask")]}, {"text": "ok"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    told = results(core)["a1"]
    assert told.is_error and "did not declare the form elicitation capability" in told.content


async def test_prompts_are_slash_commands_and_instructions_join_the_system_prompt(
    core_factory: Any, tmp_path: Path
) -> None:
    core: Core = core_factory([[{"text": "reviewed"}], [{"text": "unused"}]])
    session = core.session(tmp_path, [workbench_stdio()])
    assert session.mcp is not None
    await asyncio.wait_for(session.mcp.wait_ready(NEVER), 30)
    await core.channel.until(lambda: "bench:review" in core.channel.commands(), what="the new prompt")
    assert {"permissions", "bench:greet", "bench:review"} <= set(core.channel.commands())
    assert await session.prompt([{"type": "text", "text": "/bench:review 42"}]) == "end_turn"
    request = core.backend.requests[0]
    assert request.messages[-1] == UserMessage("Review pull request 42, focusing on everything.")
    assert "Prefer echo for greetings." in (request.system_prompt or "")
    assert "The tools of the user's MCP servers are listed" in (request.system_prompt or "")  # as a group
    assert await session.prompt([{"type": "text", "text": "/bench:greet"}]) == "end_turn"
    assert "`/bench:greet` needs `name`" in core.channel.messages()
    assert len(core.backend.requests) == 1  # answered without the model


async def test_always_allow_the_server_covers_its_other_tools(core_factory: Any, tmp_path: Path) -> None:
    channel = FakeChannel(answer=lambda call, options: "allow_always_server")
    turn = [
        {"tool_calls": [call("e1", "echo", message="a")]},
        {"tool_calls": [call("p1", "picture")]},
        {"text": "x"},
    ]
    core: Core = core_factory([turn], channel=channel)
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    assert [q["toolCallId"] for q, _ in channel.questions] == ["e1"]
    assert core.channel.card("p1")["status"] == "completed"
    assert "every tool of MCP server `bench`" in str(core.channel.card("p1")["content"])


async def test_plan_mode_runs_only_read_only_tools_and_still_asks(core_factory: Any, tmp_path: Path) -> None:
    turn = [{"tool_calls": [call("e1", "echo", message="a"), call("p1", "picture")]}, {"text": "x"}]
    core: Core = core_factory([turn], policy=PolicyConfig(mode="plan"))
    session = core.session(tmp_path, [workbench_stdio()])
    assert await session.prompt(TEXT) == "end_turn"
    assert [q["toolCallId"] for q, _ in core.channel.questions] == ["e1"]
    assert core.channel.card("e1")["status"] == "completed"
    assert core.channel.card("p1")["status"] == "failed"
    assert "Plan" in results(core)["p1"].content


async def test_closing_the_session_stops_its_servers(core_factory: Any, tmp_path: Path) -> None:
    core: Core = core_factory([[{"text": "ok"}]])
    session = core.session(tmp_path, [workbench_stdio(), workbench_stdio("second")])
    assert await session.prompt(TEXT) == "end_turn"
    processes = core.server_processes()
    assert len(processes) == 2
    await asyncio.wait_for(core.manager.close(session.id), 5)
    assert not [p for p in processes if _alive(p)]
    assert not [name for name in core.manager.registry.root.names() if name.startswith("mcp__")]
    assert not [name for name in session.scope.names() if name.startswith("mcp__")]


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
