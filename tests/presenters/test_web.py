"""`web_fetch` against a real HTTP server on 127.0.0.1: HTML to Markdown, text types, charsets,
redirects and their limit, schemes, binary content, HTTP errors, size caps, timeouts, and its cards."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from presenters.web import web_fetch_tool
from registry_core import Agent, GenericCallView, ToolExecutionInput, ToolRegistry, WebResultView

from .conftest import Session, text_of

PAGE = b"""<!doctype html><html><head><title>Test Page</title><script>alert(1)</script></head>
<body><h1>Welcome</h1><p>Read the <a href="/docs/intro">intro</a> first.</p>
<ul><li>one</li><li>two</li></ul><pre>code  block</pre></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def send(self, status: int, body: bytes, content_type: str | None, **headers: str) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path
        if path == "/page":
            self.send(200, PAGE, "text/html; charset=utf-8")
        elif path == "/plain":
            self.send(200, b"just text\n", "text/plain")
        elif path == "/json":
            self.send(200, b'{"a": 1}', "application/json")
        elif path == "/latin":
            self.send(
                200,
                b'<html><head><meta charset="iso-8859-1"></head><body><p>caf\xe9</p></body></html>',
                "text/html",
            )
        elif path.startswith("/redirect/"):
            left = int(path.rsplit("/", 1)[1])
            self.send(302, b"", None, Location="/plain" if left == 0 else f"/redirect/{left - 1}")
        elif path == "/to-ftp":
            self.send(301, b"", None, Location="ftp://127.0.0.1/file")
        elif path == "/image":
            self.send(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 5000, "image/png")
        elif path == "/missing":
            self.send(404, b"<html><body><p>No such page</p></body></html>", "text/html")
        elif path == "/big":
            self.send(200, b"x" * (6 * 1024 * 1024), "text/plain")
        elif path == "/slow":
            time.sleep(2)
            self.send(200, b"late", "text/plain")
        else:
            self.send(500, b"unexpected path", "text/plain")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_html_becomes_markdown_with_a_web_card(session: Session, server: str) -> None:
    args = {"url": f"{server}/page"}

    result = await session.run("web_fetch", args)

    text = text_of(result)
    assert text.startswith(f"URL: {server}/page\nStatus: 200 OK\nTitle: Test Page\n")
    assert "# Welcome" in text and f"[intro]({server}/docs/intro)" in text
    assert "- one\n- two" in text and "```\ncode  block\n```" in text
    assert "alert" not in text
    card = session.result_card("web_fetch", args, result)
    assert card == WebResultView(
        kind="fetch",
        title=f"Fetch {server}/page",
        url=f"{server}/page",
        status_code=200,
        content_type="text/html; charset=utf-8",
        truncated=False,
    )
    assert session.call_card("web_fetch", args) == GenericCallView(title=f"Fetch {server}/page", kind="fetch")


async def test_text_json_and_charset_from_meta(session: Session, server: str) -> None:
    plain = await session.run("web_fetch", {"url": f"{server}/plain"})
    data = await session.run("web_fetch", {"url": f"{server}/json"})
    latin = await session.run("web_fetch", {"url": f"{server}/latin"})

    assert text_of(plain).endswith("\n\njust text\n")
    assert text_of(data).endswith('\n\n{"a": 1}')
    assert text_of(latin).endswith("\n\ncafé")


async def test_redirects_are_followed_up_to_five(session: Session, server: str) -> None:
    five = await session.run("web_fetch", {"url": f"{server}/redirect/4"})
    six = await session.run("web_fetch", {"url": f"{server}/redirect/5"})

    assert not five.is_error and five.meta["url"] == f"{server}/plain" and len(five.meta["redirects"]) == 5
    assert six.error is not None and six.error.code == "TOO_MANY_REDIRECTS"


async def test_only_http_and_https(session: Session, server: str) -> None:
    file_url = await session.run("web_fetch", {"url": "file:///etc/passwd"})
    to_ftp = await session.run("web_fetch", {"url": f"{server}/to-ftp"})

    assert file_url.error is not None and file_url.error.code == "UNSUPPORTED_URL"
    assert to_ftp.error is not None and to_ftp.error.code == "UNSUPPORTED_URL"


async def test_binary_content_is_reported_not_downloaded(session: Session, server: str) -> None:
    args = {"url": f"{server}/image"}
    result = await session.run("web_fetch", args)

    assert result.error is not None and result.error.code == "UNSUPPORTED_CONTENT"
    assert "image/png content (4.9 KB)" in result.error.message
    assert result.meta["bytes"] == 0
    card = session.result_card("web_fetch", args, result)
    assert isinstance(card, WebResultView) and card.status_code == 200


async def test_http_error_is_a_failure_that_keeps_the_status(session: Session, server: str) -> None:
    args = {"url": f"{server}/missing"}
    result = await session.run("web_fetch", args)

    assert result.error is not None and result.error.code == "HTTP_ERROR"
    assert result.error.message.startswith(f"HTTP 404 Not Found for {server}/missing.")
    assert "No such page" in result.error.message
    card = session.result_card("web_fetch", args, result)
    assert isinstance(card, WebResultView) and card.status_code == 404


async def test_size_caps(session: Session, server: str) -> None:
    capped = await session.run("web_fetch", {"url": f"{server}/big"})
    short = await session.run("web_fetch", {"url": f"{server}/plain", "max_length": 100})
    cut = await session.run("web_fetch", {"url": f"{server}/big", "max_length": 1000})

    assert capped.meta["bytes"] == 5 * 1024 * 1024 and capped.meta["truncated"] is True
    assert len(text_of(capped)) < 60_000  # the default max_length
    assert short.meta["truncated"] is False
    body = text_of(cut).split("\n\n", 1)[1]
    assert body == "x" * 1000 + "\n\n[Content truncated.]"


async def test_timeout_and_refused_connection(server: str) -> None:
    registry = ToolRegistry()
    registry.register(web_fetch_tool(timeout_s=0.3, total_s=1.0))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]

    agent = Agent(id="w", cwd="/")
    started = time.monotonic()
    slow = await registry.execute(
        ToolExecutionInput("1", "web_fetch", {"url": f"{server}/slow"}, agent=agent)
    )
    refused = await registry.execute(
        ToolExecutionInput("2", "web_fetch", {"url": f"http://127.0.0.1:{closed_port}/"}, agent=agent)
    )

    assert slow.error is not None and slow.error.code == "TIMEOUT"
    assert time.monotonic() - started < 1.9
    assert refused.error is not None and refused.error.code == "FETCH_FAILED"
