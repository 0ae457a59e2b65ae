"""`web_fetch`: fetch a URL and return it as readable text, and its `web` card (kind "fetch").

- http and https only, on the first request and on every redirect.
- Redirects within the same origin (scheme, host and port) are followed, at most 5. A redirect to another
  origin is not followed: the result (status 3xx, a completed card) names the target, so the model's next
  `web_fetch` of it goes through the permission policy like any call (a rule for one host and port never
  covers another). A target that is a refused address (below) fails the call instead.
- Every connection, first request and redirects alike, goes to an address `net_guard` judged after
  resolving the name once (`web_transport`): loopback, private, link-local and other non-public addresses
  are refused before any connection unless the tool was built with `allow_private_network` (the bridge's
  `--allow-private-network`); cloud metadata addresses always are. A refusal is a failed call
  (`ADDRESS_REFUSED`) naming the address, its class and how to allow it. No proxy is used.
- Timeouts: connect 10 s, each read 30 s, the whole fetch 60 s. Size cap: 5 MB of body is read, the rest
  is not downloaded; the text returned is cut at `max_length` characters (default 50,000).
- HTML becomes Markdown (`html_text`); other text types (plain, JSON, XML, CSV, ...) are returned as is;
  binary types (images, PDFs, archives) are reported, not dumped. The charset comes from the headers, an
  HTML <meta>, or UTF-8.
- HTTP errors (status 400 and above) are failed results that still carry the status for the card.

presentation_meta: {"url" (final), "requested_url", "status_code", "content_type", "title",
"truncated", "bytes", "redirects", "redirect_to" (a cross-origin target not followed, else null)}; the
body is not duplicated into it (the seed's web card rule).

Must not: fetch a non-http(s) URL, follow a redirect to another origin or more than 5 redirects, connect
to an address the guard has not judged, or read an unbounded body.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, Field

from registry_core import (
    GenericCallView,
    Output,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolRunContext,
    WebResultView,
    define_tool,
)

from .cards import failure_card, meta_field
from .file_errors import format_size
from .net_guard import AddressRefused, NetworkGuard, Resolver, ip_literal, system_resolver

if TYPE_CHECKING:
    import httpx

DEFAULT_MAX_LENGTH = 50_000
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
USER_AGENT = "acp-bridge/0.1 web_fetch (+https://agentclientprotocol.com)"
_TEXT_TYPES = re.compile(
    r"^(text/|application/(json|xml|javascript|ecmascript|x-javascript|x-yaml|yaml|toml|x-sh|csv|sql|graphql)"
    r"|application/[\w.+-]+\+(json|xml))"
)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w-]+)""", re.IGNORECASE)


class WebFetchArgs(BaseModel):
    url: str = Field(min_length=1, description="The http(s) URL to fetch.")
    max_length: int | None = Field(
        default=None, ge=100, le=1_000_000, description="Most characters of text to return (default 50000)."
    )


class WebValue(BaseModel):
    url: str
    requested_url: str
    status_code: int
    reason: str
    content_type: str | None
    title: str | None
    content: str
    truncated: bool
    bytes: int
    redirects: list[str]
    redirect_to: str | None = None


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ToolError(
            f"Cannot fetch {url!r}: only absolute http:// and https:// URLs are supported.",
            code="UNSUPPORTED_URL",
        )


def _origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a checked http(s) URL, the port its scheme implies when absent."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        raise ToolError(f"Cannot fetch {url!r}: its port is not valid.", code="UNSUPPORTED_URL") from None
    if port is None:
        port = 443 if scheme == "https" else 80
    return scheme, (parts.hostname or "").lower(), port


def _judge_redirect(guard: NetworkGuard, url: str, target: str) -> None:
    """Fail now when a cross-origin redirect's host is a refused address as written (no resolver is
    asked): the model need not ask the user about a fetch that cannot run."""
    host = urlsplit(target).hostname or ""
    try:
        literal = ip_literal(host)
    except ValueError as exc:
        raise ToolError(f"{url} redirected to {target!r}: {exc}.", code="UNSUPPORTED_URL") from None
    if literal is None:
        return
    try:
        guard.judge(host, literal)
    except AddressRefused as exc:
        raise ToolError(
            f"{url} redirected to {target}; not followed: {exc}",
            code="ADDRESS_REFUSED",
            meta={
                "url": url,
                "redirect_to": target,
                "address": str(exc.address),
                "address_class": exc.address_class,
            },
        ) from None


def _refused(url: str, requested: str, exc: AddressRefused) -> ToolError:
    via = f" (redirected from {requested})" if url != requested else ""
    return ToolError(
        f"Refused to fetch {url}{via}: {exc}",
        code="ADDRESS_REFUSED",
        meta={
            "requested_url": requested,
            "url": url,
            "address": str(exc.address),
            "address_class": exc.address_class,
        },
    )


def _charset(response: httpx.Response, head: bytes, is_html: bool) -> str:
    name = response.charset_encoding
    if name is None and is_html and (found := _META_CHARSET.search(head[:4096])):
        name = found.group(1).decode("ascii", "replace")
    try:
        return codecs.lookup(name).name if name else "utf-8"
    except LookupError:
        return "utf-8"


async def _fetch(url: str, limit: int, timeout_s: float, connect_s: float, guard: NetworkGuard) -> WebValue:
    import httpx  # here, not at module level: every session loads the tools, few ever fetch (~25 ms)

    from .web_transport import GuardedTransport

    redirects: list[str] = []
    timeout = httpx.Timeout(timeout_s, connect=connect_s)
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml,text/*;q=0.9,*/*;q=0.5"}
    client = httpx.AsyncClient(
        transport=GuardedTransport(guard),
        timeout=timeout,
        follow_redirects=False,
        headers=headers,
        trust_env=False,
    )
    async with client:
        current = url
        while True:
            try:
                async with client.stream("GET", current) as response:
                    location = response.headers.get("location")
                    if response.is_redirect and location:
                        target = urljoin(current, location)
                        _check_url(target)
                        if _origin(target) != _origin(current):
                            _judge_redirect(guard, current, target)
                            return _bare(url, current, response, redirects, redirect_to=target)
                        if len(redirects) >= MAX_REDIRECTS:
                            raise ToolError(
                                f"Too many redirects (more than {MAX_REDIRECTS}) fetching {url}.",
                                code="TOO_MANY_REDIRECTS",
                            )
                        current = target
                        redirects.append(current)
                        continue
                    return await _read(url, current, response, redirects, limit)
            except AddressRefused as exc:
                raise _refused(current, url, exc) from None


async def _read(
    url: str, current: str, response: httpx.Response, redirects: list[str], limit: int
) -> WebValue:
    mime = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
    if mime and not _is_text(mime):  # decided by the header: do not download it
        size = response.headers.get("content-length", "")
        raise ToolError(
            f"{current} returned {mime} content"
            + (f" ({format_size(int(size))})" if size.isdigit() else "")
            + ", which is not text; it is not shown.",
            code="UNSUPPORTED_CONTENT",
            meta=_meta(None, _bare(url, current, response, redirects)),
        )
    body = bytearray()
    truncated = False
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= MAX_BYTES:
            del body[MAX_BYTES:]
            truncated = True
            break
    return _value(url, current, response, bytes(body), truncated, redirects, limit)


def _is_text(mime: str) -> bool:
    return mime in _HTML_TYPES or bool(_TEXT_TYPES.match(mime))


def _bare(
    url: str, final: str, response: httpx.Response, redirects: list[str], redirect_to: str | None = None
) -> WebValue:
    return WebValue(
        url=final,
        requested_url=url,
        status_code=response.status_code,
        reason=response.reason_phrase,
        content_type=response.headers.get("content-type"),
        title=None,
        content="",
        truncated=False,
        bytes=0,
        redirects=redirects,
        redirect_to=redirect_to,
    )


def _value(
    url: str,
    final: str,
    response: httpx.Response,
    body: bytes,
    truncated: bool,
    redirects: list[str],
    limit: int,
) -> WebValue:
    mime = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
    # No content type: sniff (an HTML start, or no NUL byte in the first KiB means text).
    is_html = mime in _HTML_TYPES or (
        not mime and body.lstrip()[:15].lower().startswith((b"<!doctype", b"<html"))
    )
    value = _bare(url, final, response, redirects)
    value.truncated, value.bytes = truncated, len(body)
    if not mime and b"\x00" in body[:1024]:
        raise ToolError(
            f"{final} returned binary content ({format_size(len(body))}); it is not shown.",
            code="UNSUPPORTED_CONTENT",
            meta=_meta(None, value),
        )
    text = body.decode(_charset(response, body, is_html), "replace")
    title = None
    if is_html:
        # Here, not at module level: `html.parser` is loaded by the first page fetched, not at every start.
        from .html_text import html_to_markdown

        text, title = html_to_markdown(text, final)
    if len(text) > limit:
        text, value.truncated = text[:limit], True
    value.content, value.title = text, title
    if response.status_code >= 400:
        excerpt = text[:2000]
        raise ToolError(
            f"HTTP {response.status_code} {response.reason_phrase} for {final}."
            + (f"\n\n{excerpt}" if excerpt.strip() else ""),
            code="HTTP_ERROR",
            meta=_meta(None, value),
        )
    return value


def _render(_args: WebFetchArgs, value: WebValue) -> str:
    head = [f"URL: {value.url}", f"Status: {value.status_code} {value.reason}".rstrip()]
    if value.redirect_to is not None:
        return "\n".join(head) + (
            f"\n\nRedirected to a different origin (scheme, host or port): {value.redirect_to}\n"
            "Not followed: web_fetch follows redirects within one origin only, so that every new origin "
            "is approved like any fetch. To continue, call web_fetch with "
            f"url={json.dumps(value.redirect_to)}."
        )
    if value.title:
        head.append(f"Title: {value.title}")
    if value.content_type:
        head.append(f"Content-Type: {value.content_type}")
    note = "\n\n[Content truncated.]" if value.truncated else ""
    return "\n".join(head) + "\n\n" + (value.content or "(empty body)") + note


def _meta(_args: Any, value: WebValue) -> dict[str, Any]:
    return value.model_dump(exclude={"content", "reason"})


def web_fetch_tool(
    *,
    timeout_s: float = 30.0,
    connect_timeout_s: float = 10.0,
    total_s: float = 60.0,
    allow_private_network: bool = False,
    resolver: Resolver = system_resolver,
) -> ToolDefinition:
    """The `web_fetch` tool. Timeouts: per connect, per read, and for the whole fetch.

    `allow_private_network`: connect to loopback, private, link-local and other non-public addresses too
    (never to cloud metadata addresses). `resolver`: host name -> addresses (tests resolve without DNS).
    """
    guard = NetworkGuard(allow_private=allow_private_network, resolver=resolver)

    async def execute(args: WebFetchArgs, _ctx: ToolRunContext) -> WebValue:
        import httpx

        url = args.url.strip()
        _check_url(url)
        limit = args.max_length or DEFAULT_MAX_LENGTH
        try:
            async with asyncio.timeout(total_s):
                return await _fetch(url, limit, timeout_s, connect_timeout_s, guard)
        except (TimeoutError, httpx.TimeoutException):
            raise ToolError(f"Fetching {url} timed out.", code="TIMEOUT") from None
        except httpx.InvalidURL as exc:
            raise ToolError(f"Invalid URL {url!r}: {exc}.", code="UNSUPPORTED_URL") from None
        except httpx.HTTPError as exc:
            raise ToolError(
                f"Fetching {url} failed: {exc or type(exc).__name__}.", code="FETCH_FAILED"
            ) from None

    def present_call(args: WebFetchArgs) -> GenericCallView:
        return GenericCallView(title=f"Fetch {args.url}", kind="fetch")

    def present_result(args: WebFetchArgs, result: ToolResult) -> Any:
        status = meta_field(result.meta, "status_code", int)
        if status is None:
            return failure_card(f"Fetch {args.url}", result)
        redirect_to = meta_field(result.meta, "redirect_to", str)
        title = f"Fetch {args.url}"
        if redirect_to is not None:
            title += f": redirected to {redirect_to} (another origin, not followed)"
        return WebResultView(
            kind="fetch",
            title=title,
            url=meta_field(result.meta, "url", str) or args.url,
            status_code=status,
            content_type=meta_field(result.meta, "content_type", str),
            truncated=bool(meta_field(result.meta, "truncated", bool)),
        )

    return define_tool(
        name="web_fetch",
        description=(
            "Fetch an http(s) URL and return its content as text: HTML pages become Markdown, text and JSON "
            "are returned as is, binary content is not shown. At most max_length characters (default "
            "50000). Redirects within the same origin are followed (at most 5); a redirect to another "
            "origin is returned to you with its target, to fetch with a new call. Loopback, private and "
            "link-local addresses are refused unless the user allowed private networks."
        ),
        parameters=WebFetchArgs,
        output=Output(type=WebValue, render=_render, presentation_meta=_meta),
        execute=execute,
        concurrency_safe=True,
        present_call=present_call,
        present_result=present_result,
    )
