"""Fixtures for the built-in tool tests: a real `ToolRegistry` with `build_tools()`, a session `Agent`
rooted at `tmp_path`, and a `Session` helper that runs calls and renders their cards like a host would;
`Buffers`, an editor's file access serving unsaved buffers, and `hunks_of`, a diff card's hunks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from presenters import build_tools
from presenters.diffs import Hunk
from registry_core import (
    NEVER,
    Agent,
    CancelSignal,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolResult,
    content_text,
    parse_args_for_display,
    safe_present_call,
    safe_present_result,
)


@dataclass
class Session:
    registry: ToolRegistry
    agent: Agent
    progress: list[Any] = field(default_factory=list)  # ToolProgress updates, in order
    calls: int = 0

    @property
    def cwd(self) -> Path:
        return Path(self.agent.cwd)

    async def run(
        self, name: str, arguments: Any, *, signal: CancelSignal = NEVER, agent: Agent | None = None
    ) -> ToolExecutionResult:
        self.calls += 1
        return await self.registry.execute(
            ToolExecutionInput(
                call_id=f"call-{self.calls}",
                name=name,
                arguments=arguments,
                signal=signal,
                agent=agent if agent is not None else self.agent,
                on_progress=lambda _execution, update: self.progress.append(update),
            )
        )

    def call_card(self, name: str, arguments: Any) -> Any:
        definition = self.registry.get(name)
        assert definition is not None
        ok, typed = parse_args_for_display(definition, arguments)
        assert ok, f"arguments of {name} do not parse: {arguments!r}"
        presenter = definition.present_call
        assert presenter is not None
        return safe_present_call(lambda: presenter(typed), name)

    def result_card(self, name: str, arguments: Any, result: ToolExecutionResult) -> Any:
        definition = self.registry.get(name)
        assert definition is not None
        ok, typed = parse_args_for_display(definition, arguments)
        assert ok
        presenter = definition.present_result
        assert presenter is not None
        projection = ToolResult.of(result)
        return safe_present_result(lambda: presenter(typed, projection), name)


def text_of(result: ToolExecutionResult) -> str:
    return content_text(result.content)


def hunks_of(meta: Any) -> list[Hunk]:
    return [Hunk(**dict(h)) for h in meta["hunks"]]


class Buffers:
    """A FileAccess serving editor buffers for some paths (None for the rest)."""

    def __init__(self, buffers: dict[str, str]) -> None:
        self.buffers = buffers
        self.writes: list[tuple[str, str]] = []

    async def read_text(self, path: str) -> str | None:
        return self.buffers.get(path)

    async def write_text(self, path: str, content: str) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content


@pytest.fixture
def make_session(tmp_path: Path) -> Callable[..., Session]:
    def make(*, services: dict[str, Any] | None = None, grep_backend: Any = "auto", **kwargs: Any) -> Session:
        registry = ToolRegistry()
        for tool in build_tools(grep_backend=grep_backend, bash_spill_dir=str(tmp_path / "spill"), **kwargs):
            registry.register(tool)
        (tmp_path / "spill").mkdir(exist_ok=True)
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        agent = Agent(id="s1", cwd=str(work), roots=(str(work),), services=services or {})
        return Session(registry, agent)

    return make


@pytest.fixture
def session(make_session: Callable[..., Session]) -> Session:
    return make_session()
