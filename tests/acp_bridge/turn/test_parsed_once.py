"""A call's arguments are parsed once per turn, for its card and its run: the body gets the very typed
arguments the card was drawn from (what the card shows is what runs), and a call the card could not
parse, or one sharing its id with another call of the step, is parsed by the registry as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from acp_bridge.permissions.policy import PolicyConfig
from acp_bridge.session.manager import CoreConfig, SessionManager
from registry_core import GenericCallView, Output, ToolDefinition, ToolRunContext, define_tool
from tests.support.fake_channel import FakeChannel
from tests.support.steps_backend import StepsBackend


class EchoArgs(BaseModel):
    word: str


class Seen:
    """What the tool saw: each parse's input, the typed arguments each card and each body got."""

    def __init__(self) -> None:
        self.parsed: list[Any] = []
        self.carded: list[EchoArgs] = []
        self.ran: list[EchoArgs] = []


def _echo(seen: Seen) -> ToolDefinition:
    async def body(args: EchoArgs, ctx: ToolRunContext) -> str:
        seen.ran.append(args)
        return args.word

    def present_call(args: EchoArgs) -> GenericCallView:
        seen.carded.append(args)
        return GenericCallView(title=f"Echo {args.word}", kind="other")

    tool = define_tool(
        name="echo",
        description="Say a word back.",
        parameters=EchoArgs,
        output=Output(str, render=lambda args, value: value),
        execute=body,
        concurrency_safe=True,
        present_call=present_call,
    )
    parse = tool.parse_args
    assert parse is not None

    def counting(raw: Any) -> Any:
        seen.parsed.append(raw)
        return parse(raw)

    return dataclasses.replace(tool, parse_args=counting)


async def _turn(tmp_path: Path, seen: Seen, calls: list[dict[str, Any]]) -> FakeChannel:
    channel = FakeChannel()
    backend = StepsBackend([[calls]])  # one step of `calls` (an id may repeat), then the turn ends
    config = CoreConfig(policy=PolicyConfig(allow_tools=frozenset({"echo"})))
    manager = SessionManager(channel, backend, [_echo(seen)], config)
    session = manager.new_session(str(tmp_path))
    assert await session.prompt([{"type": "text", "text": "go"}]) == "end_turn"
    await manager.shutdown()
    return channel


async def test_each_call_is_parsed_once_and_runs_with_the_arguments_its_card_showed(tmp_path: Path) -> None:
    seen = Seen()
    calls = [{"id": f"e{i}", "name": "echo", "arguments": {"word": f"w{i}"}} for i in range(5)]

    channel = await _turn(tmp_path, seen, calls)

    assert [raw["word"] for raw in seen.parsed] == ["w0", "w1", "w2", "w3", "w4"]  # once each, no more
    assert [id(args) for args in seen.ran] == [id(args) for args in seen.carded]  # the very same objects
    for i in range(5):
        assert channel.statuses(f"e{i}") == ["in_progress", "completed"]


async def test_calls_the_card_could_not_parse_or_sharing_an_id_are_parsed_by_the_registry(
    tmp_path: Path,
) -> None:
    seen = Seen()
    calls = [
        {"id": "bad", "name": "echo", "arguments": {"word": 3}},  # no card view: the registry says why
        {"id": "twin", "name": "echo", "arguments": {"word": "a"}},
        {"id": "twin", "name": "echo", "arguments": {"word": "b"}},
    ]

    channel = await _turn(tmp_path, seen, calls)

    # The card's parse of each call, then the registry's own for the three: none was handed over.
    assert [dict(raw) for raw in seen.parsed] == [{"word": 3}, {"word": "a"}, {"word": "b"}] * 2
    assert sorted(args.word for args in seen.ran) == ["a", "b"]
    assert all(not any(args is card for card in seen.carded) for args in seen.ran)
    assert channel.statuses("bad")[-1] == "failed"
