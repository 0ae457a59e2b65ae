"""What the agent advertises about logging in, in ACP `initialize`: `authMethods` and
`agentCapabilities.auth` (ACP v1 `AuthMethod`, `@agentclientprotocol/sdk` 2.4.0).

A model that needs an API key for an endpoint (an OpenAI-compatible backend) advertises an `agent` method
(`stored-key`: `authenticate` reads the stored key, or the environment's, and checks it against the
endpoint) and, when the client advertised `auth.terminal`, a `terminal` method (`login`, args
`["--login"]`), which the client runs itself and never passes to `authenticate`; plus
`agentCapabilities.auth.logout`. A client that signals terminal login the older way
(`clientCapabilities._meta["terminal-auth"]`, which Zed and the ACP Registry's check send) and not with
`auth.terminal` gets the same login as an `agent` method (`terminal-login`) whose
`_meta["terminal-auth"]` holds the whole command to run (`{label, command, args, env}`): this process's
Python running the same command line plus `--login`. `authenticate` with it checks the key the login
stored, as `stored-key` does. A model without a key (the scripted one) advertises nothing. Both depend
only on that endpoint (a base URL, or None) and the client's capabilities, so the ACP face answers
`initialize` before the model is loaded (`handshake.py`); `login.py` implements the methods.

Must not: import anything but the standard library and `client_capabilities`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Final

from acp_bridge.common.client_capabilities import ClientCapabilities

AGENT_METHOD_ID: Final = "stored-key"
TERMINAL_METHOD_ID: Final = "login"
LEGACY_TERMINAL_METHOD_ID: Final = "terminal-login"
TERMINAL_ARGS: Final = ("--login",)


def own_command() -> tuple[str, ...]:
    """This process's command line, runnable from anywhere: its Python (an absolute path, so the same
    environment, whether uvx, pipx or a venv started it) running the package with the same arguments."""
    return (sys.executable, "-m", "acp_bridge", *sys.argv[1:])


def auth_methods(
    endpoint: str | None, caps: ClientCapabilities, command: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """`initialize`'s `authMethods` for a model keyed for `endpoint`: none without one. `command`: how to
    run this agent again, for the older terminal-login signal (default: `own_command()`)."""
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
    elif caps.auth_terminal_meta:
        program, *args = command if command is not None else own_command()
        methods.append(
            {
                "id": LEGACY_TERMINAL_METHOD_ID,
                "name": "Log in with an API key",
                "description": f"Enter the API key for {endpoint} in a terminal; it is checked, then "
                "stored in your user config directory (readable by you only).",
                "_meta": {
                    "terminal-auth": {
                        "label": "acp-bridge login",
                        "command": program,
                        "args": [*args, *TERMINAL_ARGS],
                        "env": {},
                    }
                },
            }
        )
    return methods


def auth_capabilities(endpoint: str | None) -> dict[str, Any]:
    """`agentCapabilities.auth`: `logout` wherever there is a key to forget."""
    return {"logout": {}} if endpoint is not None else {}
