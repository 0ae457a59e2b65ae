"""The HTTP side of the OpenAI-compatible backend: one endpoint's httpx client and API key, what a failed
response or connection means (a `ModelError` of which kind), and the retries.

`OpenAIHttp.stream` is one streaming POST to `{base_url}/chat/completions` whose response lines the caller's
`consume` turns into items. 401/403 fail at once (`auth`, naming the env vars to set); 408/409/429/5xx and
connection failures before `consume` yielded anything are retried with capped exponential backoff and
jitter, honouring a capped `Retry-After` (`RetryPolicy`, whose `wait_before_retry` is the one place an
attempt waits for the next; it yields a `Waiting` first, so the user is told why and for how long); a
stream that breaks after an item was yielded is `connection` and is not retried, since that output was
already shown. `list_models` reads `GET {base_url}/models`.

The key is asked of a `KeyProvider` at each request when there is no fixed key, so a login or a logout
takes effect on the next request without a restart.

Must not: log or put the API key in any message, keep a fixed key anywhere but the client's default headers
(no attribute a repr could show), or leave a response open after cancellation (the request lives in
`async with client.stream(...)`).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

import httpx

from acp_bridge.common.credentials import API_KEY_ENV_VARS, STORED_KEY_SOURCE
from acp_bridge.models.base import ModelError, ModelErrorKind, Waiting, WaitReason

log = logging.getLogger(__name__)

# `read` is the longest silence tolerated between two chunks: reasoning models may think for minutes
# before their first token (DeepSeek sends keep-alive comments meanwhile).
DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=15.0, read=300.0, write=30.0, pool=15.0)
# How long listing the endpoint's models may take (the model picker waits for it once per process).
LIST_MODELS_TIMEOUT: Final = httpx.Timeout(5.0)
# "ACP_BRIDGE_API_KEY (or DEEPSEEK_API_KEY / OPENAI_API_KEY)", for messages.
KEY_HINT: Final = f"{API_KEY_ENV_VARS[0]} (or {' / '.join(API_KEY_ENV_VARS[1:])})"

# Statuses worth retrying, as the official OpenAI clients do; everything else 4xx is final.
_RETRY_STATUSES: Final = frozenset({408, 409, 429})
# Error bodies are read for their message only; a broken proxy must not make us buffer megabytes.
_MAX_ERROR_BODY: Final = 64 * 1024

T = TypeVar("T")


class KeyProvider(Protocol):
    """Where the key comes from at each request (`credentials.KeySource`): (key, its source) or Nones."""

    def current(self) -> tuple[str | None, str | None]: ...


class StreamEndedEarly(Exception):
    """The server closed a 200 stream cleanly but before the response was complete (what `consume` raises
    then): a broken connection, retried like one."""

    def __str__(self) -> str:
        return "the stream ended before the response was complete"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times a failed request is tried again, and how long each wait is: `max_retries` retries
    after the first attempt, `backoff_base * 2**n` apart (at most `backoff_max`) with jitter, or the
    server's `Retry-After` capped at `retry_after_max`."""

    max_retries: int
    backoff_base: float
    backoff_max: float
    retry_after_max: float

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        ceiling = min(self.backoff_max, self.backoff_base * 2.0**attempt)
        # "Equal jitter": never less than half the backoff, so retries still spread out.
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def wait_before_retry(
        self, error: ModelError, attempt: int, retry_after: float | None
    ) -> AsyncGenerator[Waiting, None]:
        """After the failed attempt `attempt` (0 for the first): raise `error` when it is final (not worth
        retrying, or no retry left), else yield the `Waiting` that says why and how long, then (once the
        caller asks for more) wait before the next attempt. Every wait between attempts is taken here, so
        whatever reports a wait sees each one; a cancel ends the wait at once."""
        if not _retryable(error) or attempt >= self.max_retries:
            raise error
        delay = self.delay(attempt, retry_after)
        log.warning(
            "model request failed (%s); retry %d of %d in %.2fs",
            error.message,
            attempt + 1,
            self.max_retries,
            delay,
        )
        yield Waiting(_wait_reason(error), delay, attempt + 1, self.max_retries, error.status)
        await asyncio.sleep(delay)


def _wait_reason(error: ModelError) -> WaitReason:
    if error.status == 429:
        return "rate_limited"
    return "server_error" if error.status is not None else "unreachable"


def _retryable(error: ModelError) -> bool:
    if error.kind == "connection":
        return True
    return error.status is not None and (error.status >= 500 or error.status in _RETRY_STATUSES)


class OpenAIHttp:
    """Requests to one OpenAI-compatible endpoint, with the key, the errors and the retries. `model` (the
    configured one) is only named in a 404's message."""

    def __init__(
        self,
        base_url: str,
        model: str,
        retries: RetryPolicy,
        *,
        api_key: str | None,
        api_key_source: str | None,
        key_provider: KeyProvider | None,
        timeout: float | httpx.Timeout,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self._model = model
        self._retries = retries
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

    async def aclose(self) -> None:
        await self._client.aclose()

    def _auth_headers(self) -> dict[str, str]:
        """The request's Authorization header when the key is provided per request (none with a fixed key,
        which the client's default headers carry). Raises `ModelError(kind="auth")` when no key is known."""
        if self._key_provider is None:
            return {}
        key, source = self._key_provider.current()
        if key is None:
            raise ModelError(
                f"No API key for the model API at {self.base_url}: log in (`acp-bridge login`, or your "
                f"editor's login) or set {KEY_HINT}.",
                kind="auth",
            )
        self._api_key_source = source
        return {"Authorization": f"Bearer {key}"}

    async def list_models(self) -> list[Mapping[str, Any]]:
        """The endpoint's `GET {base_url}/models` list (`data`), each entry as the endpoint sent it. Raises
        `ModelError`: `auth` (refused or missing key), `config` (no such route), `connection`, `protocol`
        (not the OpenAI list shape), `other`."""
        url = f"{self.base_url}/models"
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

    async def stream(
        self, body: bytes, consume: Callable[[AsyncIterator[str]], AsyncGenerator[T, None]]
    ) -> AsyncGenerator[T | Waiting, None]:
        """POST `body` to the chat-completions URL and yield what `consume` makes of the response's lines,
        trying again (as the module docstring says) while nothing was yielded, with a `Waiting` before
        each wait between attempts (it is no output: the request may still be retried after one).
        `consume` raises `StreamEndedEarly` for a stream that closed before it was complete.

        Raises `ModelError`: `auth` (no key, or 401/403), `rate_limit` (429 after the retries), `server`
        (5xx/408/409 after the retries), `connection` (unreachable after the retries, or the stream broke
        after items were yielded), `config` (404: wrong URL or model), `protocol` (not a text/event-stream,
        or unreadable), `other` (any other 4xx); and whatever `consume` raises."""
        headers = self._auth_headers()
        attempt = 0
        while True:
            yielded = False
            retry_after: float | None = None
            error: ModelError
            try:
                async with self._client.stream("POST", self.url, content=body, headers=headers) as response:
                    if response.status_code != 200:
                        error = await self._http_error(response, attempt)
                        retry_after = _retry_after_seconds(response.headers)
                    else:
                        _check_content_type(response)
                        async with aclosing(consume(response.aiter_lines())) as items:
                            async for item in items:
                                yielded = True
                                yield item
                        return
            except (httpx.TransportError, StreamEndedEarly) as exc:
                reason = _describe_transport_error(exc)
                if yielded:
                    raise ModelError(
                        f"The model's response stream was interrupted ({reason}); the partial answer above "
                        "is incomplete.",
                        kind="connection",
                    ) from exc
                error = ModelError(
                    f"Could not get a response from the model API at {self.base_url} ({reason}) "
                    f"after {attempt + 1} attempt{'s' if attempt else ''}.",
                    kind="connection",
                    details={"attempts": attempt + 1},
                )
            except httpx.HTTPError as exc:
                raise ModelError(
                    f"The model API's response could not be read: {exc}", kind="protocol"
                ) from exc
            async with aclosing(self._retries.wait_before_retry(error, attempt, retry_after)) as waits:
                async for waiting in waits:
                    yield waiting
            attempt += 1

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
                else f"Set {KEY_HINT} to a valid key for this endpoint"
            )
            message = (
                f"The model API at {self.base_url} refused the API key (HTTP {status}: {detail}). "
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
                f"The model API answered 404 for {self.url} ({detail}). "
                f"Check --base-url and the model name {self._model!r}."
            )
        else:
            kind = "other"
            message = f"The model API rejected the request (HTTP {status}: {detail})."
        return ModelError(message, kind=kind, status=status, details={"provider_message": detail})


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
