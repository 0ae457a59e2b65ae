"""The nested calls of one composite call: the calls a Code Mode program (`run_code`) or a subagent (`task`)
makes, each a full registry dispatch of its own under the composite's call.

One `NestedCalls` per composite call. `call` refuses a tool the composite was not given (or arguments that
are not JSON) without dispatching anything; otherwise it numbers the call (`<composite id>:<label>:<n>`,
n from 1 in the order the calls arrive), tells the host first (`NestedCallProgress` on the composite's
progress sink, so the host shows the call's card under the composite's), waits for its turn
(`NestedSchedule`: parallel calls share up to `max_parallel` slots, an exclusive one runs alone),
dispatches it (`ToolExecutionInput(parent=<the composite's token>)`: policy, approvals, guards, timeouts,
observers apply as to any call), then logs it (`tools/code-dispatch-log` waterfall, then the durable
`tool/code-dispatch` event, which the host completes the call's card from and a replay draws it from).

Must not: dispatch a call the composite was not given, let the caller choose a call id, or keep running
calls after `stop` (they are cancelled through the shared signal).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from typing import Any

from registry_core import (
    CANCELLED,
    INVALID_ARGS,
    UNKNOWN_TOOL,
    CancelReason,
    CodeDispatchLog,
    NestedCallProgress,
    NestedDispatch,
    TextBlock,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    ToolFailureInfo,
    ToolRunContext,
    snapshot,
)
from registry_core.cancellation import linked
from registry_core.json_values import NotJsonError


class NestedCalls:
    """The calls of one composite call: their ids, their scheduling, their dispatch and their log.
    `results` keeps each settled call's result by its number."""

    def __init__(
        self,
        ctx: ToolRunContext,
        nested: NestedDispatch,
        visible: frozenset[str],
        *,
        label: str,
        max_parallel: int,
        refusal: str = "is not a tool this program can call",
    ) -> None:
        self.ctx = ctx
        self.nested = nested
        self.visible = visible
        self.label = label
        self.refusal = refusal
        # Fires with the outer call's signal (the user's cancel, a timeout) or when the composite ends first.
        self.signal = linked(ctx.signal)
        self.numbers = itertools.count(1)
        self.results: dict[int, ToolExecutionResult] = {}
        self.schedule = NestedSchedule(max_parallel)

    def refused(self, tool: str) -> ToolFailure | None:
        """The failure of a call of `tool` when the composite was not given it, else None."""
        if tool in self.visible:
            return None
        shown = ", ".join(sorted(self.visible)) or "none"
        return _failure(f"`{tool}` {self.refusal} (it can call: {shown}).", UNKNOWN_TOOL)

    async def call(self, tool: str, args: Any) -> ToolExecutionResult:
        """Dispatch one nested call and log it; its result (a refusal is a failure, never dispatched)."""
        refusal = self.refused(tool)
        if refusal is not None:
            return refusal
        try:
            arguments = snapshot(args)
        except NotJsonError as exc:
            return _failure(f"the arguments of {tool}() are not JSON: {exc}", INVALID_ARGS)
        number = next(self.numbers)
        call_id = f"{self.ctx.call_id}:{self.label}:{number}"
        execution = self.ctx.execution
        self.ctx.progress(NestedCallProgress(call_id=call_id, name=tool, arguments=arguments))
        exclusive = self.nested.execution_mode(tool, arguments) == "exclusive"
        await self.schedule.enter(exclusive)
        try:
            result = await self.nested.execute(
                ToolExecutionInput(
                    call_id=call_id,
                    name=tool,
                    arguments=arguments,
                    signal=self.signal,
                    agent=execution.agent,
                    parent=execution.token,
                    on_progress=execution.on_progress,
                )
            )
        finally:
            self.schedule.leave(exclusive)
        self.results[number] = result
        entry = CodeDispatchLog(
            execution, call_id, tool, arguments, result.is_error, result.content, result.error, result.meta
        )
        await self.nested.log_code_dispatch(entry)
        return result

    def stop(self, message: str = "The program ended before this call finished.") -> None:
        """The composite ended (or was stopped): calls still running are cancelled."""
        self.signal.trigger(CancelReason(CANCELLED, message))

    def close(self) -> None:
        """Release the shared signal's link to the outer call's (once every call settled)."""
        self.signal.close()

    def counts(self) -> tuple[int, int]:
        """How many calls were dispatched, and how many of them failed."""
        return len(self.results), sum(r.is_error for r in self.results.values())


def _failure(message: str, code: str) -> ToolFailure:
    return ToolFailure(ToolFailureInfo(message, code), (TextBlock(message),))


def calls_phrase(made: int, failed: int) -> str:
    """ "3 tool calls (1 failed)"."""
    text = f"{made} tool call{'s' if made != 1 else ''}"
    return f"{text} ({failed} failed)" if failed else text


class NestedSchedule:
    """Who runs when: calls start in arrival order; parallel ones share up to `limit` slots, an exclusive
    one waits until nothing runs and runs alone."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self.exclusive = False
        self.queue: deque[tuple[bool, asyncio.Future[None]]] = deque()

    # `enter` / `leave` rather than an async context manager: one per sub-call, and
    # `contextlib.asynccontextmanager` costs a generator and its frames each time.
    async def enter(self, exclusive: bool) -> None:
        """Wait for this call's turn; every `enter` that returns is matched by one `leave`."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queue.append((exclusive, ready))
        self._admit()
        try:
            await ready
        except BaseException:
            if ready.done() and not ready.cancelled():
                self.leave(exclusive)  # admitted just as we were cancelled: give the slot back
            else:
                self.queue = deque(entry for entry in self.queue if entry[1] is not ready)
                self._admit()
            raise

    def leave(self, exclusive: bool) -> None:
        self.running -= 1
        if exclusive:
            self.exclusive = False
        self._admit()

    def _admit(self) -> None:
        while self.queue and not self.exclusive:
            exclusive, ready = self.queue[0]
            if exclusive and self.running:
                return
            if not exclusive and self.running >= self.limit:
                return
            self.queue.popleft()
            self.running += 1
            self.exclusive = exclusive
            ready.set_result(None)
