"""The chat-completions request body: neutral messages and tool specs in OpenAI's format.

The session's model choice (`StepRequest.model`) replaces the configured model, and its reasoning effort
goes out as OpenAI's `reasoning_effort`. Images go as data URLs (`images.data_url`); a tool result's images
follow its step's tool messages as one user message, since a tool message holds text only.

Must not: do I/O, or change what the model emitted when sending it back (a tool call's raw arguments go
back verbatim).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, assert_never

from acp_bridge.models.base import (
    AssistantMessage,
    ImageData,
    StepRequest,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from acp_bridge.models.images import data_url


def encode_body(model: str, request: StepRequest) -> bytes:
    body: dict[str, Any] = {
        "model": request.model or model,
        "messages": _wire_messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.reasoning_effort is not None:
        # OpenAI's chat-completions parameter for reasoning models; sent only when the session chose one.
        body["reasoning_effort"] = request.reasoning_effort
    if request.tools:
        # Omitted when empty: several compatible servers reject `"tools": []`.
        body["tools"] = [_wire_tool(tool) for tool in request.tools]
    return _dumps(body).encode("utf-8")


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _wire_messages(request: StepRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system_prompt:
        out.append({"role": "system", "content": request.system_prompt})
    # Images tool results carried: a tool message holds text only, so they follow the step's tool
    # messages as one user message (nothing may come between the tool messages of one step).
    pending: list[ToolResultMessage] = []
    for message in request.messages:
        if pending and not isinstance(message, ToolResultMessage):
            out.append(_tool_images(pending))
            pending = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            out.append(_wire_assistant(message))
        elif isinstance(message, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": message.call_id, "content": message.content})
            if message.images:
                pending.append(message)
        else:
            assert_never(message)
    if pending:
        out.append(_tool_images(pending))
    return out


def _image_part(image: ImageData) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if not message.images:
        return message.text
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    return parts + [_image_part(image) for image in message.images]


def _tool_images(results: list[ToolResultMessage]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for result in results:
        count = len(result.images)
        parts.append(
            {"type": "text", "text": f"The `{result.name}` call {result.call_id} returned "
             f"{'this image' if count == 1 else f'these {count} images'}:"}
        )  # fmt: skip
        parts += [_image_part(image) for image in result.images]
    return {"role": "user", "content": parts}


def _wire_assistant(message: AssistantMessage) -> dict[str, Any]:
    if not message.tool_calls:
        # Reasoning of a turn without tool calls is not sent back: DeepSeek ignores it (older versions
        # answered 400).
        return {"role": "assistant", "content": message.text}
    wire: dict[str, Any] = {
        "role": "assistant",
        "content": message.text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    # A raw string goes back verbatim: the model should see what it actually emitted.
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else _dumps(call.arguments),
                },
            }
            for call in message.tool_calls
        ],
    }
    if message.reasoning is not None:
        # DeepSeek's thinking mode requires the reasoning of tool-calling turns back (400 otherwise).
        wire["reasoning_content"] = message.reasoning
    return wire


def _jsonable(value: object) -> object:
    # Arguments and schemas are `Mapping`s (possibly read-only views), which json cannot encode alone.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=_jsonable)
