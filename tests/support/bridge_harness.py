"""The bridge as a real subprocess over real pipes, driven by the ACP SDK's client side.

`Bridge.start(...)` spawns `python -m acp_bridge serve` with a scripted model file; every stdout line is
tapped raw (so tests can assert every line is JSON-RPC, and see frames the SDK would drop, like an error
with `id: null`) and then fed to an SDK `ClientSideConnection`. Frames the bridge sends are validated
against the SDK's pydantic schema as they arrive; `schema_errors` collects any mismatch.

`RecordingClient` is the client: it records updates and answers permission requests through a policy
function (default: allow once), optionally serving `fs/*` from an in-memory buffer map.

The unstable session updates the SDK does not know yet (`notice`, `compaction_update`,
`compaction_summary_chunk`) are validated against `acp_unstable_schema` instead; `request` sends any
method with raw params (capabilities and methods the SDK's client does not have).

The answers to the client's requests are validated too, by the method each answers (known from the
request as it was written to the bridge's stdin): against the SDK's model of the answer, and, for the
parts the SDK does not check (`session/set_title`, `sessionCapabilities.title`, a prompt's `usage`),
against `acp_unstable_schema.answer_problems`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import psutil
from acp import schema
from acp.client.connection import ClientSideConnection
from acp.exceptions import RequestError
from pydantic import TypeAdapter, ValidationError

from .acp_unstable_schema import UNSTABLE_UPDATES, answer_problems, tool_call_name_problems, validate_update

REPO = Path(__file__).resolve().parents[2]
LINE_LIMIT = 64 * 1024 * 1024

PermissionPolicy = Callable[
    [str, dict[str, Any], list[dict[str, Any]]], Awaitable[dict[str, Any]] | dict[str, Any]
]
# Answers an `elicitation/create` (its params, as sent) with an ACP answer (`{"action": ...}`).
ElicitationPolicy = Callable[[dict[str, Any]], dict[str, Any]]


def write_script(path: Path, turns: list[list[dict[str, Any]]]) -> Path:
    """A scripted-model file: `turns` is a list of turns, each a list of steps."""
    path.write_text(json.dumps({"turns": [{"steps": steps} for steps in turns]}))
    return path


def selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


CANCELLED_OUTCOME: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}


def fold_cards(updates: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The final state of every card after applying its updates (ACP's replace-per-field rule)."""
    cards: dict[str, dict[str, Any]] = {}
    for update in updates:
        call_id = update.get("toolCallId")
        if update["sessionUpdate"] == "tool_call":
            cards[call_id] = {k: v for k, v in update.items() if k != "sessionUpdate"}
        elif update["sessionUpdate"] == "tool_call_update" and call_id in cards:
            cards[call_id].update({k: v for k, v in update.items() if k != "sessionUpdate" and v is not None})
    return cards


async def allow_once(
    session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]
) -> dict[str, Any]:
    return selected("allow_once")


class RecordingClient:
    """The SDK `Client` implementation the tests drive the bridge with."""

    def __init__(
        self,
        policy: PermissionPolicy = allow_once,
        buffers: dict[str, str] | None = None,
        elicitation: ElicitationPolicy | None = None,
    ) -> None:
        self.policy = policy
        self.buffers = buffers  # path → text served by fs/read_text_file; writes land here too
        self.elicitation = elicitation  # answers elicitation/create (advertise it with `initialize`)
        self.permission_requests: list[dict[str, Any]] = []
        self.elicitations: list[dict[str, Any]] = []
        self.writes: list[tuple[str, str]] = []

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        request = {"message": message, **mode.model_dump(mode="json", by_alias=True, exclude_none=True)}
        self.elicitations.append(request)
        if self.elicitation is None:
            raise RequestError.method_not_found("elicitation/create")
        return self.elicitation(request)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None  # the raw tap records the exact frames

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        call = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
        opts = [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options]
        self.permission_requests.append({"sessionId": session_id, "toolCall": call, "options": opts})
        answer = self.policy(session_id, call, opts)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return schema.RequestPermissionResponse.model_validate(answer)

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        if self.buffers is None or path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return schema.ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.writes.append((path, content))
        if self.buffers is not None:
            self.buffers[path] = content
        return schema.WriteTextFileResponse()


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


_OUTGOING_SCHEMAS: Mapping[str, Any] = {
    "session/update": TypeAdapter(schema.SessionNotification),
    "session/request_permission": TypeAdapter(schema.RequestPermissionRequest),
    "fs/read_text_file": TypeAdapter(schema.ReadTextFileRequest),
    "fs/write_text_file": TypeAdapter(schema.WriteTextFileRequest),
    "elicitation/create": TypeAdapter(schema.CreateElicitationRequest),
}


# The answers checked against the SDK's models, by the method they answer (the unstable parts:
# `acp_unstable_schema.answer_problems`).
_ANSWER_SCHEMAS: Mapping[str, Any] = {
    "initialize": TypeAdapter(schema.InitializeResponse),
    "session/new": TypeAdapter(schema.NewSessionResponse),
    "session/load": TypeAdapter(schema.LoadSessionResponse),
    "session/resume": TypeAdapter(schema.ResumeSessionResponse),
    "session/fork": TypeAdapter(schema.ForkSessionResponse),
    "session/set_config_option": TypeAdapter(schema.SetSessionConfigOptionResponse),
    "session/prompt": TypeAdapter(schema.PromptResponse),
}


class _TappedWriter(asyncio.StreamWriter):
    """The bridge's stdin as the SDK writes to it (the same transport: the SDK wants a StreamWriter),
    noting each request's method by its id before the bytes leave, so the answer, however fast, finds
    it."""

    def __init__(self, writer: asyncio.StreamWriter, sent: dict[Any, str]) -> None:
        super().__init__(writer.transport, writer._protocol, writer._reader, writer._loop)  # type: ignore[attr-defined]
        self._sent = sent

    def write(self, data: bytes | bytearray | memoryview) -> None:
        note_requests(bytes(data), self._sent)
        super().write(data)


def note_requests(data: bytes, sent: dict[Any, str]) -> None:
    """Note the method of every request among the frames in `data`, by id."""
    for line in data.splitlines():
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        if isinstance(frame, dict) and isinstance(frame.get("method"), str) and "id" in frame:
            with contextlib.suppress(TypeError):  # an unhashable id: nothing to match its answer by
                sent[frame["id"]] = frame["method"]


class Bridge:
    """One running bridge process and its SDK client connection."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        client: RecordingClient,
        stderr_path: Path,
    ) -> None:
        self.proc = proc
        self.client = client
        self.stderr_path = stderr_path
        self.frames: list[dict[str, Any]] = []
        self.arrivals: list[float] = []  # time.perf_counter() when each of `frames` was read
        self.raw_lines: list[bytes] = []
        self.schema_errors: list[str] = []
        self._sdk_reader = asyncio.StreamReader(limit=LINE_LIMIT)
        assert proc.stdin is not None
        self._sent: dict[Any, str] = {}  # the method of each request the bridge has not answered, by id
        writer = _TappedWriter(proc.stdin, self._sent)
        # The SDK also serves the client methods it counts as unstable (elicitation/create), as the
        # bridge's own clients do.
        self.conn = ClientSideConnection(client, writer, self._sdk_reader, use_unstable_protocol=True)
        self._changed = asyncio.Event()
        self.survivors: list[psutil.Process] = []
        self.hung = False
        self._pump = asyncio.ensure_future(self._tap())

    @classmethod
    async def start(
        cls,
        *args: str,
        model: Path | str | None = None,
        client: RecordingClient | None = None,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        pythonpath: Iterable[Path] = (),
        stderr_path: Path | None = None,
    ) -> Bridge:
        argv = [sys.executable, "-m", "acp_bridge", "serve"]
        if model is not None:
            argv += ["--model", f"scripted:{model}" if isinstance(model, Path) else model]
        argv += list(args)
        full_env = dict(os.environ)
        paths = [str(p) for p in pythonpath]
        if full_env.get("PYTHONPATH"):
            paths.append(full_env["PYTHONPATH"])
        if paths:
            full_env["PYTHONPATH"] = os.pathsep.join(paths)
        full_env.update(env or {})
        err_path = stderr_path or Path(os.devnull)
        err_fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err_fd,
                cwd=str(cwd) if cwd else None,
                env=full_env,
                limit=LINE_LIMIT,
            )
        finally:
            os.close(err_fd)
        return cls(proc, client or RecordingClient(), err_path)

    async def _tap(self) -> None:
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                self._sdk_reader.feed_eof()
                self._changed.set()
                return
            self.raw_lines.append(line)
            try:
                frame = json.loads(line)
            except ValueError:
                frame = {"__unparsable__": line.decode(errors="replace")}
            if isinstance(frame, dict):
                self.frames.append(frame)
                self.arrivals.append(time.perf_counter())
                self._validate(frame)
            self._sdk_reader.feed_data(line)
            self._changed.set()

    def _validate(self, frame: dict[str, Any]) -> None:
        if "method" not in frame:
            self._validate_answer(frame)
            return
        model = _OUTGOING_SCHEMAS.get(frame.get("method", ""))
        if model is None:
            return
        update = (frame.get("params") or {}).get("update")
        if isinstance(update, dict) and update.get("sessionUpdate") in UNSTABLE_UPDATES:
            errors = validate_update(update)
            if errors:
                self.schema_errors.append(f"session/update: {errors}\n{json.dumps(frame)[:2000]}")
            return
        try:
            model.validate_python(frame.get("params"))
        except ValidationError as exc:
            self.schema_errors.append(f"{frame.get('method')}: {exc}\n{json.dumps(frame)[:2000]}")
        for problem in tool_call_name_problems(frame):
            self.schema_errors.append(f"{frame.get('method')}: {problem}\n{json.dumps(frame)[:2000]}")

    def _validate_answer(self, frame: dict[str, Any]) -> None:
        try:
            method = self._sent.pop(frame.get("id"), None)
        except TypeError:  # an unhashable id: no request of ours
            return
        if method is None or "result" not in frame:
            return
        result = frame["result"]
        problems = answer_problems(method, result)
        model = _ANSWER_SCHEMAS.get(method)
        if model is not None:
            try:
                model.validate_python(result)
            except ValidationError as exc:
                problems.append(str(exc))
        for problem in problems:
            self.schema_errors.append(f"the answer to {method}: {problem}\n{json.dumps(frame)[:2000]}")

    # --- helpers ----------------------------------------------------------------------------------

    async def initialize(
        self,
        *,
        terminal_meta: bool = True,
        fs: bool = False,
        fs_write: bool | None = None,
        elicitation: bool = False,
    ) -> Any:
        """`fs` advertises fs/read_text_file and (unless `fs_write` says otherwise) fs/write_text_file;
        `elicitation` advertises form elicitation (`elicitation/create`)."""
        caps = schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(
                read_text_file=fs, write_text_file=fs if fs_write is None else fs_write
            ),
            field_meta={"terminal_output": True} if terminal_meta else None,
            elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
            if elicitation
            else None,
        )
        return await asyncio.wait_for(
            self.conn.initialize(
                protocol_version=1,
                client_capabilities=caps,
                client_info=schema.Implementation(name="test-client", version="1"),
            ),
            10,
        )

    async def request(self, method: str, params: dict[str, Any], within: float = 10) -> Any:
        """Any request with raw params; its raw result. Raises the SDK's RequestError for an error answer."""
        return await asyncio.wait_for(self.conn._conn.send_request(method, params), within)

    async def initialize_raw(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        """`initialize` with raw client capabilities (ones the SDK's models drop, such as
        `session.compaction`, `session.notices`); the raw result."""
        result: dict[str, Any] = await self.request(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": capabilities,
             "clientInfo": {"name": "test-client", "version": "1"}},
        )  # fmt: skip
        return result

    async def new_session(self, cwd: Path) -> str:
        response = await asyncio.wait_for(self.conn.new_session(cwd=str(cwd), mcp_servers=[]), 10)
        return str(response.session_id)

    async def prompt(self, session_id: str, text: str, within: float = 20) -> str:
        response = await asyncio.wait_for(
            self.conn.prompt(session_id=session_id, prompt=[schema.TextContentBlock(type="text", text=text)]),
            within,
        )
        return str(response.stop_reason)

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The `update` payloads of every session/update so far (of one session, if given)."""
        return [
            f["params"]["update"]
            for f in self.frames
            if f.get("method") == "session/update"
            and (session_id is None or f["params"].get("sessionId") == session_id)
        ]

    def call_updates(self, call_id: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [u for u in self.updates(session_id) if u.get("toolCallId") == call_id]

    def arrival(self, predicate: Callable[[dict[str, Any]], bool], after: float = 0.0) -> float:
        """When (time.perf_counter) the first frame read after `after` that matches `predicate` arrived:
        the bridge's own latency, without the client library's handling of the frame."""
        for frame, at in zip(self.frames, self.arrivals, strict=True):
            if at > after and predicate(frame):
                return at
        raise LookupError("no such frame")

    def responses(self, request_id: Any) -> list[dict[str, Any]]:
        return [f for f in self.frames if "method" not in f and f.get("id", "missing") == request_id]

    async def wait_for(self, predicate: Callable[[], bool], within: float = 10.0) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("condition not met in time")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.2))

    async def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        note_requests(data, self._sent)
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def running(self, name: str | None = None) -> list[psutil.Process]:
        """The bridge's descendants that still run (zombies are dead), only those of program `name` when
        given. A short-lived child (the checkpoints' `git`) may end between the listing and the look at it:
        it is left out, not an error."""
        found = []
        for process in self.descendants():
            try:
                if process.status() != psutil.STATUS_ZOMBIE and (name is None or process.name() == name):
                    found.append(process)
            except psutil.Error:
                continue
        return found

    async def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(ConnectionError, BrokenPipeError):
            await self.proc.stdin.wait_closed()

    async def stop(self) -> None:
        """Close stdin and wait for exit (killing the whole tree if it hangs). `survivors` lists the bridge's
        descendants still alive after it exited (then killed, so a failing test leaves nothing behind)."""
        tree = self.descendants()
        if self.proc.returncode is None:
            with contextlib.suppress(OSError, RuntimeError):
                await self.close_stdin()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.hung = True
                with contextlib.suppress(psutil.Error):
                    psutil.Process(self.proc.pid).kill()
                await self.proc.wait()
        self.survivors = [p for p in tree if _alive(p)]
        for p in tree:
            with contextlib.suppress(psutil.Error):
                p.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._pump, 5)
        with contextlib.suppress(Exception):
            await self.conn.close()

    def stderr_text(self) -> str:
        try:
            return Path(self.stderr_path).read_text(errors="replace")
        except OSError:
            return ""
