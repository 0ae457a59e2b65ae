"""The seam between the bridge core and a face (ACP over stdio, LSP): what the core may ask of a client.

The core (sessions, turn loop, permissions, client file access) talks to the editor only through a
`ClientChannel`. Updates are exactly the ACP `session/update` `update` payloads that `acp_bridge.mapping`
builds (typed by `mapping.wire`); the ACP face sends them as `session/update`, the LSP face forwards them
as `acpBridge/sessionUpdate` (and may derive progress or messages from them, through `mapping.fold`).

Ordering contract: `send_update` is synchronous and frames leave in the order of the calls, across every
session of the connection, so no card update can overtake an earlier one. `drain()` is the backpressure
point: the core awaits it between bursts so a slow client bounds the memory we hold.

Must not: import any transport, the ACP SDK or pygls. This module is types only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

# Parsed at `initialize` by the face before the core is loaded, so in a module of its own (stdlib only).
from acp_bridge.common.client_capabilities import ClientCapabilities as ClientCapabilities

# The wire shapes are the mapping's (one definition, `mapping/wire.py`); the core sees them from here.
from acp_bridge.mapping.wire import ALLOW_SERVER_OPTION as ALLOW_SERVER_OPTION
from acp_bridge.mapping.wire import PermissionKind as PermissionKind
from acp_bridge.mapping.wire import PermissionOption as PermissionOption
from acp_bridge.mapping.wire import ToolCallUpdate as ToolCallUpdate
from acp_bridge.mapping.wire import Update as Update


@dataclass(frozen=True, slots=True)
class PermissionOutcome:
    """A client's answer to a permission request: an option it picked, or `cancelled`."""

    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None
    # What the user typed with a rejection, when the client sends it (`_meta.feedback`, on the response or
    # its outcome): ACP has no reason field yet, and "why not" is what the model most needs to hear.
    feedback: str | None = None

    @staticmethod
    def from_acp(raw: object) -> PermissionOutcome:
        """Parse an ACP `RequestPermissionResponse` (`{"outcome": {...}}`). Raises ValueError if malformed."""
        if not isinstance(raw, Mapping) or not isinstance(raw.get("outcome"), Mapping):
            raise ValueError(f"not a permission response: {raw!r}")
        outcome = raw["outcome"]
        kind = outcome.get("outcome")
        if kind == "cancelled":
            return PermissionOutcome("cancelled")
        option = outcome.get("optionId")
        if kind == "selected" and isinstance(option, str):
            return PermissionOutcome("selected", option, _feedback(outcome) or _feedback(raw))
        raise ValueError(f"not a permission outcome: {dict(outcome)!r}")


def _feedback(container: Mapping[str, Any]) -> str | None:
    meta = container.get("_meta")
    text = meta.get("feedback") if isinstance(meta, Mapping) else None
    return text.strip() if isinstance(text, str) and text.strip() else None


class ClientChannel(Protocol):
    """One connected client, as the core sees it. Implemented by each face."""

    @property
    def capabilities(self) -> ClientCapabilities: ...

    def send_update(self, session_id: str, update: Update) -> None:
        """Queue one session update. Never blocks and never raises (a closed client drops it)."""
        ...

    async def drain(self) -> None:
        """Wait until queued output is down to the transport's low-water mark (returns at once if closed)."""
        ...

    def backlog(self) -> int:
        """Bytes queued for the client but not yet written (0 when unknown)."""
        ...

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionOutcome:
        """Ask the user about one call. `tool_call` is its card (mapping.permission_tool_call), `options`
        the four answers (mapping.permission_options). Raises RemoteError / ConnectionClosed / ValueError
        (a malformed answer); cancelling the awaiting task withdraws the request."""
        ...

    async def read_text_file(self, session_id: str, path: str) -> str:
        """The editor's view of `path` (unsaved buffer included). Only when `capabilities.fs_read`.
        Raises RemoteError (e.g. not found) or ConnectionClosed."""
        ...

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        """Write through the editor (reviewable there). Only when `capabilities.fs_write`.
        Raises RemoteError or ConnectionClosed."""
        ...


class SessionPlace(Protocol):
    """What most parts of a session know of it: its id, where it works (the cwd and the workspace roots,
    absolute) and the editor it talks to. A part's own host Protocol extends this with what else it needs."""

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def roots(self) -> tuple[str, ...]: ...

    @property
    def channel(self) -> ClientChannel: ...


@runtime_checkable
class ElicitingChannel(Protocol):
    """A channel that can send ACP `elicitation/create` (the ACP face): the `ask_user` tool's form
    (`client.questions`) and an MCP server's questions (`mcp.servers`) both go through it, and only when
    the client advertised `elicitation.form` (or `.url`, for a server's URL elicitation)."""

    async def create_elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        """Send `elicitation/create` with `params` (the session id among them) and return the client's
        answer: an object whose `action` is `accept`, `decline` or `cancel`. Raises ValueError for any
        other answer, and as `request_permission`."""
        ...


@runtime_checkable
class QuestionChannel(Protocol):
    """A channel with its own way to ask a multiple-choice question (the LSP face:
    `window/showMessageRequest`). `ask_question` returns the chosen option, or None when dismissed."""

    async def ask_question(self, session_id: str, question: str, options: list[str]) -> str | None: ...
