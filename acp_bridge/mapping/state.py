"""Session-state updates: the current permission mode (`mode_update`, and `session_modes`, the modes a
session's set-up answer offers), the context window's usage
(`usage_update`), the slash commands a session understands (`available_commands`) and what
`session/list` shows of the session (`session_info_update`: title, last activity).

Must not: decide anything; the session passes the mode, the token counts and the commands it has.
"""

from __future__ import annotations

from collections.abc import Iterable

from .wire import (
    AvailableCommand,
    AvailableCommandsUpdate,
    Cost,
    CurrentModeUpdate,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    UsageUpdate,
)


def mode_update(mode_id: str) -> CurrentModeUpdate:
    """ACP's `current_mode_update`: the session's permission mode is now `mode_id`."""
    return {"sessionUpdate": "current_mode_update", "currentModeId": mode_id}


def session_modes(current: str, modes: Iterable[tuple[str, str, str | None]]) -> SessionModeState:
    """ACP's `SessionModeState`, the `modes` of an answer that sets a session up (session/new, load,
    resume, fork): the session is in mode `current`, of `modes` as (id, name, description or None)."""
    available: list[SessionMode] = []
    for mode_id, name, description in modes:
        mode: SessionMode = {"id": mode_id, "name": name}
        if description is not None:
            mode["description"] = description
        available.append(mode)
    return {"currentModeId": current, "availableModes": available}


def usage_update(used: int, size: int, cost: Cost | None = None) -> UsageUpdate:
    """ACP's `usage_update`: `used` tokens are in the context, of a `size`-token window; `cost` (from
    `controls.cost`) is the session's cumulative cost, when its prices are known."""
    update: UsageUpdate = {"sessionUpdate": "usage_update", "used": used, "size": size}
    if cost is not None:
        update["cost"] = cost
    return update


def available_commands(commands: Iterable[tuple[str, str, str | None]]) -> AvailableCommandsUpdate:
    """ACP's `available_commands_update` from (name, description, input hint or None) triples."""
    listed: list[AvailableCommand] = []
    for name, description, hint in commands:
        command: AvailableCommand = {"name": name, "description": description}
        if hint is not None:
            command["input"] = {"hint": hint}
        listed.append(command)
    return {"sessionUpdate": "available_commands_update", "availableCommands": listed}


def session_info_update(*, title: str | None = None, updated_at: str | None = None) -> SessionInfoUpdate:
    """ACP's `session_info_update` with the fields that changed (an omitted field is left as it was):
    the session's `title` and its last activity `updated_at` (ISO 8601)."""
    update: SessionInfoUpdate = {"sessionUpdate": "session_info_update"}
    if title is not None:
        update["title"] = title
    if updated_at is not None:
        update["updatedAt"] = updated_at
    return update
