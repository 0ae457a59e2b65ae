"""`web_fetch` against real HTTP servers on 127.0.0.1: HTML to Markdown, text types, charsets, redirects
(same origin followed and bounded, another origin returned to the model), schemes, binary content, HTTP
errors, size caps, timeouts, its cards, and the network guard: non-public addresses refused before any
connection, after resolving the name once, on every hop.

Every test here runs under `network`: it records each connection attempt and name lookup, and lets only
loopback connections and numeric lookups through, so no test can send a packet off this machine or query
DNS whatever the code under test does. The tests that fetch from their own servers opt in to private
networks (`private_session`); names are resolved by an injected `FakeDNS`.
"""

from __future__ import annotations

import errno
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pytest

from presenters.web import web_fetch_tool
from registry_core import (
    Agent,
    GenericCallView,
    GenericResultView,
    ToolExecutionInput,
    ToolRegistry,
    WebResultView,
)

from .conftest import Session, text_of

PAGE = b"""<!doctype html><html><head><title>Test Page</title><script>alert(1)</script></head>
<body><h1>Welcome</h1><p>Read the <a href="/docs/intro">intro</a> first.</p>
<ul><li>one</li><li>two</li></ul><pre>code  block</pre></body></html>"""


class RecordingServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that records the connections it accepted and the requests it served."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.connections = 0
        self.requests: list[tuple[str, str | None]] = []  # (path, Host header)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.connections += 1
        return True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: RecordingServer

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
        self.server.requests.append((path, self.headers.get("Host")))
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
        elif path.startswith("/to?"):  # a redirect to wherever the query says
            self.send(302, b"", None, Location=path.split("?", 1)[1])
        elif path == "/loop":
            self.send(301, b"", None, Location="/loop")
        elif path == "/host":
            self.send(200, (self.headers.get("Host") or "").encode(), "text/plain")
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
            try:
                self.send(200, b"late", "text/plain")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first: that is what the test wants
        else:
            self.send(500, b"unexpected path", "text/plain")


@dataclass
class Network:
    connects: list[Any] = field(default_factory=list)  # every address a socket tried to connect to
    lookups: list[str] = field(default_factory=list)  # every host given to getaddrinfo


def _is_loopback(address: Any) -> bool:
    try:
        return isinstance(address, tuple) and ip_address(address[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def network(monkeypatch: pytest.MonkeyPatch) -> Network:
    """Records connection attempts and lookups; only loopback connections and numeric lookups go through."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    record = Network()
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        record.connects.append(address)
        if not _is_loopback(address):
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"the test blocks connecting to {address}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        record.connects.append(address)
        return real_connect_ex(self, address) if _is_loopback(address) else errno.ECONNREFUSED

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
        record.lookups.append(name)
        try:
            ip_address(name)  # text only: bytes would be read as a packed address
        except (TypeError, ValueError):
            raise socket.gaierror(socket.EAI_NONAME, f"the test blocks looking up {host!r}") from None
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return record


@dataclass
class FakeDNS:
    """The resolver injected into the tool: names map to addresses without any DNS query."""

    names: dict[str, list[str]]
    lookups: list[str] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.names:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is not in the test's names")
        return self.names[host]


@pytest.fixture
def dns() -> FakeDNS:
    return FakeDNS(
        {
            "rebind.example": ["127.0.0.1"],
            "metadata.example": ["169.254.169.254"],
            "mixed.example": ["8.8.8.8", "10.1.2.3"],  # never contacted: refused as a whole
            "pinned.example": ["127.0.0.1"],
        }
    )


@pytest.fixture
def fetcher(tmp_path: Path, dns: FakeDNS) -> Callable[..., Session]:
    """A session whose `web_fetch` resolves names with `dns`; private networks only when asked."""

    def make(*, allow_private_network: bool) -> Session:
        registry = ToolRegistry()
        registry.register(web_fetch_tool(allow_private_network=allow_private_network, resolver=dns))
        return Session(registry, Agent(id="w", cwd=str(tmp_path), roots=(str(tmp_path),)))

    return make


@pytest.fixture
def private_session(make_session: Callable[..., Session]) -> Session:
    """The built-in tools with private networks allowed: these tests fetch from their own 127.0.0.1."""
    return make_session(allow_private_network=True)


@pytest.fixture
def start_server() -> Iterator[Callable[..., RecordingServer]]:
    """`start_server()` serves HTTP on 127.0.0.1; `start_server(tls=context)` serves HTTPS."""
    servers: list[RecordingServer] = []

    def start(tls: ssl.SSLContext | None = None) -> RecordingServer:
        httpd = RecordingServer()
        if tls is not None:
            httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        thread.start()
        servers.append(httpd)
        return httpd

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server(start_server: Callable[..., RecordingServer]) -> str:
    return start_server().url


async def test_html_becomes_markdown_with_a_web_card(private_session: Session, server: str) -> None:
    args = {"url": f"{server}/page"}

    result = await private_session.run("web_fetch", args)

    text = text_of(result)
    assert text.startswith(f"URL: {server}/page\nStatus: 200 OK\nTitle: Test Page\n")
    assert "# Welcome" in text and f"[intro]({server}/docs/intro)" in text
    assert "- one\n- two" in text and "```\ncode  block\n```" in text
    assert "alert" not in text
    card = private_session.result_card("web_fetch", args, result)
    assert card == WebResultView(
        kind="fetch",
        title=f"Fetch {server}/page",
        url=f"{server}/page",
        status_code=200,
        content_type="text/html; charset=utf-8",
        truncated=False,
    )
    assert private_session.call_card("web_fetch", args) == GenericCallView(
        title=f"Fetch {server}/page", kind="fetch"
    )


async def test_text_json_and_charset_from_meta(private_session: Session, server: str) -> None:
    plain = await private_session.run("web_fetch", {"url": f"{server}/plain"})
    data = await private_session.run("web_fetch", {"url": f"{server}/json"})
    latin = await private_session.run("web_fetch", {"url": f"{server}/latin"})

    assert text_of(plain).endswith("\n\njust text\n")
    assert text_of(data).endswith('\n\n{"a": 1}')
    assert text_of(latin).endswith("\n\ncafé")


async def test_redirects_are_followed_up_to_five(private_session: Session, server: str) -> None:
    five = await private_session.run("web_fetch", {"url": f"{server}/redirect/4"})
    six = await private_session.run("web_fetch", {"url": f"{server}/redirect/5"})

    assert not five.is_error and five.meta["url"] == f"{server}/plain" and len(five.meta["redirects"]) == 5
    assert six.error is not None and six.error.code == "TOO_MANY_REDIRECTS"


async def test_only_http_and_https(private_session: Session, server: str) -> None:
    file_url = await private_session.run("web_fetch", {"url": "file:///etc/passwd"})
    to_ftp = await private_session.run("web_fetch", {"url": f"{server}/to-ftp"})

    assert file_url.error is not None and file_url.error.code == "UNSUPPORTED_URL"
    assert to_ftp.error is not None and to_ftp.error.code == "UNSUPPORTED_URL"


async def test_binary_content_is_reported_not_downloaded(private_session: Session, server: str) -> None:
    args = {"url": f"{server}/image"}
    result = await private_session.run("web_fetch", args)

    assert result.error is not None and result.error.code == "UNSUPPORTED_CONTENT"
    assert "image/png content (4.9 KB)" in result.error.message
    assert result.meta["bytes"] == 0
    card = private_session.result_card("web_fetch", args, result)
    assert isinstance(card, WebResultView) and card.status_code == 200


async def test_http_error_is_a_failure_that_keeps_the_status(private_session: Session, server: str) -> None:
    args = {"url": f"{server}/missing"}
    result = await private_session.run("web_fetch", args)

    assert result.error is not None and result.error.code == "HTTP_ERROR"
    assert result.error.message.startswith(f"HTTP 404 Not Found for {server}/missing.")
    assert "No such page" in result.error.message
    card = private_session.result_card("web_fetch", args, result)
    assert isinstance(card, WebResultView) and card.status_code == 404


async def test_size_caps(private_session: Session, server: str) -> None:
    capped = await private_session.run("web_fetch", {"url": f"{server}/big"})
    short = await private_session.run("web_fetch", {"url": f"{server}/plain", "max_length": 100})
    cut = await private_session.run("web_fetch", {"url": f"{server}/big", "max_length": 1000})

    assert capped.meta["bytes"] == 5 * 1024 * 1024 and capped.meta["truncated"] is True
    assert len(text_of(capped)) < 60_000  # the default max_length
    assert short.meta["truncated"] is False
    body = text_of(cut).split("\n\n", 1)[1]
    assert body == "x" * 1000 + "\n\n[Content truncated.]"


async def test_timeout_and_refused_connection(server: str) -> None:
    registry = ToolRegistry()
    registry.register(web_fetch_tool(timeout_s=0.3, total_s=1.0, allow_private_network=True))
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


# --- the network guard: refused before any connection ----------------------------------------------


async def test_the_default_refuses_its_own_loopback_server_before_connecting(
    session: Session, start_server: Callable[..., RecordingServer], network: Network
) -> None:
    httpd = start_server()
    args = {"url": f"{httpd.url}/plain"}

    result = await session.run("web_fetch", args)

    assert result.error is not None and result.error.code == "ADDRESS_REFUSED"
    assert "127.0.0.1 is a loopback address" in result.error.message
    assert "--allow-private-network" in result.error.message
    assert network.connects == [] and httpd.connections == 0
    card = session.result_card("web_fetch", args, result)
    assert isinstance(card, GenericResultView) and card.title == f"Fetch {httpd.url}/plain"
    assert card.content and "loopback" in (card.content[0].text or "")


@pytest.mark.parametrize(
    ("url", "address_class"),
    [
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fd00:ec2::254]/latest/meta-data/", "metadata"),
        ("http://metadata.example/latest/meta-data/", "metadata"),
        ("http://10.0.0.1/", "private"),
        ("http://192.168.1.1:8080/", "private"),
        ("http://mixed.example/", "private"),
        ("http://100.64.0.1/", "shared (carrier-grade NAT)"),
        ("http://[::ffff:127.0.0.1]:8080/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("http://127.1:6379/", "loopback"),
        ("http://rebind.example/", "loopback"),
        ("http://0.0.0.0:8000/", "unspecified"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fc00::1]/", "unique local"),
        ("http://224.0.0.1/", "multicast"),
        ("http://198.18.0.1/", "reserved"),
    ],
)
async def test_a_non_public_address_is_refused_without_a_connection_attempt(
    fetcher: Callable[..., Session], network: Network, url: str, address_class: str
) -> None:
    result = await fetcher(allow_private_network=False).run("web_fetch", {"url": url})

    assert result.error is not None and result.error.code == "ADDRESS_REFUSED", result.error
    assert result.meta["address_class"] == address_class
    assert network.connects == [] and network.lookups == []


async def test_metadata_addresses_are_refused_even_with_private_networks_allowed(
    fetcher: Callable[..., Session], network: Network
) -> None:
    session = fetcher(allow_private_network=True)
    for url in (
        "http://169.254.169.254/latest/meta-data/",
        "http://metadata.example/",
        "http://[::ffff:a9fe:a9fe]/",
    ):
        result = await session.run("web_fetch", {"url": url})
        assert result.error is not None and result.error.code == "ADDRESS_REFUSED", url
        assert "metadata" in result.error.message and "never" in result.error.message
    assert network.connects == []


async def test_a_name_is_resolved_once_and_its_checked_address_connected_to(
    fetcher: Callable[..., Session],
    start_server: Callable[..., RecordingServer],
    network: Network,
    dns: FakeDNS,
) -> None:
    httpd = start_server()
    port = httpd.server_address[1]

    result = await fetcher(allow_private_network=True).run(
        "web_fetch", {"url": f"http://pinned.example:{port}/host"}
    )

    assert not result.is_error and text_of(result).endswith(f"\n\npinned.example:{port}")
    assert dns.lookups == ["pinned.example"]
    assert network.lookups == []  # no second resolution of the name: the socket got the checked address
    assert network.connects == [("127.0.0.1", port)]


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for the name `pinned.example` only."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=pinned.example",
         "-addext", "subjectAltName=DNS:pinned.example"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


async def test_https_keeps_the_name_for_sni_and_the_certificate_check(
    fetcher: Callable[..., Session],
    start_server: Callable[..., RecordingServer],
    network: Network,
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cert, key = certificate
    server_names: list[str | None] = []
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    tls.sni_callback = lambda _sock, name, _ctx: server_names.append(name)
    httpd = start_server(tls=tls)
    port = httpd.server_address[1]
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the only authority the client trusts
    session = fetcher(allow_private_network=True)

    by_name = await session.run("web_fetch", {"url": f"https://pinned.example:{port}/host"})
    by_address = await session.run("web_fetch", {"url": f"https://127.0.0.1:{port}/host"})

    assert not by_name.is_error, by_name.error
    assert text_of(by_name).endswith(f"\n\npinned.example:{port}")
    assert server_names[0] == "pinned.example"
    assert by_address.error is not None and by_address.error.code == "FETCH_FAILED"  # the cert names the name
    assert network.connects == [("127.0.0.1", port)] * 2


# --- redirects: one origin followed, another returned to the model ------------------------------------


async def test_a_redirect_to_another_port_is_not_followed(
    private_session: Session, start_server: Callable[..., RecordingServer], network: Network
) -> None:
    first, other = start_server(), start_server()
    target = f"{other.url}/plain"
    args = {"url": f"{first.url}/to?{target}"}

    result = await private_session.run("web_fetch", args)

    assert not result.is_error
    assert result.meta["status_code"] == 302 and result.meta["redirect_to"] == target
    assert result.meta["url"] == args["url"]
    assert other.connections == 0 and [a[1] for a in network.connects] == [first.server_address[1]]
    assert f'call web_fetch with url="{target}"' in text_of(result)
    card = private_session.result_card("web_fetch", args, result)
    assert isinstance(card, WebResultView) and card.status_code == 302
    assert card.title == f"Fetch {args['url']}: redirected to {target} (another origin, not followed)"


async def test_a_redirect_to_the_metadata_address_is_refused_without_a_connection(
    private_session: Session, start_server: Callable[..., RecordingServer], network: Network
) -> None:
    httpd = start_server()
    args = {"url": f"{httpd.url}/to?http://169.254.169.254/latest/meta-data/iam/"}

    # The call itself is allowed (no policy here, as after an "always allow" rule): the guard still refuses.
    result = await private_session.run("web_fetch", args)

    assert result.error is not None and result.error.code == "ADDRESS_REFUSED"
    assert result.error.message.startswith(f"{args['url']} redirected to http://169.254.169.254/")
    assert "metadata" in result.error.message
    assert network.connects == [("127.0.0.1", httpd.server_address[1])]


async def test_a_redirect_to_a_name_is_returned_and_refused_when_fetched(
    fetcher: Callable[..., Session], start_server: Callable[..., RecordingServer], network: Network
) -> None:
    httpd = start_server()
    session = fetcher(allow_private_network=True)

    redirected = await session.run("web_fetch", {"url": f"{httpd.url}/to?http://metadata.example/"})
    followed = await session.run("web_fetch", {"url": redirected.meta["redirect_to"]})

    assert not redirected.is_error and redirected.meta["redirect_to"] == "http://metadata.example/"
    assert followed.error is not None and followed.error.code == "ADDRESS_REFUSED"
    assert network.connects == [("127.0.0.1", httpd.server_address[1])]


async def test_same_origin_redirects_are_followed_each_on_a_checked_address(
    private_session: Session, start_server: Callable[..., RecordingServer], network: Network
) -> None:
    httpd = start_server()

    result = await private_session.run("web_fetch", {"url": f"{httpd.url}/redirect/2"})

    assert not result.is_error and result.meta["url"] == f"{httpd.url}/plain"
    assert list(result.meta["redirects"]) == [
        f"{httpd.url}/redirect/1",
        f"{httpd.url}/redirect/0",
        f"{httpd.url}/plain",
    ]
    assert result.meta["redirect_to"] is None
    assert [path for path, _host in httpd.requests] == ["/redirect/2", "/redirect/1", "/redirect/0", "/plain"]
    assert all(_is_loopback(a) for a in network.connects)


async def test_a_redirect_loop_ends_after_five_redirects(
    private_session: Session, start_server: Callable[..., RecordingServer]
) -> None:
    httpd = start_server()

    result = await private_session.run("web_fetch", {"url": f"{httpd.url}/loop"})

    assert result.error is not None and result.error.code == "TOO_MANY_REDIRECTS"
    assert len(httpd.requests) == 6
