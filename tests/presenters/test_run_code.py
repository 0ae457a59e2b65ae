"""`run_code`'s contract, in process against a real registry and real Deno: each sub-call is a full dispatch
(policy, asks, guards, wrappers, timeouts, observers), settles through the `tools/code-dispatch-log`
waterfall into a durable event, and the outer result is the program's value, its output, its calls'
deferred contexts (in call order) and an authoritative conclusion."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from presenters.deno_sandbox import SandboxLimits
from presenters.run_code import MAX_PARALLEL, program_module
from registry_core import (
    DENIED,
    TIMEOUT,
    Accept,
    ApprovalAnswer,
    Ask,
    Block,
    ContentBlock,
    Deny,
    GenericCallView,
    GenericResultView,
    NestedCallProgress,
    TextBlock,
    ToolExecution,
    ToolResult,
    ToolRunContext,
    content_text,
    parse_args_for_display,
)
from tests.support.code_session import CodeSession, deno_processes, make_code_session, text, tool

pytestmark = pytest.mark.slow


@pytest.fixture
def code(tmp_path: Path) -> CodeSession:
    session = make_code_session(tmp_path)
    for name, body in {"a.txt": "alpha\n", "b.txt": "beta\n"}.items():
        (Path(session.agent.cwd) / name).write_text(body)
    return session


async def test_each_call_of_the_program_is_a_dispatch_of_its_own_under_the_outer_call(
    code: CodeSession,
) -> None:
    result = await code.run(
        """
const a = await read({ file_path: "a.txt" });
const [b, again] = await Promise.all([read({ file_path: "b.txt" }), read({ file_path: "a.txt" })]);
return [a.lines[0], b.lines[0], again.total_lines];
"""
    )
    assert not result.is_error, text(result)
    assert result.value["value"] == ("alpha", "beta", 1)  # type: ignore[index]
    outer = next(e for e, _ in code.results if e.parent is None)
    nested = code.nested()
    assert [e.call_id for e, _ in nested] == ["c1:code:1", "c1:code:2", "c1:code:3"]
    assert all(e.parent is outer.token and e.agent is code.agent for e, _ in nested)
    # The host heard of each call before it was dispatched, on the outer call's progress.
    announced = [
        (owner, p.call_id, p.name) for owner, p in code.progress if isinstance(p, NestedCallProgress)
    ]
    assert announced == [("c1", f"c1:code:{n}", "read") for n in (1, 2, 3)]
    # Each settled call became a durable event: the rendered content, never the value.
    assert [(d.parent_call_id, d.call_id, d.name, d.is_error) for d in code.dispatches] == [
        ("c1", f"c1:code:{n}", "read", False) for n in (1, 2, 3)
    ]
    assert content_text(code.dispatches[0].content) == "     1\talpha"
    assert code.dispatches[0].arguments == {"file_path": "a.txt"}


async def test_the_policy_decides_each_sub_call_and_a_denial_raises_in_the_program(code: CodeSession) -> None:
    async def policy(execution: ToolExecution, next_: Any) -> Any:
        if execution.name == "write":
            return Deny("writes are off in this test")
        return await next_()

    code.registry.on_pre_execute(policy)
    result = await code.run(
        """
try { await write({ file_path: "c.txt", content: "x" }); return "written"; }
catch (e) { return `${e.name} ${e.tool} ${e.code}: ${e.message}`; }
"""
    )
    assert not result.is_error, text(result)
    assert result.value["value"] == f"ToolError write {DENIED}: writes are off in this test"  # type: ignore[index]
    assert not (Path(code.agent.cwd) / "c.txt").exists()
    assert code.dispatches[0].is_error


async def test_an_ask_inside_a_program_goes_to_the_approval_service_as_the_sub_call(
    code: CodeSession,
) -> None:
    asked: list[ToolExecution] = []

    class Approval:
        async def request_approval(self, execution: ToolExecution, reason: str | None) -> ApprovalAnswer:
            asked.append(execution)
            return ApprovalAnswer("denied", "The user rejected this `edit` call.")

    async def ask_edits(execution: ToolExecution, next_: Any) -> Any:
        return Ask("edits ask") if execution.name == "edit" else await next_()

    code.registry.approval = Approval()
    code.registry.on_pre_execute(ask_edits)
    result = await code.run(
        """
try { await edit({ file_path: "a.txt", old_string: "alpha", new_string: "omega" }); }
catch (e) { console.log("caught:", e.message); return "gave up"; }
"""
    )
    assert not result.is_error, text(result)
    assert "caught: The user rejected this `edit` call." in text(result)
    (execution,) = asked
    assert execution.call_id == "c1:code:1" and execution.parent is not None
    assert (Path(code.agent.cwd) / "a.txt").read_text() == "alpha\n"


async def test_guards_wrappers_timeouts_and_post_policy_apply_to_sub_calls(tmp_path: Path) -> None:
    async def slow(_args: Any, _ctx: ToolRunContext) -> Any:
        await asyncio.sleep(30)

    code = make_code_session(tmp_path, extra=[tool("slow", slow, timeout_ms=100)])
    wrapped: list[str] = []

    async def wrapper(execution: ToolExecution, call_next: Any) -> Any:
        wrapped.append(execution.call_id)
        return await call_next(execution)

    async def post(execution: ToolExecution, result: Any, next_: Any) -> Any:
        if execution.name == "deferring":
            return Accept(value=41)
        return await next_()

    code.registry.add_guard(lambda e: "no secrets" if e.name == "secret" else None)
    code.registry.add_execute_wrapper(wrapper)
    code.registry.on_post_execute(post)
    result = await code.run(
        """
const out: string[] = [];
for (const call of [() => secret({}), () => slow({}), () => deferring({ n: 1 })]) {
  try { out.push(JSON.stringify(await call())) } catch (e) { out.push(`${e.code}: ${e.message}`) }
}
return out;
"""
    )
    assert not result.is_error, text(result)
    assert result.value["value"] == (  # type: ignore[index]
        f"{DENIED}: no secrets",
        f"{TIMEOUT}: Tool 'slow' timed out after 100 ms.",
        "41",
    )
    assert code.bodies == []  # the guard stopped `secret` before its body
    assert wrapped == ["c1", "c1:code:2", "c1:code:3"]


async def test_the_code_dispatch_log_waterfall_reshapes_only_the_durable_copy(code: CodeSession) -> None:
    seen: list[str] = []

    async def redact(entry: Any, next_: Any) -> tuple[ContentBlock, ...]:
        seen.append(f"{entry.execution.call_id} {entry.sub_call_id} {entry.name} {entry.is_error}")
        later = await next_()
        return (TextBlock("[redacted] " + content_text(later)),)

    def broken(entry: Any, next_: Any) -> Any:
        raise RuntimeError("a broken listener is skipped")

    code.registry.on_code_dispatch_log(redact)
    code.registry.on_code_dispatch_log(broken)
    result = await code.run('return (await read({ file_path: "a.txt" })).lines;')
    assert result.value["value"] == ("alpha",)  # type: ignore[index]  # the program got the real value
    assert seen == ["c1 c1:code:1 read False"]
    (event,) = code.dispatches
    assert content_text(event.content) == "[redacted]      1\talpha"
    (live,) = [r for e, r in code.nested()]
    assert (
        content_text(live.content) == "     1\talpha"
    )  # the live result and the model contract are untouched


async def test_deferred_contexts_follow_the_outer_result_in_call_order(code: CodeSession) -> None:
    result = await code.run(
        "await Promise.all([deferring({ n: 1 }), deferring({ n: 2 })]); await deferring({ n: 3 }); return 0;"
    )
    assert not result.is_error, text(result)
    assert [content_text(c.content) for c in result.additional_contexts] == [
        "context 1",
        "context 2",
        "context 3",
    ]
    assert [c.source for c in result.additional_contexts] == [f"run_code c1:code:{n}" for n in (1, 2, 3)]


async def test_only_an_authoritative_nested_success_concludes_the_turn(code: CodeSession) -> None:
    concluded = await code.run("await concluding({}); return 1;", call_id="c1")
    assert concluded.concludes_turn

    threw = await code.run('await concluding({}); throw new Error("then it failed");', call_id="c2")
    assert threw.is_error and not threw.concludes_turn

    async def block(execution: ToolExecution, result: Any, next_: Any) -> Any:
        if execution.name == "concluding":
            return Block((TextBlock("blocked after the fact"),))
        return await next_()

    code.registry.on_post_execute(block)
    blocked = await code.run("try { await concluding({}) } catch (e) { } return 1;", call_id="c3")
    assert not blocked.is_error and not blocked.concludes_turn


async def test_the_outer_result_is_the_returned_value_and_the_bounded_output(tmp_path: Path) -> None:
    code = make_code_session(tmp_path, limits=SandboxLimits(output_head_chars=200, output_tail_chars=100))
    result = await code.run(
        'console.log("first line"); for (let i = 0; i < 5000; i++) console.log("line " + i); '
        'console.error("last words"); return { n: 5000, ok: true };'
    )
    assert not result.is_error, text(result)
    assert result.value["value"] == {"n": 5000, "ok": True}  # type: ignore[index]
    output = result.value["output"]  # type: ignore[index]
    assert output.startswith("first line\n") and output.endswith("last words\n")
    assert "characters of output omitted" in output
    assert len(output) < 400
    assert text(result).startswith('The program returned:\n{\n  "n": 5000,\n  "ok": true\n}')


async def test_a_failing_program_says_why_what_it_printed_and_what_it_did(code: CodeSession) -> None:
    result = await code.run(
        'const a = await read({ file_path: "a.txt" });\nconsole.log("got", a.lines[0]);\nnull.boom;'
    )
    assert result.is_error
    message = text(result)
    assert message.startswith("The program failed: TypeError: Cannot read properties of null")
    assert "at Module.default (program.ts:3:" in message  # the program's own line numbers
    assert "It made 1 tool call before it ended; they took effect." in message
    assert "It printed:\ngot alpha" in message


async def test_a_program_with_a_syntax_error_fails_with_its_line(code: CodeSession) -> None:
    result = await code.run("const ok = 1;\nconst = 2;")
    assert result.is_error
    assert "SyntaxError" in text(result)
    assert "program.ts:2:" in text(result)


async def test_parallel_calls_share_eight_slots_and_an_exclusive_one_runs_alone(tmp_path: Path) -> None:
    running: set[str] = set()
    peaks: list[int] = []
    overlaps: list[set[str]] = []

    full = asyncio.Event()  # the slots were all taken once: the overlap is forced by holding, not by time

    async def work(args: Any, ctx: ToolRunContext) -> Any:
        running.add(ctx.call_id)
        peaks.append(len(running))
        if len(running) == MAX_PARALLEL:
            full.set()
        if args.get("alone"):
            overlaps.append(set(running))
        await asyncio.wait_for(full.wait(), 10)  # fails the call (and the test) if the slots never fill
        await asyncio.sleep(0)  # hold the slot for a turn of the loop: a call let in beside it is seen
        if args.get("alone"):
            overlaps[-1] |= running
        running.discard(ctx.call_id)
        return args.get("n")

    code = make_code_session(
        tmp_path,
        extra=[tool("work", work, is_concurrency_safe=lambda args: not args.get("alone"))],
    )
    result = await code.run(
        "const ns = Array.from({ length: 20 }, (_, n) => n);"
        "return await Promise.all([...ns.map((n) => work({ n })), work({ n: 20, alone: true }),"
        " ...ns.map((n) => work({ n: 21 + n }))]);"
    )
    assert not result.is_error, text(result)
    assert result.value["value"] == tuple(range(41))  # type: ignore[index]
    assert max(peaks) == MAX_PARALLEL
    assert overlaps == [{"c1:code:21"}]


async def test_the_cards_show_the_program_in_its_language(code: CodeSession) -> None:
    definition = code.registry.get("run_code")
    assert definition is not None and definition.present_call and definition.present_result
    ok, typed = parse_args_for_display(definition, {"code": "return ```1```;", "description": "Add one"})
    assert ok
    call = definition.present_call(typed)
    assert isinstance(call, GenericCallView) and call.kind == "execute" and call.title == "Add one"
    assert call.content[0].text == "````typescript\nreturn ```1```;\n````"
    done = definition.present_result(typed, ToolResult((TextBlock("The program returned:\n1"),), False))
    assert isinstance(done, GenericResultView) and done.content is not None
    assert [c.text for c in done.content] == [call.content[0].text, "The program returned:\n1"]


def test_the_program_starts_on_the_module_s_first_line_with_each_tool_bound() -> None:
    module = program_module("return 1;", ["read", "web_fetch", "my-tool", "delete"])
    first, *rest = module.splitlines()
    assert first.endswith("const { read, web_fetch } = tools; { return 1;")
    assert rest == ["} }"]


async def test_no_deno_process_outlives_its_program(code: CodeSession) -> None:
    await asyncio.gather(*(code.run("return 1;", call_id=f"c{n}") for n in range(3)))
    assert deno_processes() == []


async def test_an_exception_nothing_catches_fails_the_program_with_it(code: CodeSession) -> None:
    result = await code.run(
        'setTimeout(() => { throw new Error("from a timer"); }, 0);\n'
        "await new Promise((r) => setTimeout(r, 5000));"
    )
    assert result.is_error
    assert text(result).startswith("The program failed: Uncaught Error: from a timer\n    at ")
    assert "program.ts:1:" in text(result)
