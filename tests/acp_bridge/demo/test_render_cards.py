"""acp_bridge.demo.render: the demo prints each card as the mapping's fold says it is now (inputs built by
the real mapping, as the bridge sends them)."""

from __future__ import annotations

import io

from acp_bridge import mapping
from acp_bridge.demo.render import CardPrinter, Style
from registry_core import ToolResult
from registry_core.content import TextBlock
from registry_core.presentation import DiffCallView, FileDiff, TerminalCallView, TerminalResultView

CWD = "/work/proj"
PLAIN = mapping.WireContext(cwd=CWD)


def test_a_card_announced_while_streaming_is_printed_with_its_refined_title_and_kind() -> None:
    out = io.StringIO()
    printer = CardPrinter(out, Style(enabled=False), cwd=CWD, interactive=False)
    # The model is still streaming the arguments: a card named after the tool, kind unknown.
    printer.update(mapping.tool_call_started(PLAIN, "b1", "bash", None, None, "pending"))
    view = TerminalCallView(title="npm test")
    printer.update(
        mapping.tool_call_refined(PLAIN, "b1", "bash", {"command": "npm test"}, view, "in_progress")
    )
    assert out.getvalue().splitlines() == ["  … bash [other, waiting]", "  ▶ npm test [execute, running]"]


def test_a_command_that_exits_non_zero_is_printed_failed_with_its_exit_code() -> None:
    view = TerminalCallView(title="false")
    for ctx in (PLAIN, mapping.WireContext(cwd=CWD, terminal_meta=True)):
        out = io.StringIO()
        printer = CardPrinter(out, Style(enabled=False), cwd=CWD, interactive=False)
        printer.update(
            mapping.tool_call_started(ctx, "b1", "bash", {"command": "false"}, view, "in_progress")
        )
        result = ToolResult((TextBlock("Exit code: 1"),), False)  # the command ran: no tool error
        for update in mapping.tool_call_completed(
            ctx, "b1", "bash", {"command": "false"}, view, result, TerminalResultView(output="", exit_code=1)
        ):
            printer.update(update)
        assert "  ✖ false [execute, failed (exit 1)]" in out.getvalue().splitlines()
        assert (printer.tally.completed, printer.tally.failed) == (0, 1)


def _edit_view(old: str, new: str) -> DiffCallView:
    path = f"{CWD}/app.py"
    return DiffCallView(title="Edit app.py", diffs=(FileDiff(path=path, old_text=old, new_text=new),))


ARGS = {"file_path": "app.py", "old_string": "a = 1", "new_string": "a = 2"}
# What the arguments say, and what the tool's preview computes against the file as it is now.
PROPOSED = _edit_view("a = 1\n", "a = 2\n")
PREVIEWED = _edit_view("# app\n\na = 1\nprint(a)\n", "# app\n\na = 2\nprint(a)\n")


async def test_a_card_waiting_for_a_question_shows_the_change_as_the_question_has_it() -> None:
    out = io.StringIO()
    printer = CardPrinter(out, Style(enabled=False), cwd=CWD, interactive=False)
    printer.update(mapping.tool_call_started(PLAIN, "e1", "edit", ARGS, PROPOSED, "pending"))
    printer.update(mapping.tool_call_previewed(PLAIN, "e1", "edit", ARGS, PREVIEWED))
    question = mapping.permission_tool_call(PLAIN, "e1", "edit", ARGS, PREVIEWED, None)
    options = mapping.permission_options("`edit` on app.py")
    assert await printer.ask(question, options) == "allow_once"
    printer.update(mapping.tool_call_status(PLAIN, "e1", "in_progress"))
    lines = out.getvalue().splitlines()
    # The hunk at line 3 (the file as it is), never the arguments' line 1, and only once.
    assert lines[:7] == [
        "  … Edit app.py [edit, waiting]",
        "  ? permission needed: Edit app.py",
        "      diff app.py",
        "      @@ -2,3 +2,3 @@",
        "       ",
        "      -a = 1",
        "      +a = 2",
    ]
    assert sum(line == "      diff app.py" for line in lines) == 1
    assert lines[-1] == "  ▶ Edit app.py [edit, running]"


def test_a_card_that_runs_without_a_question_shows_its_change_once() -> None:
    out = io.StringIO()
    printer = CardPrinter(out, Style(enabled=False), cwd=CWD, interactive=False)
    printer.update(mapping.tool_call_started(PLAIN, "e1", "edit", ARGS, PROPOSED, "in_progress"))
    printer.update(mapping.tool_call_started(PLAIN, "e2", "edit", ARGS, PROPOSED, "pending"))
    printer.update(mapping.tool_call_status(PLAIN, "e2", "in_progress"))  # a rule allowed it meanwhile
    assert out.getvalue().splitlines() == [
        "  ▶ Edit app.py [edit, running]",
        "      diff app.py",
        "      @@ -1 +1 @@",
        "      -a = 1",
        "      +a = 2",
        "  … Edit app.py [edit, waiting]",
        "  ▶ Edit app.py [edit, running]",
        "      diff app.py",
        "      @@ -1 +1 @@",
        "      -a = 1",
        "      +a = 2",
    ]
