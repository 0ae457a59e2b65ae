"""acp_bridge.demo_render: the demo prints each card as the mapping's fold says it is now (inputs built by
the real mapping, as the bridge sends them)."""

from __future__ import annotations

import io

from acp_bridge import mapping
from acp_bridge.demo_render import CardPrinter, Style
from registry_core.presentation import TerminalCallView

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
