"""The chat-completions stream read: server-sent event lines in, step events out.

`delta.reasoning_content` (DeepSeek; `reasoning` elsewhere) becomes `ThoughtDelta`, `delta.content`
becomes `TextDelta`, tool-call fragments are assembled by index (or by id, for servers that send none)
into the final `StepComplete`, announced by a `ToolCallStarted` as soon as a call's id and name are known;
the usage chunk becomes `Usage`. One `StepParser` reads one response.

Must not: do I/O: the caller feeds the lines, stops at `done`, and asks `complete` when the lines end (a
stream closed before that was cut off, and its `result` would pass for a whole answer).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acp_bridge.models.base import (
    ModelError,
    StepComplete,
    StepEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    ToolCallStarted,
    Usage,
    parse_tool_arguments,
)


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)
    started: bool = False


class StepParser:
    """SSE lines in, step events out; keeps the partial tool calls until the stream ends. No I/O."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self.done = False

    @property
    def complete(self) -> bool:
        """True once `[DONE]` or a finish reason arrived: a stream closing before that was cut off."""
        return self.done or self._finish_reason is not None

    def feed_line(self, line: str) -> list[StepEvent]:
        if self.done:
            return []
        if line == "":
            return self._dispatch(final=True)
        if line.startswith(":"):
            return []  # an SSE comment, e.g. DeepSeek's ": keep-alive"
        name, _, value = line.partition(":")
        if name != "data":
            return []  # `event:`, `id:`, `retry:` carry nothing for chat completions
        self._data.append(value[1:] if value.startswith(" ") else value)
        # Dispatch as soon as the data is complete, so servers that omit the blank line between events
        # (a common shortcut) still stream.
        return self._dispatch(final=False)

    def _dispatch(self, *, final: bool) -> list[StepEvent]:
        if not self._data:
            return []
        payload = "\n".join(self._data)
        if payload.strip() == "[DONE]":
            self._data.clear()
            self.done = True
            return []
        try:
            chunk = json.loads(payload)
        except ValueError:
            if not final:
                return []  # perhaps a multi-line event; the blank line decides
            raise ModelError(
                f"The model API sent a stream event that is not JSON: {payload[:200]!r}", kind="protocol"
            ) from None
        self._data.clear()
        return self._handle_chunk(chunk)

    def _handle_chunk(self, chunk: object) -> list[StepEvent]:
        if not isinstance(chunk, dict):
            raise ModelError(
                f"The model API sent a stream event that is not an object: {chunk!r:.200}", kind="protocol"
            )
        error = chunk.get("error")
        if error:
            detail = error.get("message") if isinstance(error, dict) else error
            raise ModelError(f"The model API reported an error mid-stream: {detail}", kind="server")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = _parse_usage(usage)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return []  # e.g. the final usage-only chunk
        choice = choices[0]
        events: list[StepEvent] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            # `reasoning_content` is DeepSeek's; `reasoning` is what several other servers call it.
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                events.append(ThoughtDelta(reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                events.append(TextDelta(content))
            fragments = delta.get("tool_calls")
            if isinstance(fragments, list):
                for fragment in fragments:
                    if isinstance(fragment, dict):
                        started = self._merge_fragment(fragment)
                        if started is not None:
                            events.append(started)
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str) and finish_reason:
            self._finish_reason = finish_reason
        return events

    def _merge_fragment(self, fragment: dict[str, Any]) -> ToolCallStarted | None:
        index = fragment.get("index")
        if not isinstance(index, int):
            # Some servers omit `index`: a fragment bringing a new id starts a call, others continue the last.
            new_id = fragment.get("id")
            known = {call.id for call in self._calls.values()}
            if not self._calls or (isinstance(new_id, str) and new_id and new_id not in known):
                index = max(self._calls, default=-1) + 1
            else:
                index = max(self._calls)
        call = self._calls.setdefault(index, _PartialCall())
        call_id = fragment.get("id")
        if call.id is None and isinstance(call_id, str) and call_id:
            call.id = call_id
        function = fragment.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if call.name is None and isinstance(name, str) and name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments.append(arguments)
        if not call.started and call.id is not None and call.name is not None:
            call.started = True
            return ToolCallStarted(id=call.id, name=call.name)
        return None

    def result(self) -> StepComplete:
        calls: list[ToolCallRequest] = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            if partial.name is None:
                raise ModelError(
                    f"The model API streamed tool call #{index} without a function name.", kind="protocol"
                )
            raw = "".join(partial.arguments)
            calls.append(
                ToolCallRequest(
                    # Ids must be unique within a session; a server that sends none gets a random one.
                    id=partial.id or f"call_{uuid.uuid4().hex[:24]}",
                    name=partial.name,
                    # An empty string is how several servers encode "no arguments".
                    arguments={} if not raw.strip() else parse_tool_arguments(raw),
                )
            )
        return StepComplete(tool_calls=tuple(calls), finish_reason=self._finish_reason, usage=self._usage)


def _parse_usage(usage: Mapping[str, Any]) -> Usage:
    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    input_tokens = count("prompt_tokens")
    output_tokens = count("completion_tokens")
    # The prompt tokens the provider's cache served: OpenAI's `prompt_tokens_details.cached_tokens`,
    # DeepSeek's `prompt_cache_hit_tokens`.
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if not isinstance(cached, int) or isinstance(cached, bool):
        cached = count("prompt_cache_hit_tokens")
    # The completion tokens spent reasoning: OpenAI's `completion_tokens_details.reasoning_tokens`.
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
    if not isinstance(reasoning, int) or isinstance(reasoning, bool):
        reasoning = 0
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=count("total_tokens") or input_tokens + output_tokens,
        cached_input_tokens=max(0, min(cached, input_tokens)),
        reasoning_tokens=max(0, min(reasoning, output_tokens)),
    )
