"""What the agent advertises about logging in, in ACP `initialize`: `authMethods` and
`agentCapabilities.auth` (ACP v1 `AuthMethod`, `@agentclientprotocol/sdk` 2.4.0).

A model that needs an API key for an endpoint (an OpenAI-compatible backend) advertises an `agent` method
(`stored-key`: `authenticate` reads the stored key, or the environment's, and checks it against the
endpoint) and, when the client advertised `auth.terminal`, a `terminal` method (`login`, args
`["--login"]`), which the client runs itself and never passes to `authenticate`; plus
`agentCapabilities.auth.logout`. A model without a key (the scripted one) advertises nothing. Both depend
only on that endpoint (a base URL, or None) and the client's capabilities, so the ACP face answers
`initialize` before the model is loaded (`handshake.py`); `login.py` implements the methods.

Must not: import anything but the standard library and `client_capabilities`.
"""

from __future__ import annotations

from typing import Any, Final

from acp_bridge.common.client_capabilities import ClientCapabilities

AGENT_METHOD_ID: Final = "stored-key"
TERMINAL_METHOD_ID: Final = "login"
TERMINAL_ARGS: Final = ("--login",)


def auth_methods(endpoint: str | None, caps: ClientCapabilities) -> list[dict[str, Any]]:
    """`initialize`'s `authMethods` for a model keyed for `endpoint`: none without one."""
    if endpoint is None:
        return []
    methods: list[dict[str, Any]] = [
        {
            "id": AGENT_METHOD_ID,
            "name": "Stored API key",
            "description": f"Use the API key stored with `acp-bridge login` for {endpoint} "
            "(an API key variable in the agent's environment wins).",
        }
    ]
    if caps.auth_terminal:
        methods.append(
            {
                "type": "terminal",
                "id": TERMINAL_METHOD_ID,
                "name": "Log in with an API key",
                "description": f"Enter the API key for {endpoint} in a terminal; it is checked, then "
                "stored in your user config directory (readable by you only).",
                "args": list(TERMINAL_ARGS),
            }
        )
    return methods


def auth_capabilities(endpoint: str | None) -> dict[str, Any]:
    """`agentCapabilities.auth`: `logout` wherever there is a key to forget."""
    return {"logout": {}} if endpoint is not None else {}
