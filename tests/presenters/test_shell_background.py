"""`bash` with `run_in_background`, `bash_output` and `kill_bash`, on real processes: the call returns at once
while the command runs on, its output is read back from a cursor (bounded, the whole kept in a file), it
ends by itself or by `kill_bash` / `stop_all` with every process it started, and the model hears of an
end it did not see once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from presenters.background import BACKGROUND_SERVICE, BackgroundCommand, BackgroundCommands
from presenters.output_capture import HEAD_BYTES, TAIL_BYTES
from presenters.process_tree import PROCESSES_SERVICE, ProcessScope
from presenters.runtime import SCRATCH_SERVICE, ScratchDir
from registry_core import TerminalResultView, ToolResult, parse_args_for_display, safe_present_result
from tests.support.process_marks import assert_all_gone, escaping, marked, new_mark, wait_started

from .conftest import Session, text_of

pytestmark = pytest.mark.slow


class Watcher:
    """The host's side of the registry: every output chunk and end, with events to wait on."""

    def __init__(self) -> None:
        self.output: dict[str, str] = {}
        self.ended: list[BackgroundCommand] = []
        self.changed = asyncio.Event()

    def on_output(self, bash_id: str, text: str) -> None:
        self.output[bash_id] = self.output.get(bash_id, "") + text
        self.changed.set()

    def on_end(self, command: BackgroundCommand) -> None:
        self.ended.append(command)
        self.changed.set()

    async def until(self, condition: Callable[[], bool], within: float = 10) -> None:
        async with asyncio.timeout(within):
            while not condition():
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
def background() -> BackgroundCommands:
    return BackgroundCommands()


@pytest.fixture
async def host(make_session: Callable[..., Session], background: BackgroundCommands, tmp_path: Path) -> Any:
    scope = ProcessScope()
    scratch = ScratchDir(parent=lambda: str(tmp_path))
    session = make_session(
        services={PROCESSES_SERVICE: scope, SCRATCH_SERVICE: scratch, BACKGROUND_SERVICE: background}
    )
    watcher = Watcher()
    background.watch(watcher)
    yield session, watcher
    await background.stop_all()
    await scope.stop()
    scratch.remove()


async def test_the_call_returns_at_once_and_kill_bash_stops_every_process_of_the_command(
    host: tuple[Session, Watcher], background: BackgroundCommands
) -> None:
    session, watcher = host
    mark = new_mark()
    started = time.monotonic()
    result = await session.run("bash", {"command": escaping(mark), "run_in_background": True})
    assert time.monotonic() - started < 1  # not the command's 300 s
    bash_id = "call-1"
    assert result.meta["background"] is True and result.meta["bash_id"] == bash_id
    assert "running in the background with bash_id 'call-1'" in text_of(result)
    card = session.result_card("bash", {"command": "x"}, result)
    assert isinstance(card, TerminalResultView) and card.background

    await wait_started(mark)
    status = await session.run("bash_output", {"bash_id": bash_id})
    assert status.meta["running"] is True and status.meta["exit_code"] is None
    assert text_of(status).endswith("Status: running.")

    stopped = await session.run("kill_bash", {"bash_id": bash_id})
    assert stopped.error is None
    assert stopped.meta["running"] is False and stopped.meta["stopped_by"] == "kill_bash"
    assert text_of(stopped).startswith("Stopped background command call-1")
    await assert_all_gone(mark)
    assert [c.bash_id for c in watcher.ended] == [bash_id]
    assert background.take_end_notes() == []  # the model stopped it: nothing to tell


async def test_bash_output_returns_only_the_output_not_read_yet_then_the_exit_code(
    host: tuple[Session, Watcher], tmp_path: Path
) -> None:
    session, watcher = host
    gate = tmp_path / "go"
    command = f"echo one; while [ ! -e {gate} ]; do sleep 0.01; done; echo two; exit 3"
    await session.run("bash", {"command": command, "run_in_background": True})
    await watcher.until(lambda: "one" in watcher.output.get("call-1", ""))

    first = await session.run("bash_output", {"bash_id": "call-1"})
    assert (first.meta["output"], first.meta["running"]) == ("one\n", True)
    again = await session.run("bash_output", {"bash_id": "call-1"})
    assert again.meta["output"] == "" and text_of(again) == "(no new output)\nStatus: running."

    gate.touch()
    await watcher.until(lambda: bool(watcher.ended))
    last = await session.run("bash_output", {"bash_id": "call-1"})
    assert last.meta["output"] == "two\n"
    assert (last.meta["running"], last.meta["exit_code"]) == (False, 3)
    assert text_of(last).endswith("Status: exited with code 3.")
    assert watcher.output["call-1"] == "one\ntwo\n"  # the live card saw all of it, as it came


async def test_a_long_output_is_read_back_as_its_start_and_end_with_the_file_holding_all_of_it(
    host: tuple[Session, Watcher],
) -> None:
    session, watcher = host
    lines = 200_000  # 2 MB of numbered lines
    await session.run("bash", {"command": f"seq -f '%09g' 1 {lines}", "run_in_background": True})
    await watcher.until(lambda: bool(watcher.ended))

    read = await session.run("bash_output", {"bash_id": "call-1"})
    meta = read.meta
    assert meta["exit_code"] == 0 and meta["omitted"] == lines * 10 - 32 * 1024 and meta["lost"] == 0
    assert meta["output"].startswith("000000001\n") and meta["output"].endswith(f"{lines:09d}\n")
    assert f"bytes omitted; the full output is in {meta['full_output_path']}" in meta["output"]
    full = Path(meta["full_output_path"]).read_text()  # noqa: ASYNC240 - a test's own check
    assert full == "".join(f"{i:09d}\n" for i in range(1, lines + 1))

    # The end of the card: `bash`'s own result card, drawn from the registry's outcome.
    outcome = watcher.ended[0].outcome()
    assert not outcome.is_error
    card = durable_card(session, "bash", {"command": "seq"}, outcome)
    assert isinstance(card, TerminalResultView) and not card.background
    assert card.exit_code == 0 and card.full_output_path == meta["full_output_path"]
    assert card.output is not None and len(card.output) < HEAD_BYTES + TAIL_BYTES + 200


def durable_card(session: Session, name: str, arguments: Any, result: ToolResult) -> Any:
    """The result card a tool draws from a durable result (as a host's replay does)."""
    definition = session.registry.get(name)
    assert definition is not None and definition.present_result is not None
    present = definition.present_result
    ok, typed = parse_args_for_display(definition, arguments)
    assert ok
    return safe_present_result(lambda: present(typed, result), name)


async def test_what_still_holds_the_output_after_the_shell_exited_is_stopped_with_it(
    host: tuple[Session, Watcher],
) -> None:
    session, watcher = host
    mark = new_mark()
    command = f"setsid bash -c 'exec -a {mark} sleep 300' & echo started"
    await session.run("bash", {"command": command, "run_in_background": True})
    await watcher.until(lambda: bool(watcher.ended))
    assert watcher.ended[0].exit_code == 0 and watcher.output["call-1"] == "started\n"
    await assert_all_gone(mark)


async def test_the_model_is_told_once_of_an_end_it_did_not_see(
    host: tuple[Session, Watcher], background: BackgroundCommands
) -> None:
    session, watcher = host
    await session.run("bash", {"command": "echo hi; exit 2", "run_in_background": True})
    await session.run("bash", {"command": "echo seen", "run_in_background": True})
    await watcher.until(lambda: len(watcher.ended) == 2)
    await session.run("bash_output", {"bash_id": "call-2"})  # the model saw this one end

    assert background.take_end_notes() == [
        "Background command call-1 (`echo hi; exit 2`) exited with code 2; use bash_output to read its "
        "output."
    ]
    assert background.take_end_notes() == []


async def test_stop_all_ends_every_command_and_admits_no_new_one(
    host: tuple[Session, Watcher], background: BackgroundCommands
) -> None:
    session, watcher = host
    marks = [new_mark(), new_mark()]
    for mark in marks:
        await session.run("bash", {"command": escaping(mark), "run_in_background": True})
    for mark in marks:
        await wait_started(mark)

    await background.stop_all("the session was closed")

    for mark in marks:
        await assert_all_gone(mark)
    assert {c.stopped_by for c in watcher.ended} == {"the session was closed"}
    outcome = watcher.ended[0].outcome()
    assert outcome.is_error and outcome.error is not None
    assert outcome.error.message == "Stopped by the session was closed."
    refused = await session.run("bash", {"command": "true", "run_in_background": True})
    assert refused.error is not None and refused.error.code == "UNAVAILABLE"


async def test_the_limit_on_running_commands_and_unknown_ids_are_clear_failures(
    make_session: Callable[..., Session],
) -> None:
    background = BackgroundCommands(max_running=1)
    session = make_session(services={BACKGROUND_SERVICE: background})
    mark = new_mark()
    try:
        await session.run("bash", {"command": f"exec -a {mark} sleep 300", "run_in_background": True})
        second = await session.run("bash", {"command": "true", "run_in_background": True})
        assert second.error is not None and second.error.code == "LIMIT"
        unknown = await session.run("bash_output", {"bash_id": "nope"})
        assert unknown.error is not None and unknown.error.code == "NOT_FOUND"
        assert "No background command 'nope' in this session (known: call-1)" in unknown.error.message
    finally:
        await background.stop_all()
    await assert_all_gone(mark)
    assert not marked(mark)


async def test_without_a_host_that_keeps_them_a_background_command_is_refused(session: Session) -> None:
    result = await session.run("bash", {"command": "true", "run_in_background": True})
    assert result.error is not None and result.error.code == "UNAVAILABLE"
    output = await session.run("bash_output", {"bash_id": "b1"})
    assert output.error is not None and output.error.code == "UNAVAILABLE"


def test_the_cards_of_bash_output_and_kill_bash(session: Session) -> None:
    meta = {"bash_id": "b1", "command": "npm run dev", "running": True, "exit_code": None, "signal": None,
            "stopped_by": None, "output": "ready\n", "omitted": 0, "lost": 0,
            "full_output_path": None}  # fmt: skip
    card = durable_card(session, "bash_output", {"bash_id": "b1"}, ToolResult((), False, None, meta))
    assert card.title == "Output of `npm run dev`"
    assert card.content[0].text == "```console\nready\n```\nStatus: running."
    stopped = {**meta, "running": False, "stopped_by": "kill_bash", "signal": "SIGTERM"}
    card = durable_card(session, "kill_bash", {"bash_id": "b1"}, ToolResult((), False, None, stopped))
    assert card.title == "Stop `npm run dev`"
    assert card.content[0].text == "Stopped background command b1 (`npm run dev`)."
