"""A tool call made presentable: its definition and its arguments parsed once for display, so the live turn
and `session/load` replay draw a call's cards through the same presenters.

Must not: run the tool, or let a presenter's failure escape (a card that cannot be drawn is generic).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from registry_core import (
    ParsedArguments,
    ToolDefinition,
    ToolExecution,
    ToolResult,
    ToolScope,
    parse_args_for_display,
    safe_present_call,
    safe_present_result,
    snapshot,
)
from registry_core.presentation import CallViewT, ResultViewT
from registry_core.registry import ExecutionMode

log = logging.getLogger(__name__)

# How long a tool's preview of a pending card (`preview_call`) may take before the user is asked with the
# card of its arguments instead (a slow editor read must not hold the question back for long).
PREVIEW_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Presentable:
    """A call's definition and its arguments validated for display (parsed once, used for both cards and,
    live, handed to the registry to run with: `parsed_arguments`)."""

    definition: ToolDefinition
    typed: Any
    frozen: Any = None  # the snapshot `typed` was parsed from

    @staticmethod
    def of(scope: ToolScope, name: str, arguments: Any) -> Presentable | None:
        """None when the tool is unknown or the arguments do not parse (the cards are then generic)."""
        definition = scope.get(name)
        if definition is None and name.startswith("mcp__"):
            # An MCP tool whose server is not running (a replayed session): its cards need no server.
            from acp_bridge.mcp.present import presentation_definition

            definition = presentation_definition(name)
        if definition is None or isinstance(arguments, str):
            return None
        try:
            frozen = snapshot(arguments)
        except ValueError:
            return None
        ok, typed = parse_args_for_display(definition, frozen)
        return Presentable(definition, typed, frozen) if ok else None

    def parsed_arguments(self) -> ParsedArguments:
        """The arguments as parsed here, for the registry to run the call with (what the cards show is
        then exactly what runs, and the pipeline need not snapshot and parse them again)."""
        return ParsedArguments(self.definition, self.frozen, self.typed)

    def call_view(self) -> CallViewT | None:
        present, typed = self.definition.present_call, self.typed
        if present is None:
            return None
        return safe_present_call(lambda: present(typed), tool=self.definition.name)

    async def preview_view(self, execution: ToolExecution) -> CallViewT | None:
        """The tool's live pending card for `execution` (`preview_call`: e.g. the hunks a write would apply
        to the file as it is now; it may also pin what the question is about), or None: no preview, or it
        failed or took longer than `PREVIEW_TIMEOUT_S` (logged; the pure `call_view` stands). Replay never
        calls it: a stored card is the pure one."""
        preview, typed, name = self.definition.preview_call, self.typed, self.definition.name
        if preview is None:
            return None
        try:
            view = await asyncio.wait_for(preview(typed, execution), PREVIEW_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a preview only improves a card; it never fails a call
            log.warning("preview_call of tool %r failed; the card keeps its arguments view: %r", name, exc)
            return None
        return safe_present_call(lambda: view, tool=name)

    def result_view(self, result: ToolResult) -> ResultViewT | None:
        present, typed = self.definition.present_result, self.typed
        if present is None:
            return None
        return safe_present_result(lambda: present(typed, result), tool=self.definition.name)

    def execution_mode(self) -> ExecutionMode:
        """`ToolScope.execution_mode`'s rule on the arguments parsed here, so `run_step` need not parse
        them again: `parallel` only when the tool's classifier returns exactly True."""
        classify = self.definition.is_concurrency_safe
        if classify is None:
            return "exclusive"
        try:
            return "parallel" if classify(self.typed) is True else "exclusive"
        except Exception:  # noqa: BLE001 - contained by contract, as in the registry
            return "exclusive"
