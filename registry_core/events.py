"""Durable records of tool calls, for session logs and replay.

`tool/call` holds the call's identity and arguments; `tool/result` holds exactly what the seed persists:
content, error and meta, never the canonical value (it is execution-local). `tool/code-dispatch` is one
settled Code Mode sub-call under its program's call: its arguments and the durable copy of its result
(the content as the `tools/code-dispatch-log` waterfall left it, `isError`, error and meta). All
round-trip through JSON, so a replay can run the same presenters and produce the same cards as the live
session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .content import ContentBlock, content_from_json
from .execution import CodeDispatchLog, ToolExecution, ToolExecutionResult, ToolFailureInfo, ToolResult
from .json_values import JsonValue, snapshot, thaw


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    call_id: str
    name: str
    arguments: JsonValue  # a JSON object, or the raw string the model emitted
    type: Literal["tool/call"] = "tool/call"

    @staticmethod
    def of(execution: ToolExecution) -> ToolCallEvent:
        return ToolCallEvent(execution.call_id, execution.name, execution.arguments)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "callId": self.call_id,
            "name": self.name,
            "arguments": thaw(self.arguments),
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> ToolCallEvent:
        if raw.get("type") != "tool/call":
            raise ValueError("not a tool/call event")
        return ToolCallEvent(str(raw["callId"]), str(raw["name"]), snapshot(raw.get("arguments")))


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    call_id: str
    name: str
    content: tuple[ContentBlock, ...]
    is_error: bool
    error: ToolFailureInfo | None = None
    meta: JsonValue = None
    type: Literal["tool/result"] = "tool/result"

    @staticmethod
    def of(execution: ToolExecution, result: ToolExecutionResult) -> ToolResultEvent:
        return ToolResultEvent(
            execution.call_id, execution.name, result.content, result.is_error, result.error, result.meta
        )

    def to_result(self) -> ToolResult:
        """What `present_result` receives on replay (identical to the live projection)."""
        return ToolResult(self.content, self.is_error, self.error, self.meta)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "callId": self.call_id,
            "name": self.name,
            **_outcome_json(self.content, self.is_error, self.error, self.meta),
        }
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> ToolResultEvent:
        if raw.get("type") != "tool/result":
            raise ValueError("not a tool/result event")
        return ToolResultEvent(
            str(raw["callId"]),
            str(raw["name"]),
            tuple([content_from_json(b) for b in raw.get("content", ())]),
            bool(raw.get("isError")),
            _error_from_json(raw.get("error")),
            snapshot(raw.get("meta")),
        )


@dataclass(frozen=True, slots=True)
class CodeDispatchEvent:
    """One settled Code Mode sub-call (`<parent>:code:<n>`) of the program run by call `parent_call_id`."""

    parent_call_id: str
    call_id: str
    name: str
    arguments: JsonValue
    content: tuple[ContentBlock, ...]
    is_error: bool
    error: ToolFailureInfo | None = None
    meta: JsonValue = None
    type: Literal["tool/code-dispatch"] = "tool/code-dispatch"

    @staticmethod
    def of(entry: CodeDispatchLog, content: tuple[ContentBlock, ...]) -> CodeDispatchEvent:
        """The durable event of a logged sub-dispatch, with the content the waterfall settled on."""
        return CodeDispatchEvent(
            entry.execution.call_id,
            entry.sub_call_id,
            entry.name,
            entry.arguments,
            content,
            entry.is_error,
            entry.error,
            entry.meta,
        )

    def to_result(self) -> ToolResult:
        """What the sub-call's `present_result` receives, live and on replay."""
        return ToolResult(self.content, self.is_error, self.error, self.meta)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "parentCallId": self.parent_call_id,
            "callId": self.call_id,
            "name": self.name,
            "arguments": thaw(self.arguments),
            **_outcome_json(self.content, self.is_error, self.error, self.meta),
        }
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> CodeDispatchEvent:
        if raw.get("type") != "tool/code-dispatch":
            raise ValueError("not a tool/code-dispatch event")
        return CodeDispatchEvent(
            str(raw["parentCallId"]),
            str(raw["callId"]),
            str(raw["name"]),
            snapshot(raw.get("arguments")),
            tuple(content_from_json(b) for b in raw.get("content", ())),
            bool(raw.get("isError")),
            _error_from_json(raw.get("error")),
            snapshot(raw.get("meta")),
        )


def _outcome_json(
    content: Sequence[ContentBlock], is_error: bool, error: ToolFailureInfo | None, meta: JsonValue
) -> dict[str, Any]:
    """The stored form of a settled call's outcome (shared by `tool/result` and `tool/code-dispatch`)."""
    out: dict[str, Any] = {"content": [b.to_json() for b in content], "isError": is_error}
    if error is not None:
        out["error"] = error.to_json()
    if meta is not None:
        out["meta"] = thaw(meta)
    return out


def _error_from_json(err: Any) -> ToolFailureInfo | None:
    if err is None:  # a call that did not fail: most results (the ABC check below is slow)
        return None
    return ToolFailureInfo(str(err["message"]), err.get("code")) if isinstance(err, Mapping) else None
