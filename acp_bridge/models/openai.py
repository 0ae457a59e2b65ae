"""A model behind any OpenAI-compatible chat-completions endpoint (DeepSeek by default), streamed over SSE.

One `stream_step` is one streaming POST to `{base_url}/chat/completions`: the request body is
`openai_request`'s (neutral messages and tool specs in OpenAI's format, the session's model and reasoning
effort), the HTTP exchange with its key, errors and retries is `openai_http`'s, and the response's lines
become step events through `openai_sse`'s parser, ending with one `StepComplete`. `list_models` reads the
endpoint's `GET /models` for the model picker (`models.catalog`). The key is asked of a `KeyProvider` at
each request when the backend has no fixed key: an environment variable, else the key `acp-bridge login`
stored, so a login or a logout takes effect on the next request without a restart.

Failures are `ModelError`s (`openai_http` says which, and which are retried).

Must not: execute tools, write to stdout, log or put the API key in any message, or leave a response open
after cancellation (each generator between the response and the caller is closed with it).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

import httpx

from acp_bridge.common.credentials import API_KEY_ENV_VARS
from acp_bridge.common.settings import DEFAULT_BASE_URL
from acp_bridge.models.base import ModelError, StepEvent, StepRequest
from acp_bridge.models.openai_http import (
    DEFAULT_TIMEOUT,
    KEY_HINT,
    KeyProvider,
    OpenAIHttp,
    RetryPolicy,
    StreamEndedEarly,
)
from acp_bridge.models.openai_request import encode_body
from acp_bridge.models.openai_sse import StepParser

__all__ = ["API_KEY_ENV_VARS", "DEFAULT_BASE_URL", "DEFAULT_TIMEOUT", "OpenAIBackend"]


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
            raise ModelError(f"no API key: set {KEY_HINT}", kind="config")
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
        self._http = OpenAIHttp(
            base_url,
            model,
            RetryPolicy(max_retries, backoff_base, backoff_max, retry_after_max),
            api_key=api_key,
            api_key_source=api_key_source,
            key_provider=key_provider,
            timeout=timeout,
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def model(self) -> str:
        """The configured model (a session may choose another through `StepRequest.model`)."""
        return self._model

    @property
    def base_url(self) -> str:
        return self._http.base_url

    async def list_models(self) -> list[Mapping[str, Any]]:
        """The endpoint's `GET {base_url}/models` list (`data`), each entry as the endpoint sent it. Raises
        `ModelError`: `auth` (refused or missing key), `config` (no such route), `connection`, `protocol`
        (not the OpenAI list shape), `other`."""
        return await self._http.list_models()

    @property
    def url(self) -> str:
        """The chat-completions URL requests go to."""
        return self._http.url

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self._model!r}, url={self.url!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        """Stream one chat completion as step events, ending with exactly one `StepComplete`.

        Raises `ModelError`: `auth` (401/403, no retry), `rate_limit` (429 after the retries), `server`
        (5xx/408/409 after the retries, or an error object inside the stream), `connection` (unreachable
        after the retries, or the stream broke after events were yielded), `config` (404: wrong URL or
        model), `protocol` (the stream is not SSE or carries invalid JSON), `other` (any other 4xx).
        Cancellation closes the HTTP response before `CancelledError` propagates.
        """
        body = encode_body(self._model, request)
        async with aclosing(self._http.stream(body, _step_events)) as events:
            async for event in events:
                yield event


async def _step_events(lines: AsyncIterator[str]) -> AsyncGenerator[StepEvent, None]:
    """One response's lines as step events, ending with the `StepComplete`; raises `StreamEndedEarly` when
    the lines end before the response is complete."""
    parser = StepParser()
    async for line in lines:
        for event in parser.feed_line(line):
            yield event
        if parser.done:
            # Stop at [DONE] instead of waiting for a server that keeps the stream open.
            break
    if not parser.complete:
        raise StreamEndedEarly
    yield parser.result()
