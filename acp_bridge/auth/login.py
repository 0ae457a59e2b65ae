"""Logging in to the model endpoint: `acp-bridge login` / `logout`, and ACP's `authMethods`,
`authenticate` and `logout`.

`acp-bridge login [--base-url URL]` asks for the API key without echoing it (`getpass`; a key piped on
stdin is read as one line), checks it against the endpoint (`GET /models`: refused → nothing stored, exit
1; an endpoint without that route cannot check it and the key is stored anyway), and stores it for that
endpoint (`credentials.store_key`: the user's config directory, mode 0600). `acp-bridge logout` removes
it. `serve --login` / `serve --logout` do the same: an ACP client runs a `terminal` auth method by
appending its `args` to the agent's own command line, whose `--base-url` then names the endpoint.

On the ACP side (`auth_methods.py` says what `initialize` advertises): `authenticate` with the `agent`
method reads the stored key, or the environment's, and checks it against the endpoint; `logout` forgets
the stored key. A missing or refused key fails a prompt (or `authenticate`) with `auth_required`
(-32000), so the editor offers the advertised methods. The environment variables keep working and win
over a stored key. A backend without a key (the scripted model) has nothing to authenticate.

Must not: echo, log or print a key; store a key the endpoint refused; import httpx before a login runs.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import sys
from typing import Any, Final, Protocol, TextIO, runtime_checkable

from acp_bridge.auth.auth_methods import (
    AGENT_METHOD_ID,
    LEGACY_TERMINAL_METHOD_ID,
    TERMINAL_ARGS,
    TERMINAL_METHOD_ID,
)
from acp_bridge.common.credentials import api_key_from_environment, credentials_path, forget_key, store_key
from acp_bridge.common.errors import AuthRequired, InvalidParams, quoted
from acp_bridge.common.settings import DEFAULT_BASE_URL
from acp_bridge.models import ModelBackend, ModelError

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S: Final = 15.0


@runtime_checkable
class KeyedBackend(Protocol):
    """A backend that needs an API key for an endpoint (`models.openai.OpenAIBackend`)."""

    @property
    def base_url(self) -> str: ...

    async def list_models(self) -> list[Any]: ...


# --- ACP -----------------------------------------------------------------------------------------------


def keyed_endpoint(backend: ModelBackend) -> str | None:
    """The endpoint whose key `backend` needs (what `auth_methods` advertises for), or None."""
    return backend.base_url if isinstance(backend, KeyedBackend) else None


async def authenticate(backend: ModelBackend, method_id: object) -> None:
    """ACP `authenticate`. Raises InvalidParams (an unknown method, or the terminal one, which the client
    runs itself) or AuthRequired (no key, or the endpoint refused it). The older terminal login's method
    is checked as the stored key is: a client calls it once its terminal ran the login."""
    if not isinstance(backend, KeyedBackend):
        return  # nothing to authenticate
    if method_id == TERMINAL_METHOD_ID:
        raise InvalidParams(
            f"{TERMINAL_METHOD_ID!r} is a terminal method: run the agent with "
            f"{' '.join(TERMINAL_ARGS)} instead"
        )
    if method_id not in (AGENT_METHOD_ID, LEGACY_TERMINAL_METHOD_ID):
        raise InvalidParams(f"unknown auth method {quoted(method_id)}; this agent has: {AGENT_METHOD_ID}")
    try:
        await backend.list_models()
    except ModelError as exc:
        if exc.kind == "auth":
            raise AuthRequired(exc.message, data={"kind": exc.kind, "status": exc.status}) from exc
        # Listing is only a check: an endpoint without /models, or down right now, says nothing of the key.
        log.warning("the key could not be checked: %s", exc.message)


def logout(backend: ModelBackend) -> None:
    """ACP `logout`: forget the stored key of the backend's endpoint (an environment variable stays)."""
    if isinstance(backend, KeyedBackend):
        forget_key(backend.base_url)


# --- the command line ----------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base-url", default=None, help="the OpenAI-compatible endpoint the key is for (default: DeepSeek's)"
    )


def add_login_arguments(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser)
    parser.add_argument(
        "--no-check", action="store_true", help="store the key without checking it against the endpoint"
    )


def _endpoint(args: argparse.Namespace) -> str:
    return str(getattr(args, "base_url", None) or DEFAULT_BASE_URL).rstrip("/")


def read_key(base_url: str, stdin: TextIO | None = None, out: TextIO | None = None) -> str:
    """The key, typed without echo on a terminal, or one line of piped input."""
    stdin, out = stdin or sys.stdin, out or sys.stdout
    if stdin.isatty():
        return getpass.getpass(f"API key for {base_url} (input hidden): ", stream=out).strip()
    return stdin.readline().strip()


def check_key(base_url: str, key: str) -> tuple[bool, str]:
    """(accepted, what to tell the user) for `key` at the endpoint: its `GET /models` answer."""
    import httpx

    try:
        response = httpx.get(
            f"{base_url}/models",
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
            timeout=CHECK_TIMEOUT_S,
        )
    except httpx.HTTPError as exc:
        return False, f"could not reach {base_url} to check the key ({type(exc).__name__}); nothing stored"
    if response.status_code == 200:
        return True, "the endpoint accepted the key"
    if response.status_code in (401, 403):
        return False, f"the endpoint refused the key (HTTP {response.status_code}); nothing stored"
    if response.status_code == 404:
        return True, "the endpoint has no model list to check the key against; stored unchecked"
    return False, f"the endpoint answered HTTP {response.status_code} to the check; nothing stored"


def run_login(args: argparse.Namespace) -> int:
    base_url = _endpoint(args)
    key = read_key(base_url)
    if not key:
        print("acp-bridge login: no key entered; nothing stored", file=sys.stderr)
        return 2
    if not getattr(args, "no_check", False):
        accepted, verdict = check_key(base_url, key)
        print(f"acp-bridge login: {verdict}", file=sys.stderr)
        if not accepted:
            return 1
    try:
        path = store_key(base_url, key)
    except OSError as exc:
        where = credentials_path()
        print(f"acp-bridge login: could not store the key in {where}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"Logged in to {base_url}: the key is stored in {path} (readable by you only).")
    _mention_environment()
    return 0


def run_logout(args: argparse.Namespace) -> int:
    base_url = _endpoint(args)
    try:
        removed = forget_key(base_url)
    except OSError as exc:
        print(f"acp-bridge logout: could not update {credentials_path()}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"Logged out of {base_url}." if removed else f"No key was stored for {base_url}.")
    _mention_environment()
    return 0


def _mention_environment() -> None:
    _, variable = api_key_from_environment()
    if variable is not None:
        print(f"Note: {variable} is set in this environment; where it is set, it wins over the stored key.")
