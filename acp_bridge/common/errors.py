"""Errors of the bridge core, each carrying the JSON-RPC code a face answers with.

The core (sessions, turns, permissions) raises `BridgeError`s; a face (ACP over stdio, LSP) turns one into
its own error object with `to_error_obj()`. Errors the *peer* caused (`RemoteError`: the client answered a
request of ours with an error) and a transport that went away (`ConnectionClosed`) are kept apart, so
no code mistakes a client's refusal for a bug of ours.

Must not: import any transport or the ACP SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
REQUEST_CANCELLED = -32800

# What an error answer may quote of a request: a client can send megabytes in any field (an id, a method
# name, a session id), and an error that echoes them back (twice, in the message and in `data`) would
# multiply a bad request into a worse response.
MAX_QUOTED_CHARS = 200
MAX_ERROR_MESSAGE_CHARS = 4096
MAX_ERROR_DATA_STRING_CHARS = 1024
_MAX_ERROR_DATA_ITEMS = 64
_MAX_ERROR_DATA_DEPTH = 6


def quoted(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """`repr(value)` for an error message, cut to `limit` characters (saying how long it was)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def bounded_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def bounded_data(value: Any, depth: int = 0) -> Any:
    """An error's `data` with every string, list and object cut to a small size (JSON values only)."""
    if isinstance(value, str):
        return bounded_text(value, MAX_ERROR_DATA_STRING_CHARS)
    if depth >= _MAX_ERROR_DATA_DEPTH and isinstance(value, (Mapping, list, tuple)):
        return "…"
    if isinstance(value, Mapping):
        items = list(value.items())[:_MAX_ERROR_DATA_ITEMS]
        return {bounded_text(str(k), MAX_QUOTED_CHARS): bounded_data(v, depth + 1) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [bounded_data(v, depth + 1) for v in value[:_MAX_ERROR_DATA_ITEMS]]
    return value


def error_obj(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error object with its message and data bounded (see `MAX_QUOTED_CHARS`)."""
    out: dict[str, Any] = {"code": code, "message": bounded_text(message, MAX_ERROR_MESSAGE_CHARS)}
    if data is not None:
        out["data"] = bounded_data(data)
    return out


class BridgeError(Exception):
    """A request the bridge refuses or cannot complete. `message` is shown to the user as is."""

    code: ClassVar[int] = INTERNAL_ERROR

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_error_obj(self) -> dict[str, Any]:
        return error_obj(self.code, self.message, self.data)


class InvalidRequest(BridgeError):
    """Not valid in the current state (e.g. a second prompt while one runs), or a malformed envelope."""

    code = INVALID_REQUEST


class MethodNotFound(BridgeError):
    code = METHOD_NOT_FOUND


class InvalidParams(BridgeError):
    code = INVALID_PARAMS


class ResourceNotFound(BridgeError):
    """An unknown session id (ACP's `-32002`)."""

    code = RESOURCE_NOT_FOUND


class AuthRequired(BridgeError):
    """The model endpoint refused the credentials; the message names what to set."""

    code = AUTH_REQUIRED


class InternalError(BridgeError):
    code = INTERNAL_ERROR


# The longest reason of a client's error we pass on (to a card and the model): a reason is a few lines, and
# a peer must not be able to fill the model's context through an error.
MAX_REMOTE_REASON_CHARS = 8000


class RemoteError(Exception):
    """The client answered one of our requests with a JSON-RPC error.

    `reason` is everything the client said about why: the message, and the details its `data` carries
    (`data.details`, the Python SDK's and Zed's convention for an exception; else `data.message`, or
    `data` itself when it is a string). `str()` is the reason with the code."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.reason = _reason(message, data)
        super().__init__(f"{self.reason} (code {code})")


def _reason(message: str, data: Any) -> str:
    detail: Any = data
    if isinstance(data, dict):
        detail = data.get("details", data.get("message"))
    reason = message.strip()
    if isinstance(detail, str) and detail.strip() and detail.strip() not in reason:
        reason = f"{reason}: {detail.strip()}" if reason else detail.strip()
    if len(reason) > MAX_REMOTE_REASON_CHARS:
        cut = len(reason) - MAX_REMOTE_REASON_CHARS
        reason = f"{reason[:MAX_REMOTE_REASON_CHARS]}… ({cut} more characters not shown)"
    return reason or "no reason given"


class ConnectionClosed(Exception):
    """The transport is gone: no request can be sent or answered any more."""
