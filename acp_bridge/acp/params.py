"""The ACP face's inbound edge: each request's `params` read into a typed value, or refused.

The core takes typed arguments and never sees the wire, so this is where ACP's field names live on the
way in. Each `read_*` function takes a request's raw `params` (whatever JSON the client sent) and returns
a frozen value, or raises `InvalidParams` (-32602) whose message names the field by its path in the
params ("additionalDirectories[1] must be an absolute path, got 'src'"), so the client can tell which one
it got wrong. Fields this agent does not read (unknown keys, `_meta` but a prompt's message id) are
ignored. What only the core can judge (an unknown session, a cwd that is not the stored session's, a mode
or model that does not exist, a prompt's content) stays the core's to refuse.

ACP's `mcpServers` is read here too (`mcp.config.parse_acp`), leniently: an entry that cannot be used is
reported in the session, not a reason to refuse it; and the proposed `systemPrompt`
(`session.client_prompt`).

Loaded with the agent (`connection`), after `initialize` was answered: plain frozen dataclasses and the
readers of the MCP config and the system prompt, no SDK and no pydantic.

Must not: look anything up (sessions, the store, the model list) or build an answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acp_bridge.acp.handshake import LIST_RULES_METHOD
from acp_bridge.common.errors import InvalidParams, quoted
from acp_bridge.history.session_index import clean_title
from acp_bridge.mcp.config import ServerList, parse_acp
from acp_bridge.session.client_prompt import ClientSystemPrompt, read_client_prompt
from acp_bridge.session.steering import client_message_id

# --- what each request carries -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionParams:
    """A request about one session and nothing more (`session/close`, `session/delete`, `session/cancel`,
    `_acpBridge/listRules`)."""

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionSetup:
    """What a session is set up with (`session/new`, and load, resume and fork in `ReopenParams`): the
    working directory, the other roots, the client's MCP servers, and its own system prompt (None
    without one)."""

    cwd: str
    additional_directories: tuple[str, ...]
    mcp_servers: ServerList
    system_prompt: ClientSystemPrompt | None


@dataclass(frozen=True, slots=True)
class ReopenParams:
    """`session/load`, `session/resume` and `session/fork`: the stored (or open) session, and what it is
    reopened with."""

    session_id: str
    setup: SessionSetup


@dataclass(frozen=True, slots=True)
class PromptParams:
    """`session/prompt`: the content blocks as sent (the core reads their content), and the client's id
    for the message when its `_meta.acpBridge.messageId` is a usable one (steering echoes it; anything
    else there is ignored, as `_meta` must be)."""

    session_id: str
    blocks: tuple[Mapping[str, Any], ...]
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class SetModeParams:
    session_id: str
    mode_id: str


@dataclass(frozen=True, slots=True)
class SetConfigOptionParams:
    """`session/set_config_option`: a `select` option's value id, or (`type: "boolean"`) a boolean
    option's value. Whether the option is of that type is the session's to judge."""

    session_id: str
    config_id: str
    value: str | bool


@dataclass(frozen=True, slots=True)
class ListSessionsParams:
    cwd: str | None
    cursor: str | None


@dataclass(frozen=True, slots=True)
class SetTitleParams:
    """`session/set_title` (and its older alias `_acpBridge/setSessionTitle`): the title already cleaned
    (one line, bounded)."""

    session_id: str
    title: str


@dataclass(frozen=True, slots=True)
class ForgetRulesParams:
    """`_acpBridge/forgetRules`: rule `number` (1-based, as `listRules` numbers them), or None for all."""

    session_id: str
    number: int | None


# --- reading -------------------------------------------------------------------------------------------


class _Fields:
    """A request's params object, read one field at a time; each reader names its field when it refuses."""

    __slots__ = ("_raw",)

    def __init__(self, raw: object) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise InvalidParams(f"params must be an object, got {quoted(raw)}")
        self._raw: Mapping[str, Any] = raw

    def get(self, name: str) -> object:
        return self._raw.get(name)

    def string(self, name: str) -> str:
        value = self._raw.get(name)
        if value is None:
            raise InvalidParams(f"{name} is required (a string)", data={"field": name})
        if not isinstance(value, str):
            raise InvalidParams(f"{name} must be a string, got {quoted(value)}", data={"field": name})
        return value

    def optional_string(self, name: str) -> str | None:
        return None if self._raw.get(name) is None else self.string(name)

    def absolute_path(self, name: str) -> str:
        value = self._raw.get(name)
        if value is None or value == "":
            raise InvalidParams(f"{name} is required: an absolute path", data={"field": name})
        return _absolute(value, name)

    def optional_absolute_path(self, name: str) -> str | None:
        return None if self._raw.get(name) is None else self.absolute_path(name)

    def absolute_paths(self, name: str) -> tuple[str, ...]:
        """An optional list of absolute paths (omitted or null: none)."""
        value = self._raw.get(name)
        if value is None:
            return ()
        if not isinstance(value, list):
            raise InvalidParams(
                f"{name} must be a list of absolute paths, got {quoted(value)}", data={"field": name}
            )
        return tuple(_absolute(item, f"{name}[{i}]") for i, item in enumerate(value))


def _absolute(value: object, where: str) -> str:
    if not isinstance(value, str) or not os.path.isabs(value):
        raise InvalidParams(f"{where} must be an absolute path, got {quoted(value)}", data={"field": where})
    return value


def read_session(raw: object) -> SessionParams:
    return SessionParams(_Fields(raw).string("sessionId"))


def read_new_session(raw: object) -> SessionSetup:
    return _setup(_Fields(raw))


def read_reopen(raw: object) -> ReopenParams:
    fields = _Fields(raw)
    return ReopenParams(fields.string("sessionId"), _setup(fields))


def _setup(fields: _Fields) -> SessionSetup:
    return SessionSetup(
        fields.absolute_path("cwd"),
        fields.absolute_paths("additionalDirectories"),
        parse_acp(fields.get("mcpServers")),
        read_client_prompt(fields.get("systemPrompt")),
    )


def read_prompt(raw: object) -> PromptParams:
    fields = _Fields(raw)
    session_id = fields.string("sessionId")
    blocks = fields.get("prompt")
    if not isinstance(blocks, list):
        raise InvalidParams(
            f"prompt must be a list of content blocks, got {quoted(blocks)}", data={"field": "prompt"}
        )
    for i, block in enumerate(blocks):
        if not isinstance(block, Mapping):
            where = f"prompt[{i}]"
            message = f"{where} must be a content block object, got {quoted(block)}"
            raise InvalidParams(message, data={"field": where})
    return PromptParams(session_id, tuple(blocks), client_message_id(fields.get("_meta")))


def read_set_mode(raw: object) -> SetModeParams:
    fields = _Fields(raw)
    return SetModeParams(fields.string("sessionId"), fields.string("modeId"))


def read_set_config_option(raw: object) -> SetConfigOptionParams:
    """ACP's two forms: `{configId, value: "<value id>"}` for a select option, `{configId, type:
    "boolean", value: true|false}` for a boolean one."""
    fields = _Fields(raw)
    session_id = fields.string("sessionId")
    config_id = fields.string("configId")
    value = fields.get("value")
    if fields.get("type") == "boolean":
        if not isinstance(value, bool):
            message = f'value must be true or false (type "boolean"), got {quoted(value)}'
            raise InvalidParams(message, data={"field": "value"})
        return SetConfigOptionParams(session_id, config_id, value)
    if isinstance(value, bool):
        message = f'value must be a string; a boolean value goes with type "boolean", got {quoted(value)}'
        raise InvalidParams(message, data={"field": "value"})
    return SetConfigOptionParams(session_id, config_id, fields.string("value"))


def read_list_sessions(raw: object) -> ListSessionsParams:
    fields = _Fields(raw)
    return ListSessionsParams(fields.optional_absolute_path("cwd"), fields.optional_string("cursor"))


def read_set_title(raw: object) -> SetTitleParams:
    fields = _Fields(raw)
    session_id = fields.string("sessionId")
    try:
        title = clean_title(fields.string("title"))
    except ValueError as exc:  # nothing left once cleaned; its message names the title
        raise InvalidParams(str(exc), data={"field": "title"}) from None
    return SetTitleParams(session_id, title)


def read_forget_rules(raw: object) -> ForgetRulesParams:
    fields = _Fields(raw)
    session_id = fields.string("sessionId")
    number = fields.get("number")
    if number is not None and (not isinstance(number, int) or isinstance(number, bool) or number < 1):
        raise InvalidParams(
            f"number must be a rule number ({LIST_RULES_METHOD}), got {quoted(number)}",
            data={"field": "number"},
        )
    return ForgetRulesParams(session_id, number)


@dataclass(frozen=True, slots=True)
class RewindParams:
    """`_acpBridge/rewind`: put the files back as they were before turn `turn` (1-based)."""

    session_id: str
    turn: int
    force: bool = False


@dataclass(frozen=True, slots=True)
class RevertFileParams:
    """`_acpBridge/revertFile`: put `path` back as it was before the call `tool_call_id`."""

    session_id: str
    tool_call_id: str
    path: str
    force: bool = False


@dataclass(frozen=True, slots=True)
class KillBackgroundParams:
    session_id: str
    bash_id: str


def _turn(value: object, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidParams(
            f"{field} must be a turn number (1 or more), got {quoted(value)}", data={"field": field}
        )
    return value


def _flag(fields: _Fields, name: str) -> bool:
    value = fields.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidParams(f"{name} must be a boolean, got {quoted(value)}", data={"field": name})
    return value


def read_rewind(raw: object) -> RewindParams:
    fields = _Fields(raw)
    return RewindParams(fields.string("sessionId"), _turn(fields.get("turn"), "turn"), _flag(fields, "force"))


def read_revert_file(raw: object) -> RevertFileParams:
    fields = _Fields(raw)
    return RevertFileParams(
        fields.string("sessionId"),
        fields.string("toolCallId"),
        fields.absolute_path("path"),
        _flag(fields, "force"),
    )


def read_kill_background(raw: object) -> KillBackgroundParams:
    fields = _Fields(raw)
    return KillBackgroundParams(fields.string("sessionId"), fields.string("bashId"))


def fork_turn(raw: object) -> int | None:
    """A `session/fork`'s `_meta.acpBridge.turn`: fork at the checkpoint before that turn (None: at the
    end). Raises InvalidParams for a value that is no turn number."""
    meta = raw.get("_meta") if isinstance(raw, Mapping) else None
    ours = meta.get("acpBridge") if isinstance(meta, Mapping) else None
    turn = ours.get("turn") if isinstance(ours, Mapping) else None
    return None if turn is None else _turn(turn, "_meta.acpBridge.turn")


def read_no_params(raw: object) -> None:
    """A request whose params carry nothing this agent reads (`logout`): an object, or none."""
    _Fields(raw)


def read_authenticate(raw: object) -> str:
    """`authenticate`'s `methodId`."""
    return _Fields(raw).string("methodId")


def read_cancel_request(raw: object) -> int | str:
    """`$/cancel_request`'s `requestId` (a JSON-RPC id: a string or an integer)."""
    request_id = _Fields(raw).get("requestId")
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return request_id
    raise InvalidParams(
        f"requestId must be a string or an integer, got {quoted(request_id)}", data={"field": "requestId"}
    )
