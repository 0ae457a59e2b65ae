"""`workspace_policy` in a real registry pipeline: writes and edits outside the roots are asked about
(never silently denied), inside ones go on to the next listener, other tools are not its business."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from presenters import build_tools, workspace_policy
from registry_core import (
    Agent,
    Allow,
    ApprovalAnswer,
    Ask,
    Deny,
    ToolExecution,
    ToolExecutionInput,
    ToolRegistry,
)


class Approvals:
    def __init__(self, outcome: str) -> None:
        self.outcome = outcome
        self.asked: list[tuple[str, str | None]] = []

    async def request_approval(self, execution: ToolExecution, reason: str | None) -> ApprovalAnswer:
        self.asked.append((execution.name, reason))
        return ApprovalAnswer(self.outcome)  # type: ignore[arg-type]


def setup(tmp_path: Path, outcome: str) -> tuple[ToolRegistry, Approvals, Agent]:
    approvals = Approvals(outcome)
    registry = ToolRegistry(approval=approvals)
    for tool in build_tools():
        registry.register(tool)
    registry.on_pre_execute(workspace_policy())
    work = tmp_path / "work"
    work.mkdir()
    return registry, approvals, Agent(id="s", cwd=str(work), roots=(str(work),))


async def run(registry: ToolRegistry, agent: Agent, name: str, args: dict[str, Any]) -> Any:
    return await registry.execute(ToolExecutionInput("c", name, args, agent=agent))


async def test_write_outside_the_roots_asks_and_runs_when_allowed(tmp_path: Path) -> None:
    registry, approvals, agent = setup(tmp_path, "allowed-once")
    outside = tmp_path / "outside.txt"

    result = await run(registry, agent, "write", {"file_path": str(outside), "content": "x\n"})

    assert not result.is_error and outside.read_text() == "x\n"
    [(name, reason)] = approvals.asked
    assert name == "write"
    assert reason is not None and str(outside) in reason and "outside the workspace roots" in reason


async def test_rejected_edit_outside_is_denied_and_the_file_untouched(tmp_path: Path) -> None:
    registry, approvals, agent = setup(tmp_path, "denied")
    outside = tmp_path / "o.txt"
    outside.write_text("keep\n")

    result = await run(
        registry, agent, "edit", {"file_path": "../o.txt", "old_string": "keep", "new_string": "x"}
    )

    assert result.error is not None and result.error.code == "DENIED"
    assert outside.read_text() == "keep\n"
    assert len(approvals.asked) == 1


async def test_inside_the_roots_and_other_tools_are_not_asked(tmp_path: Path) -> None:
    registry, approvals, agent = setup(tmp_path, "denied")
    (tmp_path / "work" / "..cache").mkdir()

    inside = await run(registry, agent, "write", {"file_path": "..cache/in.txt", "content": "y\n"})
    read_outside = await run(
        registry, agent, "read", {"file_path": str(tmp_path / "work" / "..cache/in.txt")}
    )

    assert not inside.is_error and not read_outside.is_error
    assert approvals.asked == []


async def test_a_symlink_out_of_the_roots_counts_as_outside(tmp_path: Path) -> None:
    registry, approvals, agent = setup(tmp_path, "denied")
    (tmp_path / "target").mkdir()
    (tmp_path / "work" / "escape").symlink_to(tmp_path / "target")

    result = await run(registry, agent, "write", {"file_path": "escape/f.txt", "content": "z"})

    assert result.error is not None and result.error.code == "DENIED"
    assert not (tmp_path / "target" / "f.txt").exists()
    assert len(approvals.asked) == 1


async def test_defers_to_the_next_listener_and_uses_custom_roots(tmp_path: Path) -> None:
    decisions: list[Any] = []
    listener = workspace_policy(lambda execution: [str(tmp_path / "extra")], tools=("write",))

    async def next_allow() -> Allow:
        decisions.append("next")
        return Allow()

    def execution(name: str, path: str) -> ToolExecution:
        from registry_core import NEVER, ToolExecutionToken

        return ToolExecution(
            "c", name, {"file_path": path}, NEVER, ToolExecutionToken("t"), Agent(id="a", cwd=str(tmp_path))
        )

    inside = await listener(execution("write", "extra/a.txt"), next_allow)
    outside = await listener(execution("write", "a.txt"), next_allow)
    not_checked = await listener(execution("edit", "/elsewhere"), next_allow)

    assert isinstance(inside, Allow) and isinstance(not_checked, Allow)
    assert isinstance(outside, Ask) and not isinstance(outside, Deny)
    assert decisions == ["next", "next"]
