"""`SessionBackground`, the keeper of a session's background cards, on real commands: output printed before
the card was handed over is shown, a command that ended before the hand-over completes its card at once,
each end is logged before its card completes, a card no turn handed over ends unlogged, and a keeper
replaced by a newer session object goes quiet."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.history.session_log import BackgroundEnded, LogEvent
from acp_bridge.mapping import WireContext, fold_cards
from acp_bridge.session.background import SessionBackground
from acp_bridge.turn.background import LiveCard
from acp_bridge.turn.presentable import Presentable
from presenters import build_tools
from presenters.background import BACKGROUND_SERVICE, BackgroundCommand, BackgroundCommands
from presenters.process_tree import PROCESSES_SERVICE, ProcessScope
from registry_core import Agent, ToolExecutionInput, ToolRegistry

pytestmark = pytest.mark.slow


class Host:
    """A session as the keeper sees it: its id, a channel that keeps every update, and its log."""

    def __init__(self) -> None:
        self.id = "s1"
        self.channel = self
        self.updates: list[dict[str, Any]] = []
        self.log: list[LogEvent] = []
        self.changed = asyncio.Event()

    def send_update(self, session_id: str, update: Any) -> None:
        self.updates.append(dict(update))
        self.changed.set()

    def backlog(self) -> int:
        return 0

    def record(self, event: LogEvent) -> None:
        self.log.append(event)

    async def until(self, condition: Callable[[], bool], within: float = 10) -> None:
        async with asyncio.timeout(within):
            while not condition():
                self.changed.clear()
                await self.changed.wait()


class Before:
    """The commands' watcher before the hand-over: passes output on to the keeper, and tells the test when
    some came and when the command ended (without ending the card: the keeper has none yet)."""

    def __init__(self, keeper: SessionBackground) -> None:
        self.keeper = keeper
        self.output = asyncio.Event()
        self.ended = asyncio.Event()

    def on_output(self, bash_id: str, text: str) -> None:
        self.keeper.on_output(bash_id, text)
        self.output.set()

    def on_end(self, command: BackgroundCommand) -> None:
        self.keeper.on_end(command)
        self.ended.set()


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[ToolRegistry, Agent, BackgroundCommands]]:
    registry = ToolRegistry()
    for tool in build_tools():
        registry.register(tool)
    commands, scope = BackgroundCommands(), ProcessScope()
    agent = Agent(
        id="s1", cwd=str(tmp_path), roots=(str(tmp_path),),
        services={BACKGROUND_SERVICE: commands, PROCESSES_SERVICE: scope},
    )  # fmt: skip
    yield registry, agent, commands
    await commands.stop_all()
    await scope.stop()


async def _start(registry: ToolRegistry, agent: Agent, call_id: str, command: str) -> LiveCard:
    arguments = {"command": command, "run_in_background": True}
    result = await registry.execute(
        ToolExecutionInput(call_id=call_id, name="bash", arguments=arguments, agent=agent)
    )
    assert not result.is_error, result
    presentable = Presentable.of(registry.scope(), "bash", arguments)
    assert presentable is not None
    wire = WireContext(cwd=agent.cwd, terminal_meta=True)
    return LiveCard(call_id, "bash", arguments, presentable.call_view(), wire, presentable)


async def test_output_before_the_hand_over_is_shown_and_the_end_is_logged_before_the_card_completes(
    world: tuple[ToolRegistry, Agent, BackgroundCommands], tmp_path: Path
) -> None:
    registry, agent, commands = world
    host = Host()
    keeper = SessionBackground(host, commands)
    before = Before(keeper)
    commands.watch(before)
    gate = tmp_path / "gate"
    command = f"echo early; while [ ! -e {gate} ]; do sleep 0.01; done; echo late"
    card = await _start(registry, agent, "b1", command)
    await asyncio.wait_for(before.output.wait(), 10)
    commands.watch(keeper)

    assert keeper.keep_live(card)
    gate.touch()
    await host.until(lambda: any(u.get("status") == "completed" for u in host.updates))
    folded = fold_cards([{"sessionUpdate": "tool_call", "toolCallId": "b1", "title": "x"}, *host.updates])
    assert folded["b1"].output.replace("\r\n", "\n") == "early\nlate\n"
    assert folded["b1"].exited is not None and folded["b1"].exited.exit_code == 0
    (ended,) = host.log
    assert isinstance(ended, BackgroundEnded) and ended.result.meta["exit_code"] == 0


async def test_a_command_that_ended_before_the_hand_over_completes_its_card_at_once(
    world: tuple[ToolRegistry, Agent, BackgroundCommands],
) -> None:
    registry, agent, commands = world
    host = Host()
    keeper = SessionBackground(host, commands)
    before = Before(keeper)
    commands.watch(before)
    card = await _start(registry, agent, "b1", "echo quick; exit 7")
    await asyncio.wait_for(before.ended.wait(), 10)
    commands.watch(keeper)

    assert keeper.keep_live(card)
    folded = fold_cards([{"sessionUpdate": "tool_call", "toolCallId": "b1", "title": "x"}, *host.updates])
    # A non-zero exit ends the card failed, its output and code kept; the logged end is no tool error.
    assert folded["b1"].status == "failed" and folded["b1"].output == "quick\n"
    assert folded["b1"].exited is not None and folded["b1"].exited.exit_code == 7
    assert [type(e) for e in host.log] == [BackgroundEnded]
    assert not host.log[0].result.is_error


async def test_a_command_no_card_was_handed_over_for_ends_unlogged_and_unseen(
    world: tuple[ToolRegistry, Agent, BackgroundCommands],
) -> None:
    registry, agent, commands = world
    host = Host()
    SessionBackground(host, commands)
    await _start(registry, agent, "b1", "echo nobody")
    command = commands.get("b1")
    assert command is not None and command.task is not None
    await asyncio.wait([command.task], timeout=10)
    assert not command.running
    assert host.updates == [] and host.log == []


async def test_a_keeper_replaced_by_a_newer_one_goes_quiet(
    world: tuple[ToolRegistry, Agent, BackgroundCommands], tmp_path: Path
) -> None:
    registry, agent, commands = world
    old_host, new_host = Host(), Host()
    old = SessionBackground(old_host, commands)
    gate = tmp_path / "gate"
    card = await _start(registry, agent, "b1", f"while [ ! -e {gate} ]; do sleep 0.01; done; echo done")
    assert old.keep_live(card)
    new = SessionBackground(new_host, commands)  # the session was loaded again in this bridge
    assert old.end_notes() == [] and not old.keep_live(card)
    new.reopen([card], visible=True)

    gate.touch()
    await new_host.until(lambda: any(u.get("status") == "completed" for u in new_host.updates))
    assert old_host.updates == [] and old_host.log == []
    assert [type(e) for e in new_host.log] == [BackgroundEnded]
