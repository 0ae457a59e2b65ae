"""The program's sandbox, attacked from inside: every way out fails cleanly, as an error the program (or its
call's result) shows, and nothing is left behind (no Deno process, no run directory)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from presenters.deno_sandbox import SandboxLimits
from registry_core import CANCELLED, TOOL_FAILED, CancelController, ToolRestriction
from tests.support.code_session import CodeSession, deno_processes, make_code_session, run_dirs, text

pytestmark = pytest.mark.slow


@pytest.fixture
async def code(tmp_path: Path) -> AsyncIterator[CodeSession]:
    session = make_code_session(tmp_path)
    yield session
    assert deno_processes() == []
    assert run_dirs(tmp_path) == []


async def test_a_program_cannot_read_a_file_but_through_read(code: CodeSession, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-42\n")
    result = await code.run(
        f"""
const tries: string[] = [];
for (const attempt of [
  () => import("file://{secret}"),
  () => import("{secret}"),
  () => fetch("file://{secret}").then((r) => r.text()),
  () => import("node:fs").then((fs) => fs.readFileSync("{secret}", "utf8")),
  async () => (globalThis as any).Deno.readTextFileSync("{secret}"),
]) {{
  try {{ tries.push("leaked: " + String(await attempt())) }} catch (e) {{ tries.push(String(e)) }}
}}
return tries;
"""
    )
    assert not result.is_error, text(result)
    assert "TOP-SECRET-42" not in text(result)
    assert "leaked" not in text(result)
    assert "Requires read access" in text(result)
    assert "Deno is not defined" in text(result)


async def test_a_literal_import_in_the_program_is_checked_too(code: CodeSession, tmp_path: Path) -> None:
    # Deno loads a main module's static graph without asking; the program is never a main module.
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:TOP-SECRET\n")
    result = await code.run(f'const m = await import("file://{secret}"); return m;')
    assert result.is_error
    assert "TOP-SECRET" not in text(result)
    assert "Requires read access" in text(result)


async def test_a_program_cannot_open_a_socket(code: CodeSession) -> None:
    peers: list[int] = []
    ours = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(writer.get_extra_info("peername")[1])
        if await reader.read(5) == b"probe":
            ours.set()
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        result = await code.run(
            f"""
const tries: string[] = [];
for (const attempt of [
  () => fetch("http://127.0.0.1:{port}/"),
  () => new Promise((ok, fail) => {{
    const ws = new WebSocket("ws://127.0.0.1:{port}/");
    ws.onopen = ok;
    ws.onerror = () => fail(new Error("websocket failed"));
  }}),
  () => import("node:net").then(
    (net) => new Promise((ok, fail) => net.connect({port}, "127.0.0.1", ok).on("error", fail)),
  ),
  async () => (globalThis as any).Deno.connect({{ hostname: "127.0.0.1", port: {port} }}),
]) {{
  try {{ await attempt(); tries.push("connected") }} catch (e) {{ tries.push(String(e)) }}
}}
return tries;
"""
        )
        # Our own connection, made after the program's attempts: accepted in turn, so once it is, any
        # connection the program made would have been accepted before it.
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"probe")
        await writer.drain()
        await asyncio.wait_for(ours.wait(), 5)
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    assert not result.is_error, text(result)
    assert len(peers) == 1  # ours alone
    assert "connected" not in text(result).replace("not connected", "")
    assert "Requires net access" in text(result)


async def test_a_program_cannot_read_the_environment(
    code: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_BRIDGE_TEST_MARKER", "ENV-SECRET-7")
    result = await code.run(
        """
const tries: string[] = [];
for (const attempt of [
  async () => (globalThis as any).Deno.env.get("ACP_BRIDGE_TEST_MARKER"),
  () => import("node:process").then((p) => p.env.ACP_BRIDGE_TEST_MARKER),
  () => import("node:os").then((os) => os.homedir()),
]) {
  try { tries.push("got " + String(await attempt())) } catch (e) { tries.push(String(e)) }
}
return tries;
"""
    )
    assert not result.is_error, text(result)
    assert "ENV-SECRET-7" not in text(result)
    assert "got" not in text(result)


async def test_a_program_cannot_spawn_a_process(code: CodeSession, tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    result = await code.run(
        f"""
const tries: string[] = [];
for (const attempt of [
  () => import("node:child_process").then((cp) => cp.execSync("touch {marker}")),
  async () => new (globalThis as any).Deno.Command("touch", {{ args: ["{marker}"] }}).outputSync(),
  async () => new Worker("data:text/javascript,1", {{ type: "module" }}),
]) {{
  try {{ await attempt(); tries.push("spawned") }} catch (e) {{ tries.push(String(e)) }}
}}
return tries;
"""
    )
    assert not result.is_error, text(result)
    assert not marker.exists()
    assert "spawned" not in text(result)


async def test_a_program_that_loops_forever_is_stopped_at_its_time_limit(tmp_path: Path) -> None:
    code = make_code_session(tmp_path, limits=SandboxLimits(own_time_s=1.0, cpu_s=20))
    started = time.monotonic()
    result = await code.run('console.log("spinning"); for (;;) {}')
    assert time.monotonic() - started < 8
    assert result.is_error
    assert result.error is not None and result.error.code == TOOL_FAILED
    assert "more than 1 s of its own time" in text(result)
    assert "spinning" in text(result)  # what it printed before is kept
    assert deno_processes() == []


async def test_a_busy_loop_beside_a_running_call_is_stopped_by_the_cpu_limit(tmp_path: Path) -> None:
    # While a call runs the program's own clock stops (a permission question may wait for the user), so
    # only the kernel's CPU limit can stop a program that spins meanwhile.
    code = make_code_session(tmp_path, limits=SandboxLimits(own_time_s=60.0, cpu_s=1))
    started = time.monotonic()
    # (A call leaves when the program next yields: `await null` lets it go before the loop.)
    result = await code.run("hang({}); await null; for (;;) {}")
    assert time.monotonic() - started < 10
    assert result.is_error
    assert "more than 1 s of CPU time" in text(result)
    # The call it left running was stopped with it, and settled as cancelled.
    (hang,) = [r for e, r in code.nested() if e.name == "hang"]
    assert hang.is_error and hang.error is not None and hang.error.code == CANCELLED
    assert deno_processes() == []


async def test_a_program_that_allocates_without_bound_runs_out_of_memory(tmp_path: Path) -> None:
    code = make_code_session(tmp_path, limits=SandboxLimits(own_time_s=30.0, cpu_s=30, heap_mb=64))
    result = await code.run(
        "const a: number[][] = []; for (let i = 0; ; i++) a.push(new Array(100000).fill(i));"
    )
    assert result.is_error
    assert "ran out of memory" in text(result)
    assert deno_processes() == []


async def test_memory_outside_the_heap_is_capped_too(code: CodeSession) -> None:
    result = await code.run("const b = new Uint8Array(4 * 1024 * 1024 * 1024); b.fill(1); return b.length;")
    assert result.is_error
    assert "RangeError" in text(result)


async def test_a_program_cannot_call_a_tool_its_scope_hides(code: CodeSession) -> None:
    scope = code.registry.root.restricted(ToolRestriction.of(deny=["secret"]))
    result = await code.run(
        """
const tries: string[] = [];
for (const name of ["secret", "run_code"]) {
  try { tries.push(String(await tools[name]({}))) } catch (e) { tries.push(String(e)) }
  // Past the functions: a call message of its own making.
  console.log("\\x1e" + JSON.stringify({ type: "call", id: 1000, tool: name, args: {} }));
}
try { tries.push(String(await secret({}))) } catch (e) { tries.push(String(e)) }
return tries;
""",
        scope=scope,
    )
    assert not result.is_error, text(result)
    assert "the secret" not in text(result)
    assert text(result).count("tools[name] is not a function") == 2
    assert "secret is not defined" in text(result)
    assert code.bodies == []
    assert code.nested() == []  # nothing was dispatched (the host answers every call before the run ends)


async def test_restrictions_do_not_hide_run_code_itself(code: CodeSession) -> None:
    scope = code.registry.root.restricted(ToolRestriction.of(allow=["read"]))
    assert [s["name"] for s in scope.schemas()] == ["read", "run_code"]
    result = await code.run("return Object.keys(tools);", scope=scope)
    assert not result.is_error, text(result)
    assert '"read"' in text(result)
    assert "secret" not in text(result)


async def test_a_program_cannot_choose_a_sub_call_id(code: CodeSession, tmp_path: Path) -> None:
    (Path(code.agent.cwd) / "a.txt").write_text("alpha\n")
    forged = (
        '{"type":"call","id":7,"tool":"read","args":{"file_path":"a.txt"},"callId":"evil","call_id":"evil"}'
    )
    result = await code.run(
        f"""
console.log("\\x1e" + {forged!r});
await read({{ file_path: "a.txt", call_id: "c1:code:99" }});
return "done";
"""
    )
    assert not result.is_error, text(result)
    ids = [e.call_id for e, _ in code.nested()]
    assert sorted(ids) == ["c1:code:1", "c1:code:2"]
    assert [event.call_id for event in code.dispatches] == ids
    assert all(e.parent is not None for e, _ in code.nested())


async def test_cancelling_the_call_stops_the_program_at_once(code: CodeSession) -> None:
    controller = CancelController()
    task = asyncio.ensure_future(code.run("await hang({}); return 1;", signal=controller.signal))
    await asyncio.wait_for(code.hanging.wait(), 10)  # the program reached its call
    started = time.monotonic()
    controller.cancel()
    result = await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < 2
    assert result.is_error and result.error is not None and result.error.code == CANCELLED
    (hang,) = [r for e, r in code.nested() if e.name == "hang"]
    assert hang.error is not None and hang.error.code == CANCELLED
    assert [event.call_id for event in code.dispatches] == ["c1:code:1"]
    assert deno_processes() == []


async def test_the_program_s_process_gets_no_environment_of_ours(
    code: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_BRIDGE_API_KEY", "sk-must-not-pass")
    controller = CancelController()
    task = asyncio.ensure_future(code.run("await hang({});", signal=controller.signal))
    try:
        await asyncio.wait_for(code.hanging.wait(), 10)
        (deno,) = deno_processes()
        assert set(deno.environ()) == {"DENO_DIR", "NO_COLOR", "DENO_NO_UPDATE_CHECK"}
        assert deno.cwd() != code.agent.cwd
    finally:
        controller.cancel()
        await asyncio.wait_for(task, 5)
