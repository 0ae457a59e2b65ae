"""acp_bridge.lsp.server's `LspFace` in process: the real core (sessions, turns, tools) behind the real
channel, with a recording transport in place of pygls, so a test can wait for exactly what it asserts on
(the channel settled, the manager's sessions) instead of for time to pass.

The end-to-end behaviour over real pipes is in test_lsp_server.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities

from acp_bridge.lsp.channel import SESSION_UPDATE
from acp_bridge.lsp.server import BridgeServer, LspFace
from acp_bridge.models import ModelBackend, ScriptedBackend, parse_script
from acp_bridge.models.base import StepComplete, StepEvent, StepRequest, ToolCallRequest, ToolCallStarted
from acp_bridge.permissions.policy import PolicyConfig
from acp_bridge.session.manager import CoreConfig, SessionManager
from presenters import build_tools
from tests.support.bridge_tools import tools as bridge_tools
from tests.support.eventually import eventually
from tests.support.lsp_fakes import FakeTransport

NEOVIM = client_capabilities("neovim@v0.11.0")  # showMessage, showDocument, progress, applyEdit


class Recorder:
    def __init__(self) -> None:
        self.ended: list[str] = []

    def begin(self, session_id: str, cwd: str, roots: tuple[str, ...]) -> None:
        return None

    def append(self, session_id: str, event: Mapping[str, Any]) -> None:
        return None

    def end(self, session_id: str) -> None:
        self.ended.append(session_id)


class StreamingModel:
    """Announces each call of a step before completing the step, as a model streaming the call's
    arguments does (`ToolCallStarted`, then the arguments in `StepComplete`). Steps beyond the list end
    the turn."""

    name = "streaming"

    def __init__(self, steps: Sequence[Sequence[ToolCallRequest]]) -> None:
        self.steps = steps

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        calls = tuple(self.steps[request.step_index]) if request.step_index < len(self.steps) else ()
        for call in calls:
            yield ToolCallStarted(call.id, call.name)
        await asyncio.sleep(0)  # the early cards go out before the step completes
        yield StepComplete(tool_calls=calls)

    async def aclose(self) -> None:
        return None


def _scripted(*steps: dict[str, Any]) -> ScriptedBackend:
    return ScriptedBackend(parse_script({"turns": [{"steps": list(steps)}]}))


def _face(
    tmp_path: Path,
    backend: ModelBackend,
    *,
    options: dict[str, Any] | None = None,
    allow: frozenset[str] = frozenset(),
    recorder: Recorder | None = None,
) -> tuple[LspFace, FakeTransport]:
    def make_manager(channel: Any, _options: Any) -> SessionManager:
        config = CoreConfig(policy=PolicyConfig(allow_tools=allow))
        return SessionManager(channel, backend, [*build_tools(), *bridge_tools()], config, recorder=recorder)

    transport = FakeTransport()
    params = types.InitializeParams(
        capabilities=NEOVIM,
        workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")],
        initialization_options=options,
    )
    server = BridgeServer(make_manager)
    for _ in server.protocol.lsp_initialize(params):  # pygls' own part of `initialize`: the workspace
        pass
    return LspFace(server, transport, params), transport  # type: ignore[arg-type]


async def _until(condition: Callable[[], object], what: str) -> None:
    await eventually(condition, within=5, what=what)


def _progress(transport: FakeTransport) -> list[tuple[str, str | None]]:
    return [
        (type(p.value).__name__[len("WorkDoneProgress") :], p.value.message)
        for p in transport.of(types.PROGRESS)
    ]


# --- sessions -----------------------------------------------------------------------------------------


async def test_a_new_session_closes_the_previous_one_and_its_running_prompt(tmp_path: Path) -> None:
    nap = {"id": "n1", "name": "nap", "arguments": {"seconds": 30}}
    recorder = Recorder()
    face, transport = _face(
        tmp_path,
        _scripted({"tool_calls": [nap]}, {"text": "never"}),
        allow=frozenset({"nap"}),
        recorder=recorder,
    )
    first = face.session
    prompt = asyncio.ensure_future(face.prompt(("nap",)))
    await _until(
        lambda: any(p["update"].get("status") == "in_progress" for p in transport.of(SESSION_UPDATE)),
        "the nap to run",
    )

    answer = await face.new_session(())

    assert face.session.id == answer["sessionId"] != first.id
    assert list(face.manager.sessions) == [answer["sessionId"]]  # the previous one is forgotten
    assert recorder.ended == [first.id]  # and its log ended
    assert not first.busy  # its prompt stopped before the command answered
    assert (await prompt)["stopReason"] == "cancelled"


# --- follow-along -------------------------------------------------------------------------------------


@pytest.mark.parametrize("follow", [True, False])
async def test_follow_along_obeys_the_initialization_option(tmp_path: Path, follow: bool) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 40)))
    read = {"id": "r1", "name": "read", "arguments": {"file_path": "long.txt", "offset": 12}}
    face, transport = _face(
        tmp_path, _scripted({"tool_calls": [read]}, {"text": "ok"}), options={"follow": follow}
    )

    assert (await face.prompt(("look",)))["stopReason"] == "end_turn"
    await face.channel.settled()  # a showDocument would have been sent by now

    assert _progress(transport)[-1] == ("End", "completed")  # the read ran and its card was derived
    shown = transport.of(types.WINDOW_SHOW_DOCUMENT)
    assert [(s.uri, s.selection.start.line) for s in shown] == (
        [((tmp_path / "long.txt").as_uri(), 11)] if follow else []
    )


# --- progress of a streamed call ----------------------------------------------------------------------


async def test_a_streamed_call_shows_its_refined_title_and_waits_for_approval_only_while_asked(
    tmp_path: Path,
) -> None:
    model = StreamingModel([[ToolCallRequest("n1", "nap", {"label": "the cat"})]])
    face, transport = _face(tmp_path, model)  # nap is not allowed: the editor is asked
    when_asked: list[list[tuple[str, str | None]]] = []

    def answer(_params: Any) -> types.MessageActionItem:
        when_asked.append(_progress(transport))
        return types.MessageActionItem(title="Allow once")

    transport.answers[types.WINDOW_SHOW_MESSAGE_REQUEST] = answer

    assert (await face.prompt(("nap",)))["stopReason"] == "end_turn"
    await face.channel.settled()

    (begin,) = [
        p.value for p in transport.of(types.PROGRESS) if isinstance(p.value, types.WorkDoneProgressBegin)
    ]
    assert begin.title == "Nap nap"  # the early card: the tool's card of no arguments
    assert when_asked == [
        [
            ("Begin", "pending"),
            ("Report", "Nap the cat: pending"),
            ("Report", "Nap the cat: waiting for your approval"),
        ]
    ]
    assert _progress(transport)[3:] == [("Report", "Nap the cat: running"), ("End", "Nap the cat: completed")]
    logged = [m.message for m in transport.of(types.WINDOW_LOG_MESSAGE)]
    assert logged[:2] == ["tool: Nap nap (pending)", "tool: Nap the cat (pending)"]
