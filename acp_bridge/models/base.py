"""The seam between the agent loop and a model: neutral messages in, a stream of step events out.

A backend knows nothing about ACP, sessions on the wire or tools' bodies. It sees the conversation as
neutral messages plus the model-facing tool schemas, and yields one *step* (one model response) as
events: thought and text deltas as they arrive, then exactly one `StepComplete` carrying the complete
tool calls; a `Waiting` before each wait between attempts, so the user is told why nothing comes. Errors
are `ModelError`s with a `kind` the loop can act on; nothing else escapes.

Invariant: a backend never executes tools and never writes to stdout.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

JsonObject = Mapping[str, Any]


# --- conversation messages (what the loop sends) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImageData:
    """An image the model may be shown: base64 `data` of a `mime_type` (image/png, image/jpeg, ...).
    `source` says where it came from, for the model's text and for people (a prompt, a tool's name)."""

    mime_type: str
    data: str
    source: str = "prompt"


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    # Attached to the prompt (ACP `image` blocks); only a vision model is given them.
    images: tuple[ImageData, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """One call the model asked for. `arguments` is the parsed object, or the raw string when the model
    emitted something that is not a JSON object (the registry then fails the call with INVALID_ARGS)."""

    id: str
    name: str
    arguments: JsonObject | str


def _reject_non_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_tool_arguments(raw: str) -> JsonObject | str:
    """A call's arguments as a model emitted them (a string) → what `ToolCallRequest.arguments` holds.

    Returns the parsed object when `raw` is a JSON object; otherwise `raw` unchanged (invalid JSON, an
    array, a scalar, or NaN/Infinity, which JSON does not have), so the registry fails that call with
    INVALID_ARGS. Both backends share this so a script and a live model mean the same thing.
    """
    try:
        value = json.loads(raw, parse_constant=_reject_non_json_constant)
    except (ValueError, RecursionError):
        return raw
    return value if isinstance(value, dict) else raw


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    text: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    reasoning: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    call_id: str
    name: str
    content: str
    is_error: bool = False
    # Images the result carries (a `read` of a PNG); `content` names them in text too.
    images: tuple[ImageData, ...] = ()


Message = UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """The model-facing schema of one tool (exactly what `ToolRegistry.schemas()` yields)."""

    name: str
    description: str
    parameters: JsonObject


@dataclass(frozen=True, slots=True)
class StepRequest:
    """Everything a backend may look at to produce the next step.

    `turn_index` counts the session's prompts from 0; `step_index` counts the steps of this turn from 0.
    The scripted backend replays by these indices; a real model looks only at `messages` and `tools`.

    `model` and `reasoning_effort` are the session's choices (its model picker), None for the backend's
    own model and the model's default effort. `purpose` is `summary` for a compaction's request (the
    conversation to summarize, no tools); `summary_index` counts the session's compactions from 0, for
    the scripted backend to pick its scripted summary. `subagent` is the task's description when a
    subagent (the `task` tool's child loop) makes the request, None for the session's own agent; the
    scripted backend replays a child's script by it (a real model sees only the child's own messages).
    """

    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    turn_index: int
    step_index: int
    system_prompt: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    purpose: Literal["turn", "summary"] = "turn"
    summary_index: int = 0
    subagent: str | None = None


# --- step events (what a backend yields) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThoughtDelta:
    text: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """Optional early notice that the model began emitting a call (its arguments still streaming)."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Usage:
    """What one response cost in tokens, as the backend reported it. `cached_input_tokens` is the part of
    `input_tokens` served from the provider's prompt cache (billed at a lower price where one is known);
    `reasoning_tokens` the part of `output_tokens` the model spent reasoning."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True, slots=True)
class StepComplete:
    """The last event of every successful step. No tool calls means the turn ends."""

    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    # True when the scripted model has no turn left for this prompt (the loop says so to the user).
    script_exhausted: bool = False


# Why a step waits: the backend waits before trying a request again (`rate_limited`: HTTP 429;
# `server_error`: 5xx/408/409; `unreachable`: no connection or no answer), or the model has sent nothing
# for a while (`silent`: the turn notices it; a backend never yields it).
WaitReason = Literal["rate_limited", "server_error", "unreachable", "silent"]


@dataclass(frozen=True, slots=True)
class Waiting:
    """The step is waiting, and the user should be told. A backend yields one right before it sleeps
    `seconds` until retry `attempt` (from 1) of at most `of`; the turn makes one (`silent`, `seconds` the
    silence so far) when the model has sent nothing for a while. Neither is output of the model: a
    request may still be retried after one."""

    reason: WaitReason
    seconds: float
    attempt: int = 0
    of: int = 0
    # The status that made the backend wait, for the words (`server_error`).
    status: int | None = None

    def describe(self) -> str:
        """The wait in words: "rate limited, retrying in 2 s (attempt 1 of 3)", "waiting for the model for
        40 s"."""
        seconds = _whole_seconds(self.seconds)
        if self.reason == "silent":
            return f"waiting for the model for {seconds} s"
        why = {
            "rate_limited": "rate limited",
            "server_error": f"the model API failed (HTTP {self.status})"
            if self.status
            else "the model API failed",
            "unreachable": "the model API did not answer",
        }[self.reason]
        return f"{why}, retrying in {seconds} s (attempt {self.attempt} of {self.of})"


def _whole_seconds(seconds: float) -> int:
    """Seconds as a person reads them: rounded, and never 0 for a real wait."""
    return max(1, round(seconds)) if seconds > 0 else 0


StepEvent = ThoughtDelta | TextDelta | ToolCallStarted | StepComplete | Waiting


def estimate_tokens(text: str) -> int:
    """A rough token count of `text`: one token per four characters, the rule of thumb OpenAI's tokenizer
    guide gives for English. For choosing what to keep when compacting and for scripted usage only; never
    reported to a client as the backend's figure."""
    return math.ceil(len(text) / 4)


ModelErrorKind = Literal["auth", "rate_limit", "server", "connection", "protocol", "config", "other"]


@dataclass(slots=True)
class ModelError(Exception):
    """A model call that failed for good (after any retries the backend does itself)."""

    message: str
    kind: ModelErrorKind = "other"
    status: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


class ModelBackend(Protocol):
    """One configured model. `name` is shown to users (e.g. `scripted:demo`, `openai:deepseek-chat`)."""

    @property
    def name(self) -> str: ...

    def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        """Yield one step's events, ending with exactly one `StepComplete`.

        Raises `ModelError` for failures. Cancellation (asyncio task cancel) must close any open
        network stream promptly and propagate `CancelledError`.
        """
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ListsModels(Protocol):
    """A backend that can say which models it offers (`models.catalog` reads it once per process).

    `model` is the model the backend was configured with; `list_models()` answers the endpoint's model
    list as OpenAI's `GET /models` shapes it (`{"id": ..., ...}` objects, with whatever metadata the
    endpoint adds: a context length, supported parameters). Raises `ModelError` when it cannot."""

    @property
    def model(self) -> str: ...

    async def list_models(self) -> list[Mapping[str, Any]]: ...
