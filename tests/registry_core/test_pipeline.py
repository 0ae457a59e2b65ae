"""The execution pipeline, stage by stage (tests named after the behaviour they pin)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from registry_core import (
    ALLOW,
    BLOCKED,
    CANCELLED,
    DENIED,
    INTERNAL,
    INVALID_ARGS,
    INVALID_TOOL_OUTPUT,
    TIMEOUT,
    TOOL_FAILED,
    UNKNOWN_TOOL,
    Accept,
    ApprovalAnswer,
    Ask,
    Block,
    CancelController,
    ContextMessage,
    Deny,
    FrozenDict,
    ParsedArguments,
    TextBlock,
    ToolError,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    ToolRegistry,
    ToolRunContext,
    ToolSuccess,
    run_step,
    snapshot,
    thaw,
)
from registry_core.json_values import copy_json
from tests.support.raw_tools import AGENT, raw_tool


def call(name: str = "t", args: Any = None, **kw: Any) -> ToolExecutionInput:
    return ToolExecutionInput(kw.pop("call_id", "c1"), name, {} if args is None else args, **kw)


async def test_unknown_tool_is_an_error_result_naming_the_available_tools() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("read"))
    result = await registry.execute(call("nope"))
    assert isinstance(result, ToolFailure)
    assert result.error.code == UNKNOWN_TOOL
    assert "read" in result.error.message


async def test_a_throwing_body_is_an_error_result() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        raise RuntimeError("disk on fire")

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure)
    assert result.error.code == TOOL_FAILED
    assert "disk on fire" in result.error.message


async def test_a_tool_error_keeps_its_code_and_message_verbatim() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        raise ToolError("file not found: a.txt", code="NOT_FOUND")

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure)
    assert (result.error.code, result.error.message) == ("NOT_FOUND", "file not found: a.txt")
    assert result.content == (TextBlock("file not found: a.txt"),)


@pytest.mark.parametrize(
    "bad", ["{not json", "[1, 2]", [1, 2], {"x": float("nan")}, {"x": object()}, {1: "a"}]
)
async def test_non_object_or_non_json_arguments_fail_with_invalid_args(bad: Any) -> None:
    ran = False

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        nonlocal ran
        ran = True

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))
    result = await registry.execute(call(args=bad))
    assert isinstance(result, ToolFailure) and result.error.code == INVALID_ARGS
    assert not ran


async def test_arguments_are_snapshotted_and_deep_frozen() -> None:
    seen: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        seen.append(args)
        with pytest.raises(TypeError):
            args["x"] = 1
        with pytest.raises(TypeError):
            args["nested"]["y"] = 2
        with pytest.raises((TypeError, AttributeError)):
            args["list"].append(3)  # arrays become tuples
        return None

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))
    original = {"nested": {"y": 1}, "list": [1, 2]}
    result = await registry.execute(call(args=original))
    assert isinstance(result, ToolSuccess), result
    original["nested"]["y"] = 99  # the caller's later mutation does not reach the snapshot
    assert seen[0]["nested"]["y"] == 1
    assert isinstance(seen[0], FrozenDict)


def _counting_tool(name: str, parses: list[Any], seen: list[Any]) -> Any:
    """A tool whose `parse_args` counts its calls and whose body records the typed arguments it got."""

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        seen.append((args, ctx.execution.arguments))
        return {"ok": True}

    def parse_args(raw: Any) -> Any:
        parses.append(raw)
        return ("typed", raw["path"])

    return raw_tool(name, body, parse_args=parse_args)


async def test_arguments_the_caller_parsed_for_this_definition_run_as_they_are() -> None:
    parses: list[Any] = []
    seen: list[Any] = []
    registry = ToolRegistry()
    definition = _counting_tool("t", parses, seen)
    registry.register(definition)
    frozen = snapshot({"path": "a.txt"})
    typed = definition.parse_args(frozen)  # type: ignore[misc]
    parsed = ParsedArguments(definition, frozen, typed)
    result = await registry.execute(call(args={"path": "a.txt"}, parsed=parsed))
    assert isinstance(result, ToolSuccess), result
    assert len(parses) == 1  # the caller's parse only: the pipeline parsed nothing again
    assert seen[0][0] is typed and seen[0][1] is frozen  # the body got exactly what the caller parsed


@pytest.mark.parametrize("which", ["another definition", "not an object"])
async def test_handed_over_arguments_are_ignored_unless_they_fit_the_tool_that_runs(which: str) -> None:
    parses: list[Any] = []
    seen: list[Any] = []
    registry = ToolRegistry()
    definition = _counting_tool("t", parses, seen)
    registry.register(definition)
    if which == "another definition":  # e.g. the tool was replaced between the card and the run
        parsed = ParsedArguments(_counting_tool("t", [], []), snapshot({"path": "stale"}), ("typed", "stale"))
        result = await registry.execute(call(args={"path": "a.txt"}, parsed=parsed))
        assert isinstance(result, ToolSuccess), result
        assert seen[0][0] == ("typed", "a.txt") and parses == [{"path": "a.txt"}]
    else:  # a raw tool's display parse accepts any JSON; the pipeline still requires an object
        parsed = ParsedArguments(definition, (1, 2), (1, 2))
        result = await registry.execute(call(args=[1, 2], parsed=parsed))
        assert isinstance(result, ToolFailure) and result.error.code == INVALID_ARGS
        assert not seen


def test_thaw_and_copy_json_give_plain_copies_that_share_nothing_mutable() -> None:
    original: dict[str, Any] = {
        "s": "x", "n": 1, "f": 1.5, "b": True, "none": None, "lines": ["a", "b"],
        "mixed": [1, {"k": [2]}], "nested": {"deep": {"list": [1.0, None]}},
    }  # fmt: skip
    frozen = snapshot(original)
    plain = thaw(frozen)
    assert plain == original and type(plain) is dict
    assert (
        type(plain["lines"]) is list
        and type(plain["mixed"][1]) is dict
        and type(plain["nested"]["deep"]) is dict
    )
    plain["lines"].append("c")  # the thawed copy is the caller's to change
    plain["nested"]["deep"]["list"].append(2)
    assert frozen["lines"] == ("a", "b") and frozen["nested"]["deep"]["list"] == (1.0, None)
    copied = copy_json(original)
    assert copied == original
    copied["mixed"][1]["k"].append(3)
    copied["nested"]["deep"]["list"].clear()
    assert original["mixed"] == [1, {"k": [2]}] and original["nested"] == {"deep": {"list": [1.0, None]}}


async def test_tokens_are_opaque_and_unique_per_execution() -> None:
    tokens: list[Any] = []
    registry = ToolRegistry()
    registry.register(raw_tool("t"))
    registry.on_result(lambda ex, r: tokens.append(ex.token))
    await registry.execute(call(call_id="same"))
    await registry.execute(call(call_id="same"))
    assert tokens[0] is not tokens[1]
    assert tokens[0] != tokens[1]


# --- pre-execute waterfall --------------------------------------------------------------------------


async def test_waterfall_runs_in_order_and_a_decision_short_circuits() -> None:
    order: list[str] = []
    registry = ToolRegistry()
    registry.register(raw_tool("t"))

    async def first(ex: ToolExecution, nxt: Any) -> Any:
        order.append("first")
        return await nxt()

    async def second(ex: ToolExecution, nxt: Any) -> Any:
        order.append("second")
        return Deny("no way")

    async def third(ex: ToolExecution, nxt: Any) -> Any:
        order.append("third")
        return await nxt()

    for listener in (first, second, third):
        registry.on_pre_execute(listener)
    result = await registry.execute(call())
    assert order == ["first", "second"]
    assert (
        isinstance(result, ToolFailure) and result.error.code == DENIED and result.error.message == "no way"
    )


async def test_first_flag_puts_a_listener_ahead() -> None:
    order: list[str] = []
    registry = ToolRegistry()
    registry.register(raw_tool("t"))

    async def make(tag: str, ex: ToolExecution, nxt: Any) -> Any:
        order.append(tag)
        return await nxt()

    registry.on_pre_execute(lambda ex, nxt: make("late", ex, nxt))
    registry.on_pre_execute(lambda ex, nxt: make("early", ex, nxt), first=True)
    await registry.execute(call())
    assert order == ["early", "late"]


class Approver:
    def __init__(self, answer: ApprovalAnswer | Exception) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str | None]] = []

    async def request_approval(self, execution: ToolExecution, reason: str | None) -> ApprovalAnswer:
        self.asked.append((execution.call_id, reason))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def asking_registry(approver: Approver | None) -> tuple[ToolRegistry, list[str]]:
    ran: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        ran.append(ctx.call_id)
        return "done"

    registry = ToolRegistry(approval=approver)
    registry.register(raw_tool("t", body))

    async def ask(ex: ToolExecution, nxt: Any) -> Any:
        return Ask("writes a file")

    registry.on_pre_execute(ask)
    return registry, ran


async def test_ask_proceeds_only_on_allowed_once() -> None:
    approver = Approver(ApprovalAnswer("allowed-once"))
    registry, ran = asking_registry(approver)
    result = await registry.execute(call(agent=AGENT))
    assert isinstance(result, ToolSuccess)
    assert ran == ["c1"]
    assert approver.asked == [("c1", "writes a file")]


@pytest.mark.parametrize(
    ("answer", "code", "fragment"),
    [
        (ApprovalAnswer("denied", "not today"), DENIED, "not today"),
        (ApprovalAnswer("denied"), DENIED, "rejected"),
        (ApprovalAnswer("cancelled"), CANCELLED, "cancelled"),
        (ConnectionError("pipe closed"), DENIED, "pipe closed"),
    ],
)
async def test_ask_without_a_grant_does_not_run(answer: Any, code: str, fragment: str) -> None:
    registry, ran = asking_registry(Approver(answer))
    result = await registry.execute(call(agent=AGENT))
    assert isinstance(result, ToolFailure)
    assert result.error.code == code
    assert fragment in result.error.message
    assert ran == []


async def test_ask_with_no_service_or_no_agent_denies() -> None:
    registry, ran = asking_registry(None)
    result = await registry.execute(call(agent=AGENT))
    assert (
        isinstance(result, ToolFailure)
        and result.error.code == DENIED
        and "no approval service" in result.error.message
    )
    registry, ran = asking_registry(Approver(ApprovalAnswer("allowed-once")))
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure) and result.error.code == DENIED and "agent" in result.error.message
    assert ran == []


async def test_cancelling_while_waiting_for_approval_is_a_cancellation() -> None:
    gate = asyncio.Event()
    asked = asyncio.Event()

    class Slow:
        async def request_approval(self, execution: ToolExecution, reason: str | None) -> ApprovalAnswer:
            asked.set()
            await gate.wait()
            return ApprovalAnswer("allowed-once")

    registry, ran = asking_registry(None)
    registry.approval = Slow()
    controller = CancelController()
    task = asyncio.create_task(registry.execute(call(agent=AGENT, signal=controller.signal)))
    await asked.wait()  # the question is really pending when the cancel comes
    controller.cancel()
    result = await asyncio.wait_for(task, 1)
    assert isinstance(result, ToolFailure) and result.error.code == CANCELLED
    assert ran == []


async def test_a_failing_policy_listener_denies_visibly() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("t"))

    async def broken(ex: ToolExecution, nxt: Any) -> Any:
        raise KeyError("oops")

    registry.on_pre_execute(broken)
    result = await registry.execute(call())
    assert (
        isinstance(result, ToolFailure)
        and result.error.code == DENIED
        and "policy check failed" in result.error.message
    )


# --- guards -------------------------------------------------------------------------------------------


async def test_guards_can_deny_after_an_allow_but_never_re_allow() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("t"))

    async def allow(ex: ToolExecution, nxt: Any) -> Any:
        return ALLOW

    registry.on_pre_execute(allow)
    registry.add_guard(lambda ex: None)
    registry.add_guard(lambda ex: "sandbox says no")
    registry.add_guard(lambda ex: None)
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure) and result.error.message == "sandbox says no"

    # A denial from the waterfall is final: guards run only after an allow, so none can undo it.
    registry2 = ToolRegistry()
    registry2.register(raw_tool("t"))

    async def deny(ex: ToolExecution, nxt: Any) -> Any:
        return Deny("policy")

    registry2.on_pre_execute(deny)
    guard_calls: list[str] = []
    registry2.add_guard(lambda ex: guard_calls.append("x") or None)  # type: ignore[func-returns-value]
    result2 = await registry2.execute(call())
    assert isinstance(result2, ToolFailure) and result2.error.message == "policy"
    assert guard_calls == []


# --- execute wrappers and cancellation ------------------------------------------------------------------


async def test_wrappers_nest_outermost_first_and_may_replace_the_result() -> None:
    order: list[str] = []
    registry = ToolRegistry(timeout_policy=False)
    registry.register(raw_tool("t"))

    async def outer(ex: ToolExecution, nxt: Any) -> ToolExecutionResult:
        order.append("outer>")
        r = await nxt(ex)
        order.append("<outer")
        return r

    async def inner(ex: ToolExecution, nxt: Any) -> ToolExecutionResult:
        order.append("inner>")
        r = await nxt(ex)
        order.append("<inner")
        return r

    registry.add_execute_wrapper(inner)
    registry.add_execute_wrapper(outer, outermost=True)
    result = await registry.execute(call())
    assert isinstance(result, ToolSuccess)
    assert order == ["outer>", "inner>", "<inner", "<outer"]


async def test_a_wrapper_that_replaces_the_signal_cannot_remove_the_callers_cancellation() -> None:
    from registry_core import NEVER

    started = asyncio.Event()

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        started.set()
        await asyncio.sleep(30)

    registry = ToolRegistry(timeout_policy=False)
    registry.register(raw_tool("t", body))

    async def strip(ex: ToolExecution, nxt: Any) -> ToolExecutionResult:
        return await nxt(ex.with_signal(NEVER))  # tries to drop cancellation

    registry.add_execute_wrapper(strip)
    controller = CancelController()
    task = asyncio.create_task(registry.execute(call(signal=controller.signal)))
    await started.wait()
    controller.cancel()
    result = await asyncio.wait_for(task, 1)
    assert isinstance(result, ToolFailure) and result.error.code == CANCELLED


async def test_cancelled_body_settles_before_the_result_and_is_an_error() -> None:
    cleaned = asyncio.Event()
    started = asyncio.Event()

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            # Owned work reaching quiescence: the cleanup suspends (a few loop turns) before it is done.
            for _ in range(3):
                await asyncio.sleep(0)
            cleaned.set()

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))
    controller = CancelController()
    task = asyncio.create_task(registry.execute(call(signal=controller.signal)))
    await started.wait()
    controller.cancel()
    result = await asyncio.wait_for(task, 1)
    assert cleaned.is_set()
    assert isinstance(result, ToolFailure) and result.error.code == CANCELLED


async def test_timeout_cancels_the_body_and_yields_a_timeout_error() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        await asyncio.sleep(30)

    registry = ToolRegistry()
    registry.register(raw_tool("t", body, timeout_ms=50))
    loop = asyncio.get_running_loop()
    start = loop.time()
    result = await registry.execute(call())
    assert loop.time() - start < 1
    assert isinstance(result, ToolFailure) and result.error.code == TIMEOUT
    assert "timed out after 50 ms" in result.error.message


async def test_a_fast_tool_with_a_timeout_is_unaffected() -> None:
    registry = ToolRegistry()
    registry.register(raw_tool("t", timeout_ms=5000))
    assert isinstance(await registry.execute(call()), ToolSuccess)


async def test_calls_with_timeouts_share_one_timer_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step of many calls with a deadline arms one timer, not one per call (a cancelled timer stays on
    the loop's heap until it falls due, and every later timer pays for it)."""

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        await asyncio.sleep(0)
        return None

    registry = ToolRegistry()
    registry.register(raw_tool("t", body, timeout_ms=60_000, is_concurrency_safe=lambda args: True))
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at, call_later = loop.call_at, loop.call_later

    def counting_call_at(when: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(when)
        return call_at(when, *args, **kwargs)

    def counting_call_later(delay: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(loop.time() + delay)
        return call_later(delay, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting_call_at)
    monkeypatch.setattr(loop, "call_later", counting_call_later)
    results = await run_step(registry.root, [call(call_id=f"c{i}") for i in range(50)])
    assert all(isinstance(r, ToolSuccess) for r in results)
    assert len(armed) <= 1, len(armed)


async def test_each_call_times_out_at_its_own_deadline_when_they_overlap() -> None:
    """The shared timer re-arms for an earlier deadline that arrives later, and for the next one after
    it fires (the behaviour a timer per call had)."""
    finished: dict[str, float] = {}
    started: dict[str, asyncio.Event] = {"late": asyncio.Event(), "early": asyncio.Event()}
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        started[ctx.call_id].set()
        try:
            await asyncio.sleep(30)
        finally:
            finished[ctx.call_id] = loop.time() - start

    registry = ToolRegistry()
    registry.register(raw_tool("slow", body, timeout_ms=400))
    registry.register(raw_tool("quick", body, timeout_ms=50))
    late = asyncio.create_task(registry.execute(call("slow", call_id="late")))
    await asyncio.wait_for(started["late"].wait(), 2)  # its deadline is armed before the earlier one
    early = await registry.execute(call("quick", call_id="early"))
    assert isinstance(early, ToolFailure) and early.error.code == TIMEOUT
    assert finished["early"] < 0.3 and "late" not in finished
    late_result = await asyncio.wait_for(late, 5)
    assert isinstance(late_result, ToolFailure) and late_result.error.code == TIMEOUT
    assert 0.35 < finished["late"] < 2, finished


# --- output, post-execute ------------------------------------------------------------------------------


async def test_non_json_body_values_are_invalid_tool_output() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return {"when": object()}

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure) and result.error.code == INVALID_TOOL_OUTPUT


async def test_a_failing_renderer_is_an_error_result() -> None:
    def render(args: Any, value: Any) -> Any:
        raise ValueError("cannot render")

    registry = ToolRegistry()
    registry.register(raw_tool("t", render=render))
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure) and "cannot render" in result.error.message


def count_tool(registry: ToolRegistry) -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        return {"n": 1}

    registry.register(
        raw_tool(
            "t",
            body,
            output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            render=lambda a, v: (TextBlock(f"n={v['n']}"),),
            presentation_meta=lambda a, v: {"shown": v["n"]},
        )
    )


async def test_post_execute_may_replace_content_keeping_value_and_meta() -> None:
    registry = ToolRegistry()
    count_tool(registry)

    async def redact(ex: ToolExecution, result: ToolExecutionResult, nxt: Any) -> Any:
        return Accept(content=(TextBlock("[redacted]"),))

    registry.on_post_execute(redact)
    result = await registry.execute(call())
    assert isinstance(result, ToolSuccess)
    assert result.content == (TextBlock("[redacted]"),)
    assert result.value == {"n": 1} and result.meta == {"shown": 1}


async def test_a_replaced_value_is_revalidated_and_re_rendered() -> None:
    registry = ToolRegistry()
    count_tool(registry)

    async def bump(ex: ToolExecution, result: ToolExecutionResult, nxt: Any) -> Any:
        return Accept(value={"n": 7})

    registry.on_post_execute(bump)
    result = await registry.execute(call())
    assert isinstance(result, ToolSuccess)
    assert result.content == (TextBlock("n=7"),) and result.meta == {"shown": 7}

    registry2 = ToolRegistry()
    count_tool(registry2)

    async def break_it(ex: ToolExecution, result: ToolExecutionResult, nxt: Any) -> Any:
        return Accept(value={"n": "seven"})

    registry2.on_post_execute(break_it)
    result2 = await registry2.execute(call())
    assert isinstance(result2, ToolFailure) and result2.error.code == INVALID_TOOL_OUTPUT


def test_accept_cannot_replace_both() -> None:
    with pytest.raises(ValueError, match="never both"):
        Accept(content=(TextBlock("x"),), value=1)


async def test_block_turns_the_call_into_an_error_carrying_feedback_and_contexts() -> None:
    registry = ToolRegistry()
    count_tool(registry)
    extra = ContextMessage((TextBlock("remember the style guide"),), source="lint")

    async def block(ex: ToolExecution, result: ToolExecutionResult, nxt: Any) -> Any:
        return Block((TextBlock("use tabs"),), additional_contexts=(extra,))

    registry.on_post_execute(block)
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure)
    assert result.error.code == BLOCKED and result.content == (TextBlock("use tabs"),)
    assert result.additional_contexts == (extra,)
    assert not hasattr(result, "value")


async def test_post_execute_sees_body_failures_and_failing_listeners_fail_the_call() -> None:
    seen: list[bool] = []

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        raise RuntimeError("x")

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))

    async def look(ex: ToolExecution, result: ToolExecutionResult, nxt: Any) -> Any:
        seen.append(result.is_error)
        raise RuntimeError("listener bug")

    registry.on_post_execute(look)
    result = await registry.execute(call())
    assert seen == [True]
    assert isinstance(result, ToolFailure) and result.error.code == INTERNAL


# --- finalize_content: exactly once for every outcome ------------------------------------------------


@pytest.mark.parametrize(
    "outcome", ["success", "throws", "denied", "invalid_args", "blocked", "cancelled", "timeout"]
)
async def test_finalize_content_runs_exactly_once_for_every_outcome(outcome: str) -> None:
    calls: list[tuple[str, bool]] = []
    started = asyncio.Event()

    def finalize(ex: ToolExecution, result: ToolExecutionResult) -> Any:
        calls.append((ex.call_id, result.is_error))
        return (TextBlock(f"final:{result.is_error}"),)

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        started.set()
        if outcome == "throws":
            raise RuntimeError("x")
        if outcome in ("cancelled", "timeout"):
            await asyncio.sleep(30)
        return "ok"

    registry = ToolRegistry()
    registry.register(
        raw_tool("t", body, finalize_content=finalize, timeout_ms=30 if outcome == "timeout" else None)
    )
    if outcome == "denied":

        async def deny(ex: ToolExecution, nxt: Any) -> Any:
            return Deny("no")

        registry.on_pre_execute(deny)
    if outcome == "blocked":

        async def block(ex: ToolExecution, r: ToolExecutionResult, nxt: Any) -> Any:
            return Block((TextBlock("b"),))

        registry.on_post_execute(block)
    controller = CancelController()
    args: Any = "not json" if outcome == "invalid_args" else {}
    task = asyncio.create_task(registry.execute(call(args=args, signal=controller.signal)))
    if outcome == "cancelled":
        await asyncio.wait_for(started.wait(), 2)
        controller.cancel()
    result = await asyncio.wait_for(task, 2)
    assert len(calls) == 1
    assert result.content == (TextBlock(f"final:{result.is_error}"),)
    assert result.is_error == (outcome != "success")


async def test_a_throwing_finalize_keeps_the_content() -> None:
    def finalize(ex: ToolExecution, result: ToolExecutionResult) -> Any:
        raise RuntimeError("bug")

    registry = ToolRegistry()
    registry.register(raw_tool("t", finalize_content=finalize))
    result = await registry.execute(call())
    assert isinstance(result, ToolSuccess) and "t:" in result.content[0].text  # type: ignore[union-attr]


# --- result observers -------------------------------------------------------------------------------


async def test_observers_get_the_frozen_execution_and_result_and_failures_are_contained() -> None:
    seen: list[tuple[ToolExecution, ToolExecutionResult]] = []
    registry = ToolRegistry()
    registry.register(raw_tool("t"))

    def broken(ex: ToolExecution, r: ToolExecutionResult) -> None:
        raise RuntimeError("observer bug")

    async def record(ex: ToolExecution, r: ToolExecutionResult) -> None:
        seen.append((ex, r))

    registry.on_result(broken)
    registry.on_result(record)
    result = await registry.execute(call(args={"a": [1]}))
    assert isinstance(result, ToolSuccess)
    ex, r = seen[0]
    assert r is result
    with pytest.raises(AttributeError):
        ex.call_id = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r.content = ()  # type: ignore[misc]


async def test_unknown_tools_still_reach_observers() -> None:
    seen: list[str] = []
    registry = ToolRegistry()
    registry.on_result(lambda ex, r: seen.append(r.error.code if r.error else ""))
    await registry.execute(call("ghost"))
    assert seen == [UNKNOWN_TOOL]


# --- the run context ------------------------------------------------------------------------------------


async def test_deferred_contexts_reach_the_result_in_call_order_and_conclude_turn_needs_success() -> None:
    a = ContextMessage((TextBlock("a"),), source="nested:1")
    b = ContextMessage((TextBlock("b"),), source="nested:2")
    post_ctx = ContextMessage((TextBlock("post"),))

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        ctx.defer_context(a)
        ctx.defer_context(b)
        ctx.conclude_turn()
        if args.get("fail"):
            raise RuntimeError("nope")
        return "ok"

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))

    async def add(ex: ToolExecution, r: ToolExecutionResult, nxt: Any) -> Any:
        return Accept(additional_contexts=(post_ctx,))

    registry.on_post_execute(add)
    ok = await registry.execute(call())
    assert isinstance(ok, ToolSuccess)
    assert ok.additional_contexts == (a, b, post_ctx)
    assert ok.concludes_turn is True
    failed = await registry.execute(call(args={"fail": True}))
    assert failed.concludes_turn is False
    assert failed.additional_contexts == (a, b, post_ctx)


async def test_progress_reaches_the_callers_sink_and_a_broken_sink_is_harmless() -> None:
    from registry_core import TerminalOutputProgress

    chunks: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        ctx.progress(TerminalOutputProgress(data="one"))
        ctx.progress(TerminalOutputProgress(data="two"))
        return "ok"

    registry = ToolRegistry()
    registry.register(raw_tool("t", body))
    await registry.execute(call(on_progress=lambda ex, p: chunks.append(p.data)))
    assert chunks == ["one", "two"]

    def broken(ex: ToolExecution, p: Any) -> None:
        raise RuntimeError("sink bug")

    assert isinstance(await registry.execute(call(on_progress=broken)), ToolSuccess)


async def test_per_call_signals_do_not_pile_up_on_the_callers_signal() -> None:
    """A session's turn signal lives for many calls: neither the timeout policy's fused signal nor a
    wrapper's replacement may leave a callback behind on it."""
    from registry_core import NEVER

    registry = ToolRegistry()
    registry.register(raw_tool("t", timeout_ms=5000))

    async def replace_signal(ex: ToolExecution, nxt: Any) -> ToolExecutionResult:
        return await nxt(ex.with_signal(NEVER))  # forces the pipeline to fuse the caller's back in

    registry.add_execute_wrapper(replace_signal, outermost=True)
    controller = CancelController()
    for i in range(50):
        assert isinstance(
            await registry.execute(call(call_id=f"c{i}", signal=controller.signal)), ToolSuccess
        )
    assert controller.signal.callback_count == 0
