"""The LSP face keeps the same promises as the ACP face: SIGINT cancels the running prompt (its commands'
processes stopped, wherever they went) and the server keeps serving; SIGHUP and an editor that stops
reading our output end the server and every process its commands started; the model chosen at
`initialize` still gets the key the server was started with, and no command sees it."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

import pytest

from tests.support.fake_openai_server import FakeOpenAIServer, chat
from tests.support.lsp_editor import call, editor
from tests.support.process_marks import assert_all_gone, escaping, new_mark, wait_started

pytestmark = pytest.mark.slow


async def test_sigint_cancels_the_prompt_and_its_processes_and_the_server_serves_on(tmp_path: Path) -> None:
    mark = new_mark()
    turns = [
        {"steps": [{"tool_calls": [call("b1", "bash", command=escaping(mark))]}, {"text": "never"}]},
        {"steps": [{"text": "still here"}]},
    ]
    async with editor(tmp_path, turns, args=["--allow-tool", "bash"]) as ed:
        prompt = asyncio.ensure_future(ed.prompt("go"))
        await wait_started(mark)
        assert ed.client._server is not None
        ed.client._server.send_signal(signal.SIGINT)
        assert (await asyncio.wait_for(prompt, 2))["stopReason"] == "cancelled"
        await assert_all_gone(mark)
        assert ed.client._server.returncode is None
        assert (await ed.prompt("again"))["reply"] == "still here"


@pytest.mark.parametrize("how", ["SIGHUP", "the editor stops reading"])
async def test_the_server_ending_stops_every_process_its_commands_started(tmp_path: Path, how: str) -> None:
    mark = new_mark()
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command=escaping(mark, "ticks"))]}]}]
    async with editor(tmp_path, turns, args=["--allow-tool", "bash"]) as ed:
        prompt = asyncio.ensure_future(ed.prompt("go"))
        await wait_started(mark)
        process = ed.client._server
        assert process is not None
        if how == "SIGHUP":
            process.send_signal(signal.SIGHUP)
        else:
            process._transport.get_pipe_transport(1).close()  # type: ignore[attr-defined]
        await assert_all_gone(mark)
        assert await asyncio.wait_for(process.wait(), 2) == 0
        prompt.cancel()


async def test_the_model_chosen_at_initialize_gets_the_key_and_commands_do_not(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    for name in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACP_BRIDGE_API_KEY", key)  # the server inherits it
    snoop = 'env; tr "\\0" "\\n" < /proc/$PPID/environ'
    server.enqueue(chat(tool_calls=[call("c1", "bash", command=snoop)]), chat(text="Seen."))
    options = {"model": "openai:fake-model"}
    async with editor(
        tmp_path, [], options=options, args=["--allow-tool", "bash", "--base-url", server.base_url]
    ) as ed:
        result = await ed.prompt("look around")
        assert result["reply"] == "Seen."
        output = ed.final("c1")["rawOutput"]["output"]
        assert "PATH=" in output and key not in output
    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {key}"] * 2
