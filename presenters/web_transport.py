"""The HTTP transport of `web_fetch`: connections only to addresses `net_guard` checked, on every hop.

httpx resolves and connects deep inside httpcore's network backend (`connect_tcp(host, port)`), after any
check a caller could make on the URL, and resolves the name again itself. So the check lives there:
`PinnedBackend.connect_tcp` asks the guard for the host's judged addresses (resolving once) and connects to
one of those addresses, not to the name. Everything above the socket still uses the name: the Host header
comes from the URL, and httpcore starts TLS with the origin's host as SNI and for certificate verification.

`GuardedTransport(guard)` is an httpx transport over a plain httpcore connection pool with that backend
(no proxy: a proxy would resolve and connect on its own, out of the guard's sight). httpcore's errors are
raised as their httpx counterparts, so callers handle one family; `AddressRefused` passes through as is.

Imported only when a fetch runs: httpx and httpcore cost ~100 ms to import.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from .net_guard import NetworkGuard

# httpcore's errors and the httpx errors callers handle, most specific first.
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
)
_CORE_ERRORS = tuple(theirs for theirs, _ in _ERRORS)


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except _CORE_ERRORS as exc:
        kind = next(ours for theirs, ours in _ERRORS if isinstance(exc, theirs))
        raise kind(str(exc)) from exc


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Resolves a host once through the guard, and connects to the judged addresses only (in order)."""

    def __init__(self, guard: NetworkGuard) -> None:
        self._guard = guard
        self._tcp = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self._guard.addresses(host, port)
        except (OSError, ValueError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        failure: httpcore.ConnectError | None = None
        for address in addresses:
            try:
                return await self._tcp.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # refused or unreachable: the next address may answer
                failure = exc
        assert failure is not None  # `addresses` is never empty
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("web_fetch connects to TCP addresses only")

    async def sleep(self, seconds: float) -> None:
        await self._tcp.sleep(seconds)


class _Body(httpx.AsyncByteStream):
    """A response body read from httpcore, its errors raised as httpx's."""

    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._response.aiter_stream():
                yield chunk

    async def aclose(self) -> None:
        with _as_httpx_errors():
            await self._response.aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    """httpx's default transport, minus proxies, over a pool whose every connection is `PinnedBackend`'s."""

    def __init__(self, guard: NetworkGuard) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=PinnedBackend(guard)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self._pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
