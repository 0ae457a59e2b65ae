"""JSON Schemas of the ACP v1 shapes the installed Python SDK (0.12.1) does not know yet, transcribed from
`@agentclientprotocol/sdk` 2.4.0 (`dist/v1/schema/types.gen.d.ts`, the types the VS Code extension
compiles against): the `notice`, `compaction_update` and `compaction_summary_chunk` session updates, and
`AuthMethod` (an `agent` method has no `type`, or `type: "agent"`; a `terminal` one has `type: "terminal"`),
and `ToolCall.name` (the tool's programmatic name; the SDK's pydantic models ignore a field they do not
know, so the harness checks it here: the bridge sends it on every `tool_call` and permission request).

The harness validates every such frame the bridge sends against these (`validate_update`), as it
validates every other frame against the SDK's pydantic models.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

_META = {"type": ["object", "null"]}
_TEXT_BLOCK = {
    "type": "object",
    "properties": {"type": {"const": "text"}, "text": {"type": "string"}, "_meta": _META},
    "required": ["type", "text"],
}
# Other content blocks (images, resources) carry a `type` too; the bridge sends text only.
_CONTENT_BLOCK = {"anyOf": [_TEXT_BLOCK, {"type": "object", "required": ["type"],
                                          "properties": {"type": {"enum": ["image", "audio", "resource_link",
                                                                           "resource"]}}}]}  # fmt: skip

NOTICE = {
    "type": "object",
    "properties": {
        "sessionUpdate": {"const": "notice"},
        "severity": {"type": "string"},  # "info" | "warning" | "error" | string
        "title": {"type": "string", "minLength": 1},
        "description": {"type": ["string", "null"]},
        "_meta": _META,
    },
    "required": ["sessionUpdate", "severity", "title"],
    "additionalProperties": False,
}

COMPACTION_UPDATE = {
    "type": "object",
    "properties": {
        "sessionUpdate": {"const": "compaction_update"},
        "compactionId": {"type": "string"},
        "status": {"type": "string"},  # "in_progress" | "completed" | "failed" | "cancelled" | string
        "summary": {"anyOf": [{"type": "array", "items": _CONTENT_BLOCK}, {"type": "null"}]},
        "error": {"type": ["string", "null"]},
        "_meta": _META,
    },
    "required": ["sessionUpdate", "compactionId", "status"],
    "additionalProperties": False,
}

COMPACTION_SUMMARY_CHUNK = {
    "type": "object",
    "properties": {
        "sessionUpdate": {"const": "compaction_summary_chunk"},
        "compactionId": {"type": "string"},
        "content": _CONTENT_BLOCK,
        "_meta": _META,
    },
    "required": ["sessionUpdate", "compactionId", "content"],
    "additionalProperties": False,
}

AUTH_METHOD = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "type": {"const": "terminal"},
                "id": {"type": "string"},
                "name": {"type": "string"},
                "description": {"type": ["string", "null"]},
                "args": {"type": "array", "items": {"type": "string"}},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "_meta": _META,
            },
            "required": ["type", "id", "name"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "type": {"const": "agent"},
                "id": {"type": "string"},
                "name": {"type": "string"},
                "description": {"type": ["string", "null"]},
                "_meta": _META,
            },
            "required": ["id", "name"],
            "additionalProperties": False,
        },
    ]
}

UNSTABLE_UPDATES: dict[str, dict[str, Any]] = {
    "notice": NOTICE,
    "compaction_update": COMPACTION_UPDATE,
    "compaction_summary_chunk": COMPACTION_SUMMARY_CHUNK,
}

_VALIDATORS = {kind: Draft202012Validator(schema) for kind, schema in UNSTABLE_UPDATES.items()}
_AUTH_METHOD = Draft202012Validator(AUTH_METHOD)


def validate_update(update: dict[str, Any]) -> list[str]:
    """Every violation of an unstable session update's schema (empty: valid)."""
    validator = _VALIDATORS[update["sessionUpdate"]]
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(update)]


def validate_auth_method(method: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _AUTH_METHOD.iter_errors(method)]


def tool_call_name_problems(frame: dict[str, Any]) -> list[str]:
    """`ToolCall.name` missing or not a non-empty string where the bridge must send it: on every
    `tool_call` update and on every permission request's `toolCall`."""
    params = frame.get("params")
    if not isinstance(params, dict):
        return []
    method = frame.get("method")
    if method == "session/update":
        card = params.get("update")
        if not isinstance(card, dict) or card.get("sessionUpdate") != "tool_call":
            return []
    elif method == "session/request_permission":
        card = params.get("toolCall")
    else:
        return []
    if not isinstance(card, dict):
        return []
    name = card.get("name")
    return (
        [] if isinstance(name, str) and name else [f"toolCall.name must be a non-empty string, got {name!r}"]
    )


def as_the_sdk_knows_it(card: dict[str, Any]) -> dict[str, Any]:
    """A tool call shape without the fields the installed SDK's models drop (`name`): what a dump of the
    SDK's parse of it must equal. The dropped fields are checked by `tool_call_name_problems`."""
    return {key: value for key, value in card.items() if key != "name"}
