"""One Code Mode program run in Deno with every permission denied: the program can act only by asking its
host to call a tool, over its stdin/stdout (the protocol is described in `run_code_prelude.js`).

Why this boundary. Restricted `exec` of Python is no sandbox (the object graph leads back to `os`). An
isolate embedded in our own process (mini-racer) shares the bridge's address space and fate: its only
memory cap is V8's, so a V8 fatal out-of-memory or a crash takes the bridge down with it; there is no
kernel CPU limit; stopping it means interrupting a thread of ours; and TypeScript would need a transpiler
of its own. A separate Deno process gets the kernel's isolation (its own address space and limits, a
process group killed at once) and Deno's permission system (file system, network, environment,
subprocesses, FFI, system information: all denied), and it is cheap. Measured on the development machine
(`benchmarks/code_mode_bench.py` measures it in every run): a whole program run, spawn to outcome, takes
about 16 ms with the session's warm Deno cache and 26 ms cold, against 78 ms to spawn `python3 -c pass`
in the same run; mini-racer 0.14.1 costs 43 ms to import, 27 ms for its first context and 2-9 ms for
each later one. The few milliseconds a warm in-process isolate (or a warm Deno process running each
program in a Worker) would save are nothing beside a model's step, and would share one heap, one crash and
one set of leftovers between programs. So each program gets a fresh process, hence a fresh isolate.

What the process gets:
- `deno run --no-prompt` with no `--allow-*` flag and an explicit `--deny-*` for every permission; no
  remote or npm modules, no configuration or lock file. The program module is imported by the prelude
  at run time, so every module it tries to load is permission-checked (see the prelude).
- An environment of Deno's own settings only (`DENO_DIR`, `NO_COLOR`, `DENO_NO_UPDATE_CHECK`), no file
  descriptor but stdin/stdout/stderr, and a fresh private directory as its cwd,
  deleted after the run. `DENO_DIR` (Deno's own caches: module analysis, transpiled code, V8's code
  cache) is the session's when the host gives one (`cache_dir`): the program cannot read it, and a
  warm cache starts a program in about two thirds of the time. Web Storage and the Cache API, which
  would persist what a program stores there, are removed before the program runs (see the prelude).
- Memory: V8's heap capped (`--max-old-space-size`, a clean "out of memory" end) and the whole process's
  writable data capped by the kernel (`RLIMIT_DATA`), so ArrayBuffers outside the heap cannot grow past
  it either (Deno itself reserves about 550 MiB of that address space at start).
- Time: `RLIMIT_CPU` (a busy loop is killed by the kernel), and a wall clock for the program's own time:
  the clock stops while a tool call the program asked for is running (a permission question may wait
  for the user), and runs whenever none is. Both limits are set before the program is sent.
- Output: what the program prints is kept up to a bound (its head and its tail); a line longer than the
  protocol's limit is dropped with a marker.
- Messages travel in batches both ways: the calls a program makes before it next yields leave in one
  write, and the answers settled in one turn of our event loop in another, so a `Promise.all` of two
  hundred calls costs a few wake-ups, not four hundred.

Cancellation (the caller's task is cancelled) kills the process group at once; so does the end of the
program. Calls still running are stopped through `stop_calls` and awaited, so every call the program made
has settled when `run_program` returns or raises.

Must not: give the program a permission, an inherited environment variable or a file descriptor beyond
stdin/stdout/stderr; leave a process or a directory behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import resource
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final, Literal

import orjson

log = logging.getLogger(__name__)

MARK: Final = "\x1e"  # starts every protocol line the prelude writes
EXIT_WAIT_S: Final = 2.0  # how long a program whose output ended gets to exit before it is killed
PRELUDE: Final = "run_code_prelude.js"
_MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one program may use. `own_time_s`: wall-clock seconds while no call it asked for runs."""

    own_time_s: float = 30.0
    cpu_s: int = 30
    heap_mb: int = 256
    data_mb: int = 1024
    output_head_chars: int = 12_000
    output_tail_chars: int = 4_000
    max_calls: int = 1_000
    line_bytes: int = 32 * _MIB


@dataclass(frozen=True, slots=True)
class CallReply:
    """The host's answer to one call: the call's structured value, or its error message (and code)."""

    ok: bool
    value: Any = None
    error: str | None = None
    code: str | None = None

    def to_json(self, request_id: Any) -> dict[str, Any]:
        if self.ok:
            return {"type": "reply", "id": request_id, "ok": True, "value": self.value}
        return {"type": "reply", "id": request_id, "ok": False, "error": self.error, "code": self.code}


# How a run ended: the program returned, threw, or was stopped for a limit, or its process died.
Ending = Literal["returned", "threw", "time", "cpu", "memory", "crashed"]


@dataclass(frozen=True, slots=True)
class ProgramOutcome:
    ending: Ending
    value: Any = None  # the returned JSON value (when `ending` is "returned")
    error: str | None = None  # why it did not return, in words for the model
    output: str = ""
    output_omitted: int = 0  # characters of printed output not kept


OnCall = Callable[[str, Any], Awaitable[CallReply]]


class _Output:
    """Printed output, kept up to a head and a tail; what falls between is counted."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_max, self._tail_max = head, tail
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.omitted = 0

    def add(self, line: str) -> None:
        line += "\n"
        if self._head_len < self._head_max:
            room = self._head_max - self._head_len
            self._head.append(line[:room])
            self._head_len += min(len(line), room)
            line = line[room:]
            if not line:
                return
        self._tail += line
        if len(self._tail) > self._tail_max:
            self.omitted += len(self._tail) - self._tail_max
            self._tail = self._tail[-self._tail_max :]

    def text(self) -> str:
        head = "".join(self._head)
        if not self.omitted:
            return head + self._tail
        return f"{head}… ({self.omitted} characters of output omitted) …\n{self._tail}"


@dataclass(slots=True)
class _Clock:
    """The program's own time: it runs while no call is in flight."""

    limit: float
    used: float = 0.0
    since: float | None = None
    in_flight: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self) -> None:
        self.since = time.monotonic()

    def call_started(self) -> None:
        if self.in_flight == 0 and self.since is not None:
            self.used += time.monotonic() - self.since
            self.since = None
        self.in_flight += 1
        self.changed.set()

    def call_settled(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.since = time.monotonic()
        self.changed.set()

    def remaining(self) -> float | None:
        """Seconds left while the clock runs; None while it is stopped."""
        if self.since is None:
            return None
        return self.limit - self.used - (time.monotonic() - self.since)

    async def expired(self) -> None:
        """Return once the program has used up its own time."""
        while True:
            self.changed.clear()
            left = self.remaining()
            if left is not None and left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)


def deno_executable() -> str:
    """The Deno binary of the `deno` distribution on PyPI. Raises RuntimeError when it is missing."""
    try:
        import deno  # type: ignore[import-untyped]

        path = str(deno.find_deno_bin())
    except (ImportError, AttributeError, OSError) as exc:
        raise RuntimeError(f"Deno is not available (the `deno` package): {exc}") from exc
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"Deno is not available: {path} is not executable")
    return path


def deno_argv(executable: str, prelude: str, limits: SandboxLimits) -> list[str]:
    """The command line: every permission denied, nothing loaded from outside, the heap capped."""
    return [
        executable,
        "run",
        "--no-prompt",
        "--no-remote",
        "--no-npm",
        "--no-config",
        "--no-lock",
        "--deny-read",
        "--deny-write",
        "--deny-net",
        "--deny-env",
        "--deny-sys",
        "--deny-run",
        "--deny-ffi",
        "--deny-import",
        f"--v8-flags=--max-old-space-size={limits.heap_mb}",
        prelude,
    ]


def prelude_path() -> str:
    return str(resources.files(__package__ or "presenters").joinpath(PRELUDE))


async def run_program(
    source: str,
    names: Sequence[str],
    on_call: OnCall,
    *,
    stop_calls: Callable[[], None],
    limits: SandboxLimits = SandboxLimits(),
    parent_dir: str | None = None,
    cache_dir: str | None = None,
) -> ProgramOutcome:
    """Run the TypeScript module `source` (its default export is called with the tools object; the
    prelude defines one function per name in `names`). Each call the program makes is answered by
    `on_call(tool, args)`, run as its own task. The run's directory is made in `parent_dir` (default: the
    temporary directory); `cache_dir` is Deno's cache (default: the run's directory). Raises
    RuntimeError when Deno cannot be started."""
    workdir = tempfile.mkdtemp(prefix="run-code-", dir=parent_dir)
    try:
        return await _Run(source, names, on_call, stop_calls, limits, workdir, cache_dir or workdir).run()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class _Run:
    def __init__(
        self,
        source: str,
        names: Sequence[str],
        on_call: OnCall,
        stop_calls: Callable[[], None],
        limits: SandboxLimits,
        workdir: str,
        cache_dir: str,
    ) -> None:
        self.source = source
        self.names = list(names)
        self.on_call = on_call
        self.stop_calls = stop_calls
        self.limits = limits
        self.workdir = workdir
        self.cache_dir = cache_dir
        self.output = _Output(limits.output_head_chars, limits.output_tail_chars)
        self.clock = _Clock(limits.own_time_s)
        self.calls: set[asyncio.Task[None]] = set()
        self.call_count = 0
        self.stderr_tail = b""
        self.proc: asyncio.subprocess.Process | None = None
        # Answers settled in one turn of the event loop leave in one write (see `_send`).
        self.outbox: list[bytes] = []

    async def run(self) -> ProgramOutcome:
        try:
            self.proc = proc = await asyncio.create_subprocess_exec(
                *deno_argv(deno_executable(), prelude_path(), self.limits),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.workdir,
                env={"DENO_DIR": self.cache_dir, "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"},
                start_new_session=True,  # its own process group: one kill stops every thread it has
                limit=self.limits.line_bytes,
            )
        except OSError as exc:
            raise RuntimeError(f"Deno could not be started: {exc}") from exc
        stderr_reader = asyncio.ensure_future(self._read_stderr())
        watchers: list[asyncio.Future[Any]] = []
        try:
            self._limit_resources(proc.pid)
            self._send({"type": "program", "source": self.source, "names": self.names})
            self.clock.start()
            timer = asyncio.ensure_future(self.clock.expired())
            reader = asyncio.ensure_future(self._read_stdout())
            watchers += (timer, reader)
            await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
            if not reader.done():
                return self._ending(
                    "time",
                    f"The program ran for more than {self.limits.own_time_s:g} s of its own time "
                    "(waiting for tool calls excluded) and was stopped.",
                )
            outcome = reader.result()
            return outcome if outcome is not None else await self._died()
        finally:
            for watcher in watchers:
                watcher.cancel()
            self._kill()
            self.stop_calls()
            await self._settle(stderr_reader)

    def _limit_resources(self, pid: int) -> None:
        """Set before the program is sent (until then the prelude only waits for it)."""
        data = self.limits.data_mb * _MIB
        try:
            resource.prlimit(pid, resource.RLIMIT_DATA, (data, data))
            # The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
            resource.prlimit(pid, resource.RLIMIT_CPU, (self.limits.cpu_s, self.limits.cpu_s + 1))
        except OSError as exc:
            raise RuntimeError(f"the program's process could not be limited: {exc}") from exc

    def _send(self, message: dict[str, Any]) -> None:
        """Queue a message for the program; the queue is written once the event loop turns (parallel
        calls often settle together: one write, one wake-up of the program, for all of them)."""
        line = _encode(message) + b"\n"
        if not self.outbox:
            asyncio.get_running_loop().call_soon(self._flush)
        self.outbox.append(line)

    def _flush(self) -> None:
        lines, self.outbox = self.outbox, []
        stdin = self.proc.stdin if self.proc is not None else None
        if stdin is not None and not stdin.is_closing():
            stdin.write(b"".join(lines))

    async def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        with contextlib.suppress(ConnectionError, BrokenPipeError):
            await self.proc.stdin.drain()

    async def _read_stdout(self) -> ProgramOutcome | None:
        """Read the program's lines until it is done (its outcome) or its output ends (None)."""
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        while True:
            try:
                raw = await stdout.readline()
            except ValueError:  # longer than the line limit: asyncio dropped it
                self.output.add(f"… (a line longer than {self.limits.line_bytes} bytes was dropped) …")
                continue
            if not raw:
                return None
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            message = _protocol_message(line)
            if message is None:
                self.output.add(line)
            elif message.get("type") == "call":
                self._accept_call(message)
            elif message.get("type") == "done":
                if message.get("ok") is True:
                    return self._ending("returned", value=message.get("value"))
                return self._ending("threw", f"The program failed: {message.get('error')}")

    def _accept_call(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        tool = message.get("tool")
        if not isinstance(tool, str):
            self._reply(request_id, CallReply(False, error="a call must name its tool", code="INVALID_ARGS"))
            return
        self.call_count += 1
        if self.call_count > self.limits.max_calls:
            self._reply(
                request_id,
                CallReply(False, error=f"a program may make at most {self.limits.max_calls} calls"),
            )
            return
        self.clock.call_started()
        task = asyncio.ensure_future(self._serve(request_id, tool, message.get("args")))
        self.calls.add(task)
        task.add_done_callback(self.calls.discard)

    async def _serve(self, request_id: Any, tool: str, args: Any) -> None:
        try:
            reply = await self.on_call(tool, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("a Code Mode call handler failed")
            reply = CallReply(False, error=f"the call failed in the host: {exc}", code="INTERNAL")
        finally:
            # The program owns the time again as soon as its call settled, whether it reads the answer or not.
            self.clock.call_settled()
        self._reply(request_id, reply)
        await self._drain()

    def _reply(self, request_id: Any, reply: CallReply) -> None:
        try:
            self._send(reply.to_json(request_id))
        except (TypeError, ValueError) as exc:
            self._send(CallReply(False, error=f"the result could not be sent: {exc}").to_json(request_id))

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr_tail = (self.stderr_tail + chunk)[-8192:]

    async def _died(self) -> ProgramOutcome:
        """The program's output ended without an outcome: its process died (or closed its output, and is
        given a moment to end before it is called crashed). Say how."""
        assert self.proc is not None
        try:
            code = await asyncio.wait_for(self.proc.wait(), EXIT_WAIT_S)
        except TimeoutError:
            return self._ending("crashed", "The program closed its output without a result.")
        stderr = self.stderr_tail.decode("utf-8", errors="replace")
        if code in (-signal.SIGXCPU, -signal.SIGKILL):  # the soft, then the hard CPU limit
            return self._ending(
                "cpu", f"The program used more than {self.limits.cpu_s} s of CPU time and was stopped."
            )
        if code == -signal.SIGTRAP or "out of memory" in stderr or "memory allocation" in stderr:
            return self._ending(
                "memory",
                f"The program ran out of memory (its heap is limited to {self.limits.heap_mb} MiB and the "
                f"process to {self.limits.data_mb} MiB) and was stopped.",
            )
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        said = [line for line in lines if line.startswith("error:")] or lines[-1:]
        detail = said[0] if said else f"exit status {code}"
        return self._ending("crashed", f"The program's process ended without a result ({detail}).")

    def _ending(self, ending: Ending, error: str | None = None, *, value: Any = None) -> ProgramOutcome:
        return ProgramOutcome(ending, value, error, self.output.text(), self.output.omitted)

    def _kill(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    async def _settle(self, stderr_reader: asyncio.Future[None]) -> None:
        """After the kill: the process reaped, its pipes read to the end, every call task settled."""
        proc = self.proc
        if proc is not None:
            await proc.wait()
            if proc.stdin is not None:
                proc.stdin.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(stderr_reader, 1.0)
        if self.calls:
            await asyncio.wait(set(self.calls))


def _encode(message: dict[str, Any]) -> bytes:
    """A message for the program as UTF-8 JSON: orjson (a call's reply is encoded ~15× faster), else the
    standard library for what orjson refuses (an integer past 64 bits). A lone surrogate fails either way
    (ValueError or TypeError): the call gets an error reply instead (`_reply`)."""
    try:
        return orjson.dumps(message)
    except orjson.JSONEncodeError:
        return json.dumps(message, ensure_ascii=False).encode()


def _protocol_message(line: str) -> dict[str, Any] | None:
    if not line.startswith(MARK):
        return None
    try:
        message = json.loads(line[1:])
    except ValueError:
        return None
    return message if isinstance(message, dict) else None
