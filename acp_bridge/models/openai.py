"""A model behind any OpenAI-compatible chat-completions endpoint (DeepSeek by default), streamed over SSE.

One `stream_step` is one streaming POST to `{base_url}/chat/completions`: neutral messages and tool specs go
out in OpenAI's format; `delta.reasoning_content` (DeepSeek) becomes `ThoughtDelta`, `delta.content` becomes
`TextDelta`, and tool-call fragments are assembled by index into the final `StepComplete`.

The session's model choice (`StepRequest.model`) replaces the configured model in the request, and its
reasoning effort goes out as OpenAI's `reasoning_effort`. `list_models` reads the endpoint's `GET /models`
for the model picker (`models.catalog`). The key is asked of a `KeySource` at each request when the
backend has no fixed key: an environment variable, else the key `acp-bridge login` stored, so a login or a
logout takes effect on the next request without a restart.

Failures are `ModelError`s: 401/403 fail at once (`auth`, naming the env vars to set); 408/409/429/5xx and
connection failures before anything was yielded are retried with capped exponential backoff and jitter
(honouring a capped `Retry-After`); a stream that breaks after output was yielded is `connection` and is
not retried, since that output was already shown.

Must not: execute tools, write to stdout, log or put the API key in any message, or leave a response open
after cancellation (the request lives in `async with client.stream(...)`).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, assert_never

import httpx

from acp_bridge.common.credentials import API_KEY_ENV_VARS, STORED_KEY_SOURCE
from acp_bridge.common.settings import DEFAULT_BASE_URL
from acp_bridge.models.base import (
    AssistantMessage,
    ImageData,
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
    parse_tool_arguments,
)
from acp_bridge.models.images import data_url

__all__ = ["API_KEY_ENV_VARS", "DEFAULT_BASE_URL", "DEFAULT_TIMEOUT", "OpenAIBackend"]

log = logging.getLogger(__name__)

# `read` is the longest silence tolerated between two chunks: reasoning models may think for minutes
# before their first token (DeepSeek sends keep-alive comments meanwhile).
DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=15.0, read=300.0, write=30.0, pool=15.0)

# Statuses worth retrying, as the official OpenAI clients do; everything else 4xx is final.
_RETRY_STATUSES: Final = frozenset({408, 409, 429})
# Error bodies are read for their message only; a broken proxy must not make us buffer megabytes.
_MAX_ERROR_BODY: Final = 64 * 1024
# "ACP_BRIDGE_API_KEY (or DEEPSEEK_API_KEY / OPENAI_API_KEY)", for messages.
_KEY_HINT: Final = f"{API_KEY_ENV_VARS[0]} (or {' / '.join(API_KEY_ENV_VARS[1:])})"
# How long listing the endpoint's models may take (the model picker waits for it once per process).
LIST_MODELS_TIMEOUT: Final = httpx.Timeout(5.0)


class KeyProvider(Protocol):
    """Where the key comes from at each request (`credentials.KeySource`): (key, its source) or Nones."""

    def current(self) -> tuple[str | None, str | None]: ...


class OpenAIBackend:
    """Streaming chat completions with tool calls against one OpenAI-compatible endpoint."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        max_retries: int = 3,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        retry_after_max: float = 30.0,
        api_key_source: str | None = None,
        key_provider: KeyProvider | None = None,
    ) -> None:
        """Configure the backend; no request is made until `stream_step`.

        `base_url` may end in `/v1` or not: `/chat/completions` is appended as is. `max_retries` counts the
        retries after the first attempt. Retry delays are `backoff_base * 2**n` (at most `backoff_max`)
        with jitter, or the server's `Retry-After` capped at `retry_after_max`. `api_key_source` (the env
        var the key came from) only makes auth errors more precise. Without `api_key`, `key_provider` is
        asked for the key at each request (a request without one fails with `auth`). Raises
        `ModelError(kind="config")` for an empty model, no key and no provider, or a base URL that is not
        http(s).
        """
        if not model.strip():
            raise ModelError(
                "the openai backend needs a model name, e.g. openai:deepseek-chat", kind="config"
            )
        if key_provider is None and not (api_key or "").strip():
            raise ModelError(f"no API key: set {_KEY_HINT}", kind="config")
        try:
            parsed = httpx.URL(base_url)
        except httpx.InvalidURL:
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
            raise ModelError(
                f"--base-url must be an http:// or https:// URL with a host, got {base_url!r}", kind="config"
            )
        if max_retries < 0:
            raise ModelError(f"max_retries must be >= 0, got {max_retries}", kind="config")
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._url = f"{self._base_url}/chat/completions"
        self._max_retries = max_retries
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._retry_after_max = retry_after_max
        self._api_key_source = api_key_source
        self._key_provider = key_provider
        # A fixed key lives only in the client's default headers: never in an attribute that a repr, a
        # log line or an error message could show. A provided key goes into each request's headers.
        headers = {
            "Accept": "text/event-stream",
            "Content-Type": "application/json",
            "User-Agent": "acp-bridge",
        }
        if key_provider is None:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.AsyncClient(timeout=timeout, headers=headers)

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def model(self) -> str:
        """The configured model (a session may choose another through `StepRequest.model`)."""
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    def _auth_headers(self) -> dict[str, str]:
        """The request's Authorization header when the key is provided per request (none with a fixed key,
        which the client's default headers carry). Raises `ModelError(kind="auth")` when no key is known."""
        if self._key_provider is None:
            return {}
        key, source = self._key_provider.current()
        if key is None:
            raise ModelError(
                f"No API key for the model API at {self._base_url}: log in (`acp-bridge login`, or your "
                f"editor's login) or set {_KEY_HINT}.",
                kind="auth",
            )
        self._api_key_source = source
        return {"Authorization": f"Bearer {key}"}

    async def list_models(self) -> list[Mapping[str, Any]]:
        """The endpoint's `GET {base_url}/models` list (`data`), each entry as the endpoint sent it. Raises
        `ModelError`: `auth` (refused or missing key), `config` (no such route), `connection`, `protocol`
        (not the OpenAI list shape), `other`."""
        url = f"{self._base_url}/models"
        try:
            response = await self._client.get(
                url,
                headers={**self._auth_headers(), "Accept": "application/json"},
                timeout=LIST_MODELS_TIMEOUT,
            )
        except httpx.HTTPError as exc:
            raise ModelError(
                f"Could not list the models at {url} ({_describe_transport_error(exc)}).", kind="connection"
            ) from exc
        if response.status_code != 200:
            detail = _provider_message(response.text[:_MAX_ERROR_BODY]) or response.reason_phrase
            kind: ModelErrorKind = (
                "auth"
                if response.status_code in (401, 403)
                else "config"
                if response.status_code == 404
                else "other"
            )
            raise ModelError(
                f"{url} answered HTTP {response.status_code} ({detail})",
                kind=kind,
                status=response.status_code,
            )
        try:
            data = response.json().get("data")
        except (ValueError, AttributeError):
            data = None
        if not isinstance(data, list):
            raise ModelError(f"{url} did not answer an OpenAI model list", kind="protocol")
        return [entry for entry in data if isinstance(entry, Mapping) and isinstance(entry.get("id"), str)]

    @property
    def url(self) -> str:
        """The chat-completions URL requests go to."""
        return self._url

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self._model!r}, url={self._url!r})"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        """Stream one chat completion as step events, ending with exactly one `StepComplete`.

        Raises `ModelError`: `auth` (401/403, no retry), `rate_limit` (429 after the retries), `server`
        (5xx/408/409 after the retries, or an error object inside the stream), `connection` (unreachable
        after the retries, or the stream broke after events were yielded), `config` (404: wrong URL or
        model), `protocol` (the stream is not SSE or carries invalid JSON), `other` (any other 4xx).
        Cancellation closes the HTTP response before `CancelledError` propagates.
        """
        body = _encode_body(self._model, request)
        headers = self._auth_headers()
        attempt = 0
        while True:
            yielded = False
            retry_after: float | None = None
            error: ModelError
            try:
                async with self._client.stream("POST", self._url, content=body, headers=headers) as response:
                    if response.status_code != 200:
                        error = await self._http_error(response, attempt)
                        retry_after = _retry_after_seconds(response.headers)
                    else:
                        _check_content_type(response)
                        parser = _StepParser()
                        async for line in response.aiter_lines():
                            for event in parser.feed_line(line):
                                yielded = True
                                yield event
                            if parser.done:
                                # Stop at [DONE] instead of waiting for a server that keeps the stream open.
                                break
                        if not parser.complete:
                            raise _StreamEndedEarly
                        yield parser.result()
                        return
            except (httpx.TransportError, _StreamEndedEarly) as exc:
                reason = _describe_transport_error(exc)
                if yielded:
                    raise ModelError(
                        f"The model's response stream was interrupted ({reason}); the partial answer above "
                        "is incomplete.",
                        kind="connection",
                    ) from exc
                error = ModelError(
                    f"Could not get a response from the model API at {self._base_url} ({reason}) "
                    f"after {attempt + 1} attempt{'s' if attempt else ''}.",
                    kind="connection",
                    details={"attempts": attempt + 1},
                )
            except httpx.HTTPError as exc:
                raise ModelError(
                    f"The model API's response could not be read: {exc}", kind="protocol"
                ) from exc

            if not _retryable(error) or attempt >= self._max_retries:
                raise error
            delay = self._retry_delay(attempt, retry_after)
            log.warning(
                "model request failed (%s); retry %d of %d in %.2fs",
                error.message,
                attempt + 1,
                self._max_retries,
                delay,
            )
            await asyncio.sleep(delay)
            attempt += 1

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._retry_after_max)
        ceiling = min(self._backoff_max, self._backoff_base * 2.0**attempt)
        # "Equal jitter": never less than half the backoff, so retries still spread out.
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def _http_error(self, response: httpx.Response, attempt: int) -> ModelError:
        status = response.status_code
        detail = _provider_message(await _read_capped(response)) or response.reason_phrase or "no details"
        attempts = f"gave up after {attempt + 1} attempt{'s' if attempt else ''}"
        kind: ModelErrorKind
        if status in (401, 403):
            kind = "auth"
            source = f" The key in use came from {self._api_key_source}." if self._api_key_source else ""
            fix = (
                "Log in again (`acp-bridge login`, or your editor's login)"
                if self._api_key_source == STORED_KEY_SOURCE
                else f"Set {_KEY_HINT} to a valid key for this endpoint"
            )
            message = (
                f"The model API at {self._base_url} refused the API key (HTTP {status}: {detail}). "
                f"{fix}.{source}"
            )
        elif status == 429:
            kind = "rate_limit"
            message = f"The model API is rate-limiting requests (HTTP 429: {detail}); {attempts}."
        elif status >= 500 or status in _RETRY_STATUSES:
            kind = "server"
            message = f"The model API failed (HTTP {status}: {detail}); {attempts}."
        elif status == 404:
            kind = "config"
            message = (
                f"The model API answered 404 for {self._url} ({detail}). "
                f"Check --base-url and the model name {self._model!r}."
            )
        else:
            kind = "other"
            message = f"The model API rejected the request (HTTP {status}: {detail})."
        return ModelError(message, kind=kind, status=status, details={"provider_message": detail})


def _retryable(error: ModelError) -> bool:
    if error.kind == "connection":
        return True
    return error.status is not None and (error.status >= 500 or error.status in _RETRY_STATUSES)


class _StreamEndedEarly(Exception):
    """The server closed a 200 stream cleanly but before `[DONE]` or a finish reason."""

    def __str__(self) -> str:
        return "the stream ended before the response was complete"


def _describe_transport_error(exc: BaseException) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out: {type(exc).__name__}"
    return str(exc) or type(exc).__name__


def _check_content_type(response: httpx.Response) -> None:
    content_type = response.headers.get("content-type", "")
    # Some servers ignore `stream: true` and answer one JSON document; say so instead of parsing nothing.
    if content_type and "text/event-stream" not in content_type:
        raise ModelError(
            f"The model API answered {content_type!r} instead of a text/event-stream; "
            "it does not seem to support streaming chat completions.",
            kind="protocol",
        )


async def _read_capped(response: httpx.Response) -> str:
    raw = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            raw += chunk
            if len(raw) >= _MAX_ERROR_BODY:
                break
    except httpx.HTTPError:
        # The status already says what failed; an unreadable body only loses the provider's wording.
        pass
    return raw[:_MAX_ERROR_BODY].decode("utf-8", "replace")


def _provider_message(body: str) -> str:
    """The provider's own error text: `error.message`, a string `error`, `message`, or the raw body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:500]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return str(data["message"])
    return body.strip()[:500]


def _retry_after_seconds(headers: httpx.Headers) -> float | None:
    """`retry-after-ms` (OpenAI) or `Retry-After` as seconds or an HTTP date; None when absent or bad."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# --- request encoding ----------------------------------------------------------------------------


def _encode_body(model: str, request: StepRequest) -> bytes:
    body: dict[str, Any] = {
        "model": request.model or model,
        "messages": _wire_messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.reasoning_effort is not None:
        # OpenAI's chat-completions parameter for reasoning models; sent only when the session chose one.
        body["reasoning_effort"] = request.reasoning_effort
    if request.tools:
        # Omitted when empty: several compatible servers reject `"tools": []`.
        body["tools"] = [_wire_tool(tool) for tool in request.tools]
    return _dumps(body).encode("utf-8")


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _wire_messages(request: StepRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system_prompt:
        out.append({"role": "system", "content": request.system_prompt})
    # Images tool results carried: a tool message holds text only, so they follow the step's tool
    # messages as one user message (nothing may come between the tool messages of one step).
    pending: list[ToolResultMessage] = []
    for message in request.messages:
        if pending and not isinstance(message, ToolResultMessage):
            out.append(_tool_images(pending))
            pending = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            out.append(_wire_assistant(message))
        elif isinstance(message, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": message.call_id, "content": message.content})
            if message.images:
                pending.append(message)
        else:
            assert_never(message)
    if pending:
        out.append(_tool_images(pending))
    return out


def _image_part(image: ImageData) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if not message.images:
        return message.text
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    return parts + [_image_part(image) for image in message.images]


def _tool_images(results: list[ToolResultMessage]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for result in results:
        count = len(result.images)
        parts.append(
            {"type": "text", "text": f"The `{result.name}` call {result.call_id} returned "
             f"{'this image' if count == 1 else f'these {count} images'}:"}
        )  # fmt: skip
        parts += [_image_part(image) for image in result.images]
    return {"role": "user", "content": parts}


def _wire_assistant(message: AssistantMessage) -> dict[str, Any]:
    if not message.tool_calls:
        # Reasoning of a turn without tool calls is not sent back: DeepSeek ignores it (older versions
        # answered 400).
        return {"role": "assistant", "content": message.text}
    wire: dict[str, Any] = {
        "role": "assistant",
        "content": message.text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    # A raw string goes back verbatim: the model should see what it actually emitted.
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else _dumps(call.arguments),
                },
            }
            for call in message.tool_calls
        ],
    }
    if message.reasoning is not None:
        # DeepSeek's thinking mode requires the reasoning of tool-calling turns back (400 otherwise).
        wire["reasoning_content"] = message.reasoning
    return wire


def _jsonable(value: object) -> object:
    # Arguments and schemas are `Mapping`s (possibly read-only views), which json cannot encode alone.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=_jsonable)


# --- response parsing ----------------------------------------------------------------------------


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)
    started: bool = False


class _StepParser:
    """SSE lines in, step events out; keeps the partial tool calls until the stream ends. No I/O."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self.done = False

    @property
    def complete(self) -> bool:
        """True once `[DONE]` or a finish reason arrived: a stream closing before that was cut off."""
        return self.done or self._finish_reason is not None

    def feed_line(self, line: str) -> list[StepEvent]:
        if self.done:
            return []
        if line == "":
            return self._dispatch(final=True)
        if line.startswith(":"):
            return []  # an SSE comment, e.g. DeepSeek's ": keep-alive"
        name, _, value = line.partition(":")
        if name != "data":
            return []  # `event:`, `id:`, `retry:` carry nothing for chat completions
        self._data.append(value[1:] if value.startswith(" ") else value)
        # Dispatch as soon as the data is complete, so servers that omit the blank line between events
        # (a common shortcut) still stream.
        return self._dispatch(final=False)

    def _dispatch(self, *, final: bool) -> list[StepEvent]:
        if not self._data:
            return []
        payload = "\n".join(self._data)
        if payload.strip() == "[DONE]":
            self._data.clear()
            self.done = True
            return []
        try:
            chunk = json.loads(payload)
        except ValueError:
            if not final:
                return []  # perhaps a multi-line event; the blank line decides
            raise ModelError(
                f"The model API sent a stream event that is not JSON: {payload[:200]!r}", kind="protocol"
            ) from None
        self._data.clear()
        return self._handle_chunk(chunk)

    def _handle_chunk(self, chunk: object) -> list[StepEvent]:
        if not isinstance(chunk, dict):
            raise ModelError(
                f"The model API sent a stream event that is not an object: {chunk!r:.200}", kind="protocol"
            )
        error = chunk.get("error")
        if error:
            detail = error.get("message") if isinstance(error, dict) else error
            raise ModelError(f"The model API reported an error mid-stream: {detail}", kind="server")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = _parse_usage(usage)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return []  # e.g. the final usage-only chunk
        choice = choices[0]
        events: list[StepEvent] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            # `reasoning_content` is DeepSeek's; `reasoning` is what several other servers call it.
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                events.append(ThoughtDelta(reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                events.append(TextDelta(content))
            fragments = delta.get("tool_calls")
            if isinstance(fragments, list):
                for fragment in fragments:
                    if isinstance(fragment, dict):
                        started = self._merge_fragment(fragment)
                        if started is not None:
                            events.append(started)
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str) and finish_reason:
            self._finish_reason = finish_reason
        return events

    def _merge_fragment(self, fragment: dict[str, Any]) -> ToolCallStarted | None:
        index = fragment.get("index")
        if not isinstance(index, int):
            # Some servers omit `index`: a fragment bringing a new id starts a call, others continue the last.
            new_id = fragment.get("id")
            known = {call.id for call in self._calls.values()}
            if not self._calls or (isinstance(new_id, str) and new_id and new_id not in known):
                index = max(self._calls, default=-1) + 1
            else:
                index = max(self._calls)
        call = self._calls.setdefault(index, _PartialCall())
        call_id = fragment.get("id")
        if call.id is None and isinstance(call_id, str) and call_id:
            call.id = call_id
        function = fragment.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if call.name is None and isinstance(name, str) and name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments.append(arguments)
        if not call.started and call.id is not None and call.name is not None:
            call.started = True
            return ToolCallStarted(id=call.id, name=call.name)
        return None

    def result(self) -> StepComplete:
        calls: list[ToolCallRequest] = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            if partial.name is None:
                raise ModelError(
                    f"The model API streamed tool call #{index} without a function name.", kind="protocol"
                )
            raw = "".join(partial.arguments)
            calls.append(
                ToolCallRequest(
                    # Ids must be unique within a session; a server that sends none gets a random one.
                    id=partial.id or f"call_{uuid.uuid4().hex[:24]}",
                    name=partial.name,
                    # An empty string is how several servers encode "no arguments".
                    arguments={} if not raw.strip() else parse_tool_arguments(raw),
                )
            )
        return StepComplete(tool_calls=tuple(calls), finish_reason=self._finish_reason, usage=self._usage)


def _parse_usage(usage: Mapping[str, Any]) -> Usage:
    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    input_tokens = count("prompt_tokens")
    output_tokens = count("completion_tokens")
    # The prompt tokens the provider's cache served: OpenAI's `prompt_tokens_details.cached_tokens`,
    # DeepSeek's `prompt_cache_hit_tokens`.
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    if not isinstance(cached, int) or isinstance(cached, bool):
        cached = count("prompt_cache_hit_tokens")
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=count("total_tokens") or input_tokens + output_tokens,
        cached_input_tokens=max(0, min(cached, input_tokens)),
    )
