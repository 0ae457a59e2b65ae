"""`acp-bridge lsp`: the agent served to LSP-only editors over stdio (Content-Length framing, pygls 2.x).

The language server is a thin shell around the same core as the ACP face: `initialize` builds an
`LspChannel` (the core's `ClientChannel`) and a `SessionManager`, and opens one session whose cwd is the
first workspace folder (else `rootUri`, else the process cwd). Commands (`workspace/executeCommand`):
- `acpBridge.prompt` (argument: the prompt text, or a list of ACP content blocks): runs one prompt in the
  current session and answers `{sessionId, stopReason, reply}` when the turn ends;
- `acpBridge.cancel`: cancels the current session's prompt (model stream, tools, pending questions);
- `acpBridge.newSession` (optional argument: an absolute cwd): a fresh session (history, rules) becomes
  current; the previous one is closed (a prompt still running there is cancelled, and has stopped when
  the command answers).
- `acpBridge.setConfigOption` (arguments: an option id, `mode` / `model` / `thought_level`, and its
  value): changes the current session's option and answers `{sessionId, configOptions}` (with no
  arguments, only answers them).
- `acpBridge.checkpoints` (no argument), `acpBridge.rewind` (a turn number, optionally `true` to overwrite
  files changed since by someone other than the agent) and `acpBridge.revertFile` (a tool call id, an
  absolute path, optionally `true`): the checkpoints of the current session and undo, answering as the ACP
  face's `_acpBridge/checkpoints`, `_acpBridge/rewind` and `_acpBridge/revertFile` do (docs/checkpoints.md).
`shutdown`, `exit`, a closed stdin, SIGTERM, SIGHUP and the editor no longer reading our output (EPIPE)
cancel every prompt, let tools stop (every process they started is killed), end open progress and leave
no child process behind; SIGINT (Ctrl+C in the editor's terminal) only cancels the running prompt, as
`acpBridge.cancel` does, like the ACP face. The protocol's stdio moves to private descriptors first, so a
stray print or a tool's child can never write into (or read from) the LSP stream.

Must not: run tools, build card shapes or decide permissions (the core and `acp_bridge.mapping` do), or
block the event loop (stdin and stdout are asyncio pipes; pygls' own blocking stdio is not used).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
from collections.abc import Callable, Generator
from typing import Any, Literal

from lsprotocol import types
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
)
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import from_fs_path, to_fs_path

from acp_bridge import __version__
from acp_bridge.common.errors import BridgeError, ConnectionClosed, RemoteError, quoted
from acp_bridge.mcp.config import parse_any
from acp_bridge.runtime.boot import cancel_running_prompts, handling_signals
from acp_bridge.runtime.stdio import READ_CHUNK, FrameWriter, Stdio, claim_stdio, watchable
from acp_bridge.session.manager import SessionManager
from acp_bridge.session.session import Session

from .channel import LspChannel, OpenDocument
from .options import EditorFeatures, LspOptions, session_cwd

log = logging.getLogger(__name__)

PROMPT = "acpBridge.prompt"
CANCEL = "acpBridge.cancel"
NEW_SESSION = "acpBridge.newSession"
SET_CONFIG_OPTION = "acpBridge.setConfigOption"
CHECKPOINTS = "acpBridge.checkpoints"
REWIND = "acpBridge.rewind"
REVERT_FILE = "acpBridge.revertFile"

# Builds the core for one connection, once `initialize` said which model (options.model) to use.
ManagerFactory = Callable[[LspChannel, LspOptions], SessionManager]
_OUR_IDS = "acp-bridge-"  # the id prefix of the requests we send to the editor


# --- transport --------------------------------------------------------------------------------------


class _BytesWriter(FrameWriter):
    """The one non-blocking stdio writer (order, backlog, drain, close), fed pygls' framed bytes
    (pygls' writer interface is `write` and `close`; `close` is the base class's)."""

    def write(self, data: bytes) -> None:
        self.send_bytes(data)


class _InputProtocol(asyncio.Protocol):
    def __init__(self, owner: _StdinReader) -> None:
        self._owner = owner

    def data_received(self, data: bytes) -> None:
        self._owner.feed(data)

    def eof_received(self) -> bool | None:
        self._owner.stop()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.stop()


class _StdinReader:
    """pygls' async reader interface (readline / readexactly) over stdin as an asyncio pipe, with
    `stop()` to end the read loop from inside (the `exit` notification)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._reader = asyncio.StreamReader(limit=1024 * 1024)
        self._transport: asyncio.ReadTransport | None = None
        self._stopped = False

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if not watchable(self._fd):
            # A regular file or a device: a daemon thread reads it, so it never holds up the exit.
            threading.Thread(target=self._pump, args=(loop,), name="acp-bridge-stdin", daemon=True).start()
            return
        pipe = open(self._fd, "rb", buffering=0, closefd=False)  # noqa: SIM115, ASYNC230 - the transport owns it
        self._transport, _ = await loop.connect_read_pipe(lambda: _InputProtocol(self), pipe)

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            while chunk := os.read(self._fd, READ_CHUNK):
                loop.call_soon_threadsafe(self.feed, chunk)
        except OSError as exc:
            log.warning("reading stdin failed: %s", exc)
        finally:
            try:
                loop.call_soon_threadsafe(self.stop)
            except RuntimeError:
                pass  # the loop is already closed: nobody is reading any more

    def feed(self, data: bytes) -> None:
        if not self._stopped:
            self._reader.feed_data(data)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._reader.feed_eof()
        if self._transport is not None:
            self._transport.close()

    async def readline(self) -> bytes:
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial  # EOF mid-message: pygls logs the broken body, then sees EOF


class _PyglsTransport:
    """The `LspTransport` over pygls' protocol: typed notifications and requests, our own bookkeeping of
    pending requests so none outlives the connection, and `$/cancelRequest` when a waiter goes away."""

    def __init__(self, protocol: LanguageServerProtocol, writer: _BytesWriter) -> None:
        self._protocol = protocol
        self._writer = writer
        self._closed = False
        self._ids = itertools.count(1)
        self._pending: set[asyncio.Future[Any]] = set()

    @property
    def closed(self) -> bool:
        return self._closed or self._writer.closed

    def notify(self, method: str, params: Any) -> None:
        if not self.closed:
            self._protocol.notify(method, params)

    async def request(self, method: str, params: Any) -> Any:
        if self.closed:
            raise ConnectionClosed(f"cannot send {method}: the editor connection is closed")
        loop = asyncio.get_running_loop()
        mine: asyncio.Future[Any] = loop.create_future()
        msg_id = f"{_OUR_IDS}{next(self._ids)}"

        def settle(answer: Any) -> None:
            if mine.done():
                return  # withdrawn, or failed when the connection closed
            if answer.cancelled():
                # pygls cancels every outstanding request when `shutdown` arrives.
                mine.set_exception(ConnectionClosed(f"{method} was abandoned: the server is shutting down"))
            elif (exc := answer.exception()) is not None:
                mine.set_exception(_remote_error(exc))
            else:
                mine.set_result(answer.result())

        def on_done(answer: Any) -> None:
            try:
                loop.call_soon_threadsafe(settle, answer)
            except RuntimeError:
                pass  # the loop is closed: nobody awaits this any more

        future = self._protocol.send_request(method, params, msg_id=msg_id)
        future.add_done_callback(on_done)
        self._pending.add(mine)
        try:
            return await mine
        except asyncio.CancelledError:
            if not self.closed:
                # The user need not answer a question nobody waits for (an editor may close its prompt).
                self._protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        finally:
            self._pending.discard(mine)

    def backlog(self) -> int:
        return self._writer.backlog()

    async def drain(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        """Fail every pending request with ConnectionClosed; later requests fail at once."""
        self._closed = True
        for future in list(self._pending):
            if not future.done():
                future.set_exception(ConnectionClosed("the editor connection closed"))


def _remote_error(exc: BaseException) -> Exception:
    if isinstance(exc, JsonRpcException):
        return RemoteError(exc.code, exc.message, exc.data)
    return RemoteError(-32603, f"{type(exc).__name__}: {exc}")


class _Documents:
    """`EditorDocuments` over pygls' workspace (the documents the editor opened and keeps in sync)."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server

    def find(self, path: str) -> OpenDocument | None:
        wanted = os.path.normpath(path)
        for uri, document in self._server.workspace.text_documents.items():
            local = to_fs_path(uri) if uri.startswith("file:") else None
            if local is not None and os.path.normpath(local) == wanted:
                return OpenDocument(uri, document.source, document.version)
        return None

    def uri_for(self, path: str) -> str:
        document = self.find(path)
        if document is not None:
            return document.uri
        uri = from_fs_path(path)
        return uri if uri is not None else "file://" + path

    def units(self, text: str) -> int:
        return int(self._server.workspace.position_codec.client_num_units(text))


# --- the face ---------------------------------------------------------------------------------------


def _bridge_error(exc: BridgeError) -> JsonRpcException:
    return JsonRpcException(message=exc.message, code=exc.code, data=exc.data)


class LspFace:
    """One initialized connection: the channel, the core, and the current session."""

    def __init__(
        self, server: BridgeServer, transport: _PyglsTransport, params: types.InitializeParams
    ) -> None:
        self.options = LspOptions.from_init(params.initialization_options)
        self.features = EditorFeatures.from_lsp(params.capabilities)
        cwd = session_cwd(params)
        if cwd is None:
            cwd = os.getcwd()
            log.warning("the editor sent no workspace folder or rootUri; using %s as the session cwd", cwd)
        client = params.client_info.name if params.client_info is not None else None
        self.channel = LspChannel(
            transport,
            _Documents(server),
            options=self.options,
            features=self.features,
            cwd_of=self._cwd_of,
            client_name=client,
        )
        self.manager = server.make_manager(self.channel, self.options)
        self.manager.catalog.prefetch()  # the model list (and its windows), for the session's options
        # Every session of the connection gets them; an entry that cannot be used is reported in it.
        self.mcp_servers = parse_any(self.options.mcp_servers)
        self.session: Session = self.manager.new_session(cwd, mcp_servers=self.mcp_servers)
        self._closing: asyncio.Future[None] | None = None
        log.info(
            "initialized by %s: cwd %s, %s, %s",
            client or "an unnamed editor",
            cwd,
            self.options,
            self.features,
        )

    def _cwd_of(self, session_id: str) -> str | None:
        session = self.manager.sessions.get(session_id)
        return session.cwd if session is not None else None

    def announce(self) -> None:
        """After `initialized`: say what is not going to work, and describe the session to rich clients."""
        for warning in self.options.warnings:
            self.channel.show_message(f"acp-bridge: {warning}")
        if not self.channel.asks:
            self.channel.log_message(
                "acp-bridge: this editor cannot answer approval prompts (no window.showMessage capability); "
                "calls that need approval will be denied, visibly",
                types.MessageType.Warning,
            )
        self.session.send(self.session.available_commands_update())

    async def prompt(self, args: tuple[object, ...]) -> dict[str, Any]:
        if len(args) != 1:
            raise JsonRpcInvalidParams(f"{PROMPT} takes one argument, the prompt text (got {len(args)})")
        raw = args[0]
        if isinstance(raw, str):
            blocks: object = [{"type": "text", "text": raw}]
        elif isinstance(raw, list):
            blocks = raw  # ACP content blocks (text, resource_link); the core validates them
        else:
            raise JsonRpcInvalidParams(f"{PROMPT}: the argument must be the prompt text (a string)")
        session = self.session
        if session.busy:
            # Checked here too so the reply collector of the running prompt is left alone.
            raise JsonRpcInvalidRequest(
                f"session {session.id} is already running a prompt: wait for it, or run {CANCEL} first"
            )
        self.channel.begin_reply(session.id)
        try:
            stop = await session.prompt(blocks)
        except BridgeError as exc:
            raise _bridge_error(exc) from exc
        finally:
            reply = self.channel.take_reply(session.id)
            # The core ends every card it opened; this only guards against a progress left open by a bug.
            self.channel.end_progress("the turn ended", session.id)
        return {"sessionId": session.id, "stopReason": stop, "reply": reply}

    def cancel(self) -> None:
        self.session.cancel()

    async def new_session(self, args: tuple[object, ...]) -> dict[str, Any]:
        """Make a fresh session current, then close the previous one (its prompt is cancelled and has
        stopped when this answers; the manager forgets it and its log is ended, so none accumulate)."""
        cwd = args[0] if args else self.session.cwd
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise JsonRpcInvalidParams(
                f"{NEW_SESSION}: the argument must be an absolute path, got {quoted(cwd)}"
            )
        try:
            session = self.manager.new_session(cwd, mcp_servers=self.mcp_servers)
        except BridgeError as exc:
            raise _bridge_error(exc) from exc
        previous, self.session = self.session, session
        session.send(session.available_commands_update())
        await self.manager.close(previous.id)
        return {"sessionId": session.id, "cwd": session.cwd}

    async def set_config_option(self, args: tuple[object, ...]) -> dict[str, Any]:
        """Change one config option of the current session (none: just list them), once the model list
        is loaded."""
        if len(args) not in (0, 2):
            raise JsonRpcInvalidParams(f"{SET_CONFIG_OPTION} takes an option id and a value, got {len(args)}")
        choice = _option_choice(args) if args else None
        await self.manager.catalog.load()
        session = self.session
        try:
            options = session.set_config_option(*choice) if choice else session.config_options()
        except BridgeError as exc:
            raise _bridge_error(exc) from exc
        return {"sessionId": session.id, "configOptions": options}

    async def undo(self, command: str, args: tuple[object, ...]) -> dict[str, Any]:
        """`acpBridge.checkpoints`, `acpBridge.rewind` and `acpBridge.revertFile` on the current session."""
        undo = self.session.undo
        force = len(args) > 0 and args[-1] is True
        try:
            if command == CHECKPOINTS:
                return {"sessionId": self.session.id, "turns": undo.listing()}
            if command == REWIND:
                turn = args[0] if args else None
                if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
                    raise JsonRpcInvalidParams(f"{REWIND} takes a turn number (1 or more), got {turn!r}")
                return (await undo.rewind(turn, force=force)).to_json()
            call_id, path = (args[0], args[1]) if len(args) >= 2 else (None, None)
            if not isinstance(call_id, str) or not isinstance(path, str) or not os.path.isabs(path):
                raise JsonRpcInvalidParams(f"{REVERT_FILE} takes a tool call id and an absolute path")
            return (await undo.revert_file(call_id, path, force=force)).to_json()
        except BridgeError as exc:
            raise _bridge_error(exc) from exc

    async def close(self, why: str) -> None:
        """Cancel every prompt and wait for the core to stop (tools killed), then end open progress.
        Every caller (shutdown, then EOF) waits for the same, single cleanup."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close(why))
        await asyncio.shield(self._closing)

    async def _close(self, why: str) -> None:
        await self.manager.shutdown()
        self.channel.end_progress(why)
        await self.channel.aclose()


def _option_choice(args: tuple[object, ...]) -> tuple[str, str]:
    """`acpBridge.setConfigOption`'s option id and value."""
    config_id, value = args
    if not isinstance(config_id, str) or not isinstance(value, str):
        raise JsonRpcInvalidParams(f"{SET_CONFIG_OPTION}: the option id and the value must be strings")
    return config_id, value


class _BridgeProtocol(LanguageServerProtocol):
    """pygls' protocol with `exit` changed: it ends our read loop (so cleanup runs in order) instead of
    calling sys.exit() from inside an event-loop callback; and an `exit` that arrives while `shutdown` is
    still stopping the core (a client that does not wait for the answer) takes effect once it is done."""

    _server: BridgeServer

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        self._server.shutdown_state = "stopping"  # now, before our (async) handler even starts
        return (yield from super().lsp_shutdown(*args))

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        server = self._server
        server.exit_code = 0 if server.shutdown_state != "running" else 1
        if server.shutdown_state == "stopping":
            server.exit_pending = True  # `_shutdown` stops reading once its answer is out
        else:
            server.stop_reading()
        yield from ()  # pygls drives built-in handlers as generators


class BridgeServer(LanguageServer):
    def __init__(self, make_manager: ManagerFactory) -> None:
        super().__init__(
            "acp-bridge",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=_BridgeProtocol,
        )
        self.make_manager = make_manager
        self.face: LspFace | None = None
        self.transport: _PyglsTransport | None = None
        self.exit_code: int | None = None
        self.stop_reading: Callable[[], None] = lambda: None
        self.shutdown_state: Literal["running", "stopping", "stopped"] = "running"
        self.exit_pending = False

    def require_face(self) -> LspFace:
        if self.face is None:
            raise JsonRpcException(message="the server is not initialized", code=-32002)
        return self.face

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls calls this for every failed handler and bad frame. A request's error already went back
        # to the editor as its response (e.g. "already running a prompt"); the rest are ours to log, not
        # the user's to read in a popup (pygls' default shows them with window/showMessage).
        if source is FeatureRequestError:
            log.debug("request answered with an error: %s", error)
            return
        log.error("LSP protocol error (%s): %s", getattr(source, "__name__", source), error)


async def _initialize(ls: BridgeServer, params: types.InitializeParams) -> None:
    if ls.transport is None:
        raise JsonRpcException(message="no transport", code=-32603)
    try:
        ls.face = LspFace(ls, ls.transport, params)
    except BridgeError as exc:
        raise _bridge_error(exc) from exc


def _initialized(ls: BridgeServer, params: types.InitializedParams) -> None:
    if ls.face is not None:
        ls.face.announce()


async def _shutdown(ls: BridgeServer, params: None) -> None:
    try:
        if ls.face is not None:
            await ls.face.close("the editor shut the server down")
    finally:
        ls.shutdown_state = "stopped"
        if ls.exit_pending:
            # pygls sends this request's answer from the callbacks that run right after we return.
            asyncio.get_running_loop().call_later(0.05, ls.stop_reading)


async def _prompt(ls: BridgeServer, *args: object) -> dict[str, Any]:
    return await ls.require_face().prompt(args)


def _cancel(ls: BridgeServer, *args: object) -> None:
    ls.require_face().cancel()


async def _new_session(ls: BridgeServer, *args: object) -> dict[str, Any]:
    return await ls.require_face().new_session(args)


async def _set_config_option(ls: BridgeServer, *args: object) -> dict[str, Any]:
    return await ls.require_face().set_config_option(args)


async def _checkpoints(ls: BridgeServer, *args: object) -> dict[str, Any]:
    return await ls.require_face().undo(CHECKPOINTS, args)


async def _rewind(ls: BridgeServer, *args: object) -> dict[str, Any]:
    return await ls.require_face().undo(REWIND, args)


async def _revert_file(ls: BridgeServer, *args: object) -> dict[str, Any]:
    return await ls.require_face().undo(REVERT_FILE, args)


async def _answer_received(protocol: LanguageServerProtocol, within: float) -> None:
    """Give requests that arrived before EOF up to `within` seconds to be answered: a client may close
    its end of stdin and still read ours (and pipelined requests arrive together with the EOF)."""
    # pygls keeps every running handler in `_request_futures` (private, stable in the pinned 2.1.1),
    # together with our own outgoing requests, which are ours to fail, not to wait for.
    waiting: list[asyncio.Future[Any]] = []
    for key, future in list(protocol._request_futures.items()):
        if str(key).startswith(_OUR_IDS) or future.done():
            continue
        waiting.append(future if isinstance(future, asyncio.Future) else asyncio.wrap_future(future))
    if waiting:
        await asyncio.wait(waiting, timeout=within)
    for _ in range(3):
        await asyncio.sleep(0)  # answers computed in done-callbacks are sent in the next iterations


def build_server(make_manager: ManagerFactory) -> BridgeServer:
    server = BridgeServer(make_manager)
    server.feature(types.INITIALIZE)(_initialize)
    server.feature(types.INITIALIZED)(_initialized)
    server.feature(types.SHUTDOWN)(_shutdown)
    server.command(PROMPT)(_prompt)
    server.command(CANCEL)(_cancel)
    server.command(NEW_SESSION)(_new_session)
    server.command(SET_CONFIG_OPTION)(_set_config_option)
    server.command(CHECKPOINTS)(_checkpoints)
    server.command(REWIND)(_rewind)
    server.command(REVERT_FILE)(_revert_file)
    return server


async def serve_lsp(make_manager: ManagerFactory, *, stdio: Stdio | None = None) -> int:
    """Serve LSP on this process's stdio until `exit`, stdin EOF, SIGTERM, SIGHUP or the editor stops
    reading our output (SIGINT cancels the running prompt). Returns the exit status: 0, or 1 for an
    `exit` without `shutdown` (as the LSP specification asks)."""
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # pygls logs every frame at INFO; that belongs to --log-level debug only.
        logging.getLogger("pygls").setLevel(logging.WARNING)
    in_fd, out_fd = stdio if stdio is not None else claim_stdio()
    server = build_server(make_manager)
    reader = _StdinReader(in_fd)
    writer = _BytesWriter(out_fd)
    await reader.start()
    await writer.start()
    server.protocol.set_writer(writer)
    server.transport = transport = _PyglsTransport(server.protocol, writer)
    server.stop_reading = reader.stop
    writer.on_lost = reader.stop  # nobody reads our answers any more: stop as on EOF

    def interrupt() -> None:
        if server.face is not None:
            cancel_running_prompts(server.face.manager)

    try:
        # An editor that gives up on us (or a closed terminal) stops us as EOF does: the same cleanup runs.
        with handling_signals(stop=reader.stop, interrupt=interrupt):
            try:
                await run_async(
                    stop_event=threading.Event(),
                    reader=reader,
                    protocol=server.protocol,
                    logger=log,
                    error_handler=server.report_server_error,
                )
                log.info("the editor closed the connection" if server.exit_code is None else "exit received")
            finally:
                if server.face is not None:
                    await server.face.close("the editor closed the connection")
                # Running prompts are cancelled by now: what is left (a `shutdown` still stopping the core,
                # pipelined before EOF) ends soon, but on a busy machine not within a fixed half second.
                await _answer_received(server.protocol, within=5.0)
                if server.face is not None:  # an `initialize` that was still being handled at EOF
                    await server.face.close("the editor closed the connection")
                transport.close()
                await writer.aclose()
    finally:
        try:
            # The pipe transport made stdin non-blocking; a terminal shared with a shell must not stay so.
            os.set_blocking(in_fd, True)
        except OSError:
            pass
    return server.exit_code if server.exit_code is not None else 0
