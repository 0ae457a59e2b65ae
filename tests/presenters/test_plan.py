"""`todo_write`: validation, the model-facing summary, the plan meta the bridge maps, and its cards."""

from __future__ import annotations

from registry_core import ContentText, GenericCallView, GenericResultView, ToolSuccess, thaw

from .conftest import Session, text_of


async def test_todos_become_plan_meta_with_default_priority(session: Session) -> None:
    args = {
        "todos": [
            {"content": "Read the code", "status": "completed", "priority": "high"},
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug", "id": "2"},
            {"content": "Run the tests", "status": "pending"},
        ]
    }

    result = await session.run("todo_write", args)

    assert thaw(result.meta) == {
        "todos": [
            {"content": "Read the code", "status": "completed", "priority": "high"},
            {"content": "Fix the bug", "status": "in_progress", "priority": "medium"},
            {"content": "Run the tests", "status": "pending", "priority": "medium"},
        ]
    }
    assert text_of(result) == (
        "Plan updated (1 completed, 1 in progress, 1 pending):\n"
        "- [x] Read the code\n- [~] Fix the bug\n- [ ] Run the tests"
    )
    assert isinstance(result, ToolSuccess)
    assert result.value["todos"][1]["activeForm"] == "Fixing the bug"  # kept in its original spelling
    assert session.call_card("todo_write", args) == GenericCallView(title="Update plan", kind="think")
    card = session.result_card("todo_write", args, result)
    assert card == GenericResultView(
        title="Update plan",
        content=(ContentText(text="- [x] Read the code\n- [~] Fix the bug\n- [ ] Run the tests"),),
    )


async def test_invalid_todos_are_rejected_with_their_path(session: Session) -> None:
    bad_status = await session.run("todo_write", {"todos": [{"content": "x", "status": "done"}]})
    empty = await session.run("todo_write", {"todos": [{"content": "", "status": "pending"}]})
    bad_priority = await session.run(
        "todo_write", {"todos": [{"content": "x", "status": "pending", "priority": "urgent"}]}
    )

    for result in (bad_status, empty, bad_priority):
        assert result.error is not None and result.error.code == "INVALID_ARGS"
    assert bad_status.error is not None and "/todos/0/status" in bad_status.error.message
    assert bad_priority.error is not None and "/todos/0/priority" in bad_priority.error.message


async def test_an_empty_plan_is_allowed(session: Session) -> None:
    result = await session.run("todo_write", {"todos": []})
    assert thaw(result.meta) == {"todos": []}
    assert text_of(result) == "Plan updated (empty):\n"
