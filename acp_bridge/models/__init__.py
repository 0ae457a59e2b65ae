"""Model backends behind the `ModelBackend` seam, and `load_backend`, which turns `--model` into one.

Specs: `scripted` (the built-in demo script), `scripted:PATH` (a script file, docs/models.md) and
`openai:MODEL` (an OpenAI-compatible endpoint; DeepSeek by default). Every configuration problem is a
`ModelError(kind="config")` with a message a person can act on.

Must not: import a backend's module before it is asked for (`load_backend`, or one of its names read
from this package): the ACP face loads the core while the first `session/new` waits (a 420 ms budget from
spawn), and each backend brings its own weight: httpx (about 120 ms to import) for the openai one, the
script schema's pydantic models for the scripted one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acp_bridge.common.credentials import KeySource, api_key_from_environment
from acp_bridge.models.base import (
    AssistantMessage,
    ImageData,
    JsonObject,
    ListsModels,
    Message,
    ModelBackend,
    ModelError,
    ModelErrorKind,
    StepComplete,
    StepEvent,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    Waiting,
    WaitReason,
    estimate_tokens,
    parse_tool_arguments,
)

if TYPE_CHECKING:
    from acp_bridge.models.openai import API_KEY_ENV_VARS, DEFAULT_BASE_URL, OpenAIBackend
    from acp_bridge.models.scripted import (
        DEMO_SCRIPT,
        ScriptedBackend,
        demo_workspace_files,
        load_script,
        parse_script,
    )

__all__ = [
    "API_KEY_ENV_VARS",
    "DEFAULT_BASE_URL",
    "DEMO_SCRIPT",
    "AssistantMessage",
    "ImageData",
    "JsonObject",
    "ListsModels",
    "Message",
    "ModelBackend",
    "ModelError",
    "ModelErrorKind",
    "OpenAIBackend",
    "ScriptedBackend",
    "StepComplete",
    "StepEvent",
    "StepRequest",
    "TextDelta",
    "ThoughtDelta",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "WaitReason",
    "Waiting",
    "demo_workspace_files",
    "estimate_tokens",
    "load_backend",
    "load_script",
    "parse_script",
    "parse_tool_arguments",
]

log = logging.getLogger(__name__)

_SPEC_FORMS = "'scripted', 'scripted:PATH' or 'openai:MODEL'"
_OPENAI_NAMES = frozenset({"API_KEY_ENV_VARS", "DEFAULT_BASE_URL", "OpenAIBackend"})
_SCRIPTED_NAMES = frozenset(
    {"DEMO_SCRIPT", "ScriptedBackend", "demo_workspace_files", "load_script", "parse_script"}
)


def __getattr__(name: str) -> Any:
    # The lazy half of the exports: each backend's module loads when first asked for (see above).
    if name in _OPENAI_NAMES:
        from acp_bridge.models import openai

        return getattr(openai, name)
    if name in _SCRIPTED_NAMES:
        from acp_bridge.models import scripted

        return getattr(scripted, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_backend(
    spec: str, *, base_url: str | None = None, api_key: str | None = None, require_key: bool = True
) -> ModelBackend:
    """Build the backend a `--model` spec names.

    `scripted` → the demo script; `scripted:PATH` → that script file; `openai:MODEL` → an
    OpenAI-compatible endpoint at `base_url` (default DeepSeek's) with `api_key`, or else the first
    non-empty of ACP_BRIDGE_API_KEY, DEEPSEEK_API_KEY, OPENAI_API_KEY (from the environment, or from what
    `credentials.claim_secrets` took out of it at start-up), or else the key `acp-bridge login` stored for
    that endpoint, looked up again at each request (so a later login or logout counts). `base_url` is
    ignored (with a warning) for scripted models.

    Raises `ModelError(kind="config")` for an unknown spec, an empty model name or path, a script file that
    is missing or invalid (naming the JSON path at fault), or no API key anywhere (naming the env vars)
    when `require_key`; without it, a backend with no key yet is built, and its requests fail with `auth`
    until one is stored.
    """
    kind, sep, rest = spec.strip().partition(":")
    if kind == "scripted":
        from acp_bridge.models.scripted import ScriptedBackend

        if base_url is not None:
            log.warning("--base-url is ignored for the scripted model")
        if not sep:
            return ScriptedBackend.demo()
        if not rest.strip():
            raise ModelError(
                "'scripted:' needs a script path after the colon (or use 'scripted' for the built-in demo)",
                kind="config",
            )
        return ScriptedBackend.from_file(rest.strip())
    if kind == "openai":
        from acp_bridge.models.openai import API_KEY_ENV_VARS, DEFAULT_BASE_URL, OpenAIBackend

        model = rest.strip()
        if not model:
            raise ModelError("'openai' needs a model name, e.g. 'openai:deepseek-chat'", kind="config")
        url = base_url or DEFAULT_BASE_URL
        key, source = _find_api_key(api_key)
        if key is not None:
            # A key given or found in the environment is fixed for the process (the environment wins).
            return OpenAIBackend(model, api_key=key, base_url=url, api_key_source=source)
        keys = KeySource(url)
        if require_key and keys.current()[0] is None:
            raise ModelError(
                f"no API key for {spec.strip()!r}: set {' or '.join(API_KEY_ENV_VARS)} (checked in that "
                "order), or run `acp-bridge login`. A local server that needs no key accepts any value.",
                kind="config",
            )
        return OpenAIBackend(model, base_url=url, key_provider=keys)
    raise ModelError(f"unknown model {spec!r}: expected {_SPEC_FORMS}", kind="config")


def _find_api_key(explicit: str | None) -> tuple[str | None, str | None]:
    """The key and where it came from (an env var name, or None when passed in)."""
    if explicit:
        return explicit, None
    return api_key_from_environment()
