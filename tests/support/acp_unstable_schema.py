"""JSON Schemas of the ACP v1 shapes the installed Python SDK (0.12.1) does not know yet, transcribed from
`@agentclientprotocol/sdk` 2.4.0 (`dist/v1/schema/types.gen.d.ts`, the types the VS Code extension
compiles against, and `dist/v1/unstable/schema/types.gen.d.ts` for the unstable methods): the `notice`,
`compaction_update` and `compaction_summary_chunk` session updates, and `AuthMethod` (an `agent` method
has no `type`, or `type: "agent"`; a `terminal` one has `type: "terminal"`), and `ToolCall.name` (the
tool's programmatic name; the SDK's pydantic models ignore a field they do not know, so the harness checks
it here: the bridge sends it on every `tool_call` and permission request). The `subagent_update` session
update is transcribed from the subagents RFD (docs/rfds/subagents.mdx of the ACP repository: upsert
semantics, only `subagentSessionId` required; `state` one of five), which no SDK release carries yet.

Answers too (`answer_problems`): `session/set_title`'s (`SetSessionTitleResponse`, unknown to the SDK),
`sessionCapabilities.title` in `initialize`'s (`SessionTitleCapabilities`, a field the SDK drops), and a
`session/prompt` answer's `usage` (`Usage`: the SDK has it, but its model turns a malformed one into None
without a word, so it is checked strictly here).

The harness validates every such frame the bridge sends against these (`validate_update`,
`answer_problems`), as it validates every other frame against the SDK's pydantic models.
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

SUBAGENT_UPDATE = {
    "type": "object",
    "properties": {
        "sessionUpdate": {"const": "subagent_update"},
        "subagentSessionId": {"type": "string", "minLength": 1},
        "name": {"type": ["string", "null"]},
        "task": {"type": ["string", "null"]},
        "capabilities": {
            "type": ["object", "null"],
            "properties": {"cancel": {"type": "boolean"}, "_meta": _META},
            "additionalProperties": False,
        },
        "state": {"enum": ["running", "completed", "failed", "cancelled", "disconnected", None]},
        "_meta": _META,
    },
    "required": ["sessionUpdate", "subagentSessionId"],
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

_COUNT = {"type": "integer", "minimum": 0}
_OPTIONAL_COUNT = {"anyOf": [_COUNT, {"type": "null"}]}

# `null` too (`usage?: Usage | null`); the object keywords apply to an object only, so a bad field is named.
USAGE = {
    "type": ["object", "null"],
    "properties": {
        "totalTokens": _COUNT,
        "inputTokens": _COUNT,
        "outputTokens": _COUNT,
        "thoughtTokens": _OPTIONAL_COUNT,
        "cachedReadTokens": _OPTIONAL_COUNT,
        "cachedWriteTokens": _OPTIONAL_COUNT,
        "_meta": _META,
    },
    "required": ["totalTokens", "inputTokens", "outputTokens"],
    "additionalProperties": False,
}

PROMPT_RESPONSE = {
    "type": "object",
    "properties": {
        "stopReason": {"type": "string"},
        "usage": USAGE,
        "_meta": _META,
    },
    "required": ["stopReason"],
    "additionalProperties": False,
}

SET_SESSION_TITLE_RESPONSE = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "_meta": _META},
    "required": ["title"],
    "additionalProperties": False,
}

# `initialize`'s answer, as far as the SDK's model does not check it: `sessionCapabilities.title`.
INITIALIZE_RESPONSE = {
    "type": "object",
    "properties": {
        "agentCapabilities": {
            "type": "object",
            "properties": {
                "sessionCapabilities": {
                    "type": "object",
                    "properties": {"title": {"type": ["object", "null"], "properties": {"_meta": _META}}},
                }
            },
        }
    },
}

_ANSWERS = {
    "session/prompt": Draft202012Validator(PROMPT_RESPONSE),
    "session/set_title": Draft202012Validator(SET_SESSION_TITLE_RESPONSE),
    "initialize": Draft202012Validator(INITIALIZE_RESPONSE),
}

UNSTABLE_UPDATES: dict[str, dict[str, Any]] = {
    "notice": NOTICE,
    "compaction_update": COMPACTION_UPDATE,
    "compaction_summary_chunk": COMPACTION_SUMMARY_CHUNK,
    "subagent_update": SUBAGENT_UPDATE,
}

_VALIDATORS = {kind: Draft202012Validator(schema) for kind, schema in UNSTABLE_UPDATES.items()}
_AUTH_METHOD = Draft202012Validator(AUTH_METHOD)


def validate_update(update: dict[str, Any]) -> list[str]:
    """Every violation of an unstable session update's schema (empty: valid)."""
    validator = _VALIDATORS[update["sessionUpdate"]]
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(update)]


def answer_problems(method: str, result: Any) -> list[str]:
    """Every violation of the unstable parts of `method`'s answer (empty: valid, or nothing to check)."""
    validator = _ANSWERS.get(method)
    if validator is None:
        return []
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(result)]


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
