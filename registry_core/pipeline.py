"""`run_pipeline`: one tool call from caller input to the authoritative, frozen outcome.

Order (the seed contract):
  1. materialise: arguments snapshotted losslessly and deep-frozen (non-JSON and non-object arguments
     fail with INVALID_ARGS), a registry-assigned opaque token; unknown tool → UNKNOWN_TOOL;
     typed tools parse their arguments here (INVALID_ARGS lists every violation with its path); a
     caller that already did both for the definition resolved here (`ToolExecutionInput.parsed`: a host's
     cards) hands them over, and the call runs with exactly those
  2. pre-execute waterfall (allow / deny / ask; ask proceeds only on "allowed-once")
  3. guards (can only deny)
  4. execute wrappers around the body (outermost first; each may replace the signal, the caller's
     signal is always fused back in), the body, output validation, render, presentation metadata
  5. post-execute waterfall (accept with replaced content or value, or block)
  6. `finalize_content`, exactly once for every outcome of a known tool
  7. result observers (failures contained)
Nothing here raises for a tool's fault: every failure is a `ToolFailure`. Only the caller's own asyncio
cancellation propagates (never swallowed).

The pipeline owns the two `Protocol`s below, what it needs from a registry scope; `registry` implements
them and imports this module, never the other way round.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import CoroutineType
from typing import Any, Protocol

from . import errors
from .cancellation import CancelSignal, close_fused, derives_from, fuse, until_cancelled
from .content import ContentBlock, ContextMessage, ImageBlock, TextBlock
from .definition import ToolDefinition
from .errors import ToolError, Violation
from .execution import (
    NestedDispatch,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolFailure,
    ToolFailureInfo,
    ToolRunContext,
    ToolSuccess,
)
from .json_values import JsonValue, NotJsonError, snapshot
from .policy import (
    ALLOW,
    UNSET,
    Accept,
    Allow,
    ApprovalAnswer,
    ApprovalService,
    Ask,
    Block,
    Deny,
    ExecuteWrapper,
    PostExecuteListener,
    PostToolDecision,
    PreExecuteListener,
    PreToolDecision,
    ResultObserver,
    ToolGuard,
)

log = logging.getLogger(__name__)


class PipelineHooks(Protocol):
    """The registry-wide part of a call's run: its hook lists, approval service and token labels."""

    @property
    def pre_execute(self) -> Sequence[PreExecuteListener]: ...
    @property
    def guards(self) -> Sequence[ToolGuard]: ...
    @property
    def execute_wrappers(self) -> Sequence[ExecuteWrapper]: ...
    @property
    def post_execute(self) -> Sequence[PostExecuteListener]: ...
    @property
    def result_observers(self) -> Sequence[ResultObserver]: ...
    @property
    def approval(self) -> ApprovalService | None: ...

    def next_token_label(self, call_id: str) -> str: ...


class PipelineScope(NestedDispatch, Protocol):
    """The scope a call runs in: which definition a name resolves to, and the registry's hooks. A body
    gets it as `ToolRunContext.nested`, so a composite tool's nested calls run in the same scope."""

    @property
    def registry(self) -> PipelineHooks: ...

    def get(self, name: str) -> ToolDefinition | None: ...

    def names(self) -> list[str]: ...


def _awaitable(out: object) -> bool:
    """`inspect.isawaitable`, with the two answers of nearly every hook first (a coroutine, None): its
    `Awaitable` ABC check costs more, and every call asks it of several hooks."""
    if type(out) is CoroutineType:
        return True
    return out is not None and inspect.isawaitable(out)


def failure(code: str, message: str, *, meta: JsonValue = None) -> ToolFailure:
    return ToolFailure(ToolFailureInfo(message, code), (TextBlock(message),), meta)


def _preview(raw: str, limit: int = 200) -> str:
    return raw if len(raw) <= limit else raw[:limit] + "…"


async def run_pipeline(scope: PipelineScope, call: ToolExecutionInput) -> ToolExecutionResult:
    registry = scope.registry
    token = ToolExecutionToken(registry.next_token_label(call.call_id))

    definition = scope.get(call.name)
    parsed = call.parsed
    if (
        parsed is not None
        and definition is not None
        and parsed.definition is definition
        and isinstance(parsed.frozen, Mapping)
    ):
        # The caller snapshotted and parsed these arguments for this very definition (its cards): the
        # call runs with exactly them, and nothing is parsed twice.
        execution = ToolExecution(
            call.call_id, call.name, parsed.frozen, call.signal, token, call.agent, call.parent,
            call.on_progress, definition.timeout_ms,
        )  # fmt: skip
        finalize = definition.finalize_content
        result: ToolExecutionResult = await _policy_and_dispatch(scope, definition, execution, parsed.typed)
        result = _finalize(finalize, execution, result)
        return await _observe(scope, execution, result)

    frozen: JsonValue
    early: ToolFailure | None = None
    if isinstance(call.arguments, str):
        frozen = call.arguments
        early = failure(
            errors.INVALID_ARGS,
            f"Invalid arguments for tool {call.name!r}: expected a JSON object, "
            f"got {_preview(call.arguments)!r}. Send the arguments as a JSON object.",
        )
    else:
        try:
            frozen = snapshot(call.arguments)
        except NotJsonError as exc:
            frozen = None
            early = failure(errors.INVALID_ARGS, f"Invalid arguments for tool {call.name!r}: {exc}")
        else:
            if not isinstance(frozen, Mapping):
                early = failure(
                    errors.INVALID_ARGS,
                    f"Invalid arguments for tool {call.name!r}: expected a JSON object, "
                    f"got {type(call.arguments).__name__}.",
                )

    execution = ToolExecution(
        call.call_id,
        call.name,
        frozen,
        call.signal,
        token,
        call.agent,
        call.parent,
        call.on_progress,
        definition.timeout_ms if definition is not None else None,
    )
    if definition is None:
        result = failure(errors.UNKNOWN_TOOL, str(errors.ToolNotFoundError(call.name, scope.names())))
        return await _observe(scope, execution, result)
    # Snapshot the callback when execution starts, as the contract says.
    finalize = definition.finalize_content

    typed: Any = frozen
    if early is None and definition.parse_args is not None:
        try:
            typed = definition.parse_args(frozen)
        except ToolError as exc:
            early = failure(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - contained by contract
            early = failure(errors.INVALID_ARGS, f"Invalid arguments for tool {call.name!r}: {exc}")

    if early is not None:
        result = early
    else:
        result = await _policy_and_dispatch(scope, definition, execution, typed)

    result = _finalize(finalize, execution, result)
    return await _observe(scope, execution, result)


async def _policy_and_dispatch(
    scope: PipelineScope, definition: ToolDefinition, execution: ToolExecution, typed: Any
) -> ToolExecutionResult:
    registry = scope.registry

    # 2. pre-execute waterfall
    listeners = list(registry.pre_execute)

    async def pre(i: int) -> PreToolDecision:
        if i >= len(listeners):
            return ALLOW
        out = listeners[i](execution, lambda: pre(i + 1))
        decision: Any = await out if _awaitable(out) else out
        return decision  # type: ignore[no-any-return]

    try:
        decision: Any = await pre(0) if listeners else ALLOW
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("pre-execute listener failed for %s", execution.call_id)
        return failure(errors.DENIED, f"Tool {execution.name!r} was denied: a policy check failed ({exc}).")

    if isinstance(decision, Deny):
        return failure(errors.DENIED, decision.reason or f"Tool {execution.name!r} was denied by policy.")
    if isinstance(decision, Ask):
        denied = await _ask(scope, execution, decision)
        if denied is not None:
            return denied
    elif not isinstance(decision, Allow):
        return failure(errors.DENIED, f"Tool {execution.name!r} was denied: a policy returned {decision!r}.")

    # 3. guards: monotonic, can only deny
    for guard in list(registry.guards):
        try:
            reason = guard(execution)
        except Exception as exc:
            log.exception("guard failed for %s", execution.call_id)
            return failure(errors.DENIED, f"Tool {execution.name!r} was denied: a guard failed ({exc}).")
        if reason is not None:
            return failure(errors.DENIED, str(reason))

    # 4. execute wrappers → body
    wrappers = list(registry.execute_wrappers)
    caller_signal = execution.signal
    contexts: list[ToolRunContext] = []

    async def dispatch(i: int, view: ToolExecution) -> ToolExecutionResult:
        # Identity is the pipeline's: only the signal of a wrapper's view is taken, and the caller's
        # signal is fused back in so no wrapper can remove cancellation. Re-fuse only when the view's
        # signal does not already carry the caller's (the timeout wrapper's does): each fuse hangs a
        # callback on the caller's long-lived signal until it is closed.
        signal = view.signal if isinstance(view, ToolExecution) else caller_signal
        fused_here = not derives_from(signal, caller_signal)
        if fused_here:
            signal = fuse(signal, caller_signal)
        current = execution if signal is caller_signal else execution.with_signal(signal)
        try:
            if i >= len(wrappers):
                ctx = ToolRunContext(current, scope)
                contexts.append(ctx)
                return await _run_body(definition, current, ctx, typed)
            return await wrappers[i](current, lambda v: dispatch(i + 1, v))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("execute wrapper failed for %s", execution.call_id)
            return failure(errors.INTERNAL, f"Tool {execution.name!r} failed in an execute wrapper: {exc}")
        finally:
            if fused_here:
                close_fused(signal)

    result = await dispatch(0, execution)

    # 5. post-execute waterfall
    result = await _post_execute(scope, definition, execution, typed, result)

    ctx_last = contexts[-1] if contexts else None
    if ctx_last is not None:
        deferred = ctx_last.deferred_contexts
        if deferred:
            result = replace(result, additional_contexts=deferred + result.additional_contexts)
        if ctx_last.concluded and isinstance(result, ToolSuccess):
            result = replace(result, concludes_turn=True)
    return result


async def _ask(scope: PipelineScope, execution: ToolExecution, decision: Ask) -> ToolFailure | None:
    service = scope.registry.approval
    what = f"Tool {execution.name!r}"
    if execution.agent is None:
        return failure(
            errors.DENIED, f"{what} needs approval, but the call has no agent to ask on behalf of."
        )
    if service is None:
        return failure(errors.DENIED, f"{what} needs approval, but no approval service is available.")
    if execution.signal.cancelled:
        return _cancelled(execution, execution.signal)
    try:
        answer = await until_cancelled(service.request_approval(execution, decision.reason), execution.signal)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("approval request failed for %s", execution.call_id)
        return failure(errors.DENIED, f"{what} was denied: the approval request failed ({exc}).")
    if answer is None:
        return _cancelled(execution, execution.signal)
    if not isinstance(answer, ApprovalAnswer):
        return failure(errors.DENIED, f"{what} was denied: the approval service gave no valid answer.")
    if answer.outcome == "allowed-once":
        return None
    if answer.outcome == "cancelled":
        return failure(errors.CANCELLED, answer.reason or f"{what} was cancelled while waiting for approval.")
    return failure(errors.DENIED, answer.reason or f"The user rejected tool {execution.name!r}.")


def _cancelled(execution: ToolExecution, signal: CancelSignal) -> ToolFailure:
    reason = signal.reason
    if reason is None:
        return failure(errors.CANCELLED, f"Tool {execution.name!r} was cancelled.")
    return failure(reason.code, reason.message)


async def _run_body(
    definition: ToolDefinition, execution: ToolExecution, ctx: ToolRunContext, typed: Any
) -> ToolExecutionResult:
    signal = execution.signal
    if signal.cancelled:
        return _cancelled(execution, signal)
    # The body runs inline in this task (no task per call: it is the hot path); the signal cancels this
    # task and `uncancel` tells our own cancellation apart from the caller's, as asyncio.timeout does.
    task = asyncio.current_task()
    assert task is not None

    def stop(_reason: object) -> None:
        task.cancel()

    dispose = signal.on_cancel(stop)
    try:
        value = await definition.execute(typed, ctx)
    except asyncio.CancelledError:
        dispose()
        if signal.cancelled and task.uncancel() == 0:
            return replace(_cancelled(execution, signal), meta=_frozen_meta(ctx.partial_meta))
        raise
    except ToolError as exc:
        dispose()
        _consume_own_cancel(task, signal)
        own = exc.meta if exc.meta is not None else ctx.partial_meta
        return failure(exc.code, exc.message, meta=_frozen_meta(own))
    except Exception as exc:
        dispose()
        _consume_own_cancel(task, signal)
        log.warning("tool %r raised", execution.name, exc_info=True)
        return failure(
            errors.TOOL_FAILED,
            f"Tool {execution.name!r} failed: {type(exc).__name__}: {exc}",
            meta=_frozen_meta(ctx.partial_meta),
        )
    dispose()
    _consume_own_cancel(task, signal)
    if signal.cancelled:
        # The body returned despite cancellation: the call is still cancelled (its owned work stopped).
        return replace(_cancelled(execution, signal), meta=_frozen_meta(ctx.partial_meta))
    return _materialise_success(definition, execution, typed, value, (), False)


def _consume_own_cancel(task: asyncio.Task[Any], signal: CancelSignal) -> None:
    """Our signal fired but the body did not end with CancelledError (it returned, raised something else,
    or swallowed the cancel): take back the cancel request we made, so it cannot hit a later await."""
    if signal.cancelled and task.cancelling():
        task.uncancel()


def _frozen_meta(meta: Any) -> JsonValue:
    """A failure's presentation meta, frozen like a success's; not lossless JSON → dropped (logged)."""
    if meta is None:
        return None
    try:
        return snapshot(meta)
    except NotJsonError as err:
        log.warning("failure meta dropped (not lossless JSON): %s", err)
        return None


def _materialise_success(
    definition: ToolDefinition,
    execution: ToolExecution,
    typed: Any,
    value: Any,
    contexts: tuple[ContextMessage, ...],
    concludes: bool,
) -> ToolExecutionResult:
    name = execution.name
    try:
        frozen = snapshot(value)
    except NotJsonError as exc:
        return failure(
            errors.INVALID_TOOL_OUTPUT, str(errors.ToolOutputError(name, [Violation(exc.path, exc.reason)]))
        )
    violations = definition.output.violations(frozen)
    if violations:
        return failure(errors.INVALID_TOOL_OUTPUT, str(errors.ToolOutputError(name, violations)))
    try:
        typed_value = definition.output.parse_value(frozen) if definition.output.parse_value else frozen
        content = _content_tuple(definition.output.render(typed, typed_value))
        meta: JsonValue = None
        if definition.output.presentation_meta is not None:
            meta = snapshot(definition.output.presentation_meta(typed, typed_value))
    except Exception as exc:
        log.warning("render/presentation of tool %r failed", name, exc_info=True)
        return failure(errors.INVALID_TOOL_OUTPUT, f"Tool {name!r} could not render its result: {exc}")
    return ToolSuccess(frozen, content, meta, contexts, concludes)


def _content_tuple(content: Any) -> tuple[ContentBlock, ...]:
    if isinstance(content, str):
        return (TextBlock(content),)
    out = tuple(content)
    for block in out:
        if not isinstance(block, (TextBlock, ImageBlock)):
            raise TypeError(f"content must be TextBlock/ImageBlock, got {type(block).__name__}")
    return out


async def _post_execute(
    scope: PipelineScope,
    definition: ToolDefinition,
    execution: ToolExecution,
    typed: Any,
    result: ToolExecutionResult,
) -> ToolExecutionResult:
    listeners = list(scope.registry.post_execute)
    if not listeners:
        return result

    async def post(i: int) -> PostToolDecision:
        if i >= len(listeners):
            return Accept()
        out = listeners[i](execution, result, lambda: post(i + 1))
        decision: Any = await out if _awaitable(out) else out
        return decision  # type: ignore[no-any-return]

    try:
        decision: Any = await post(0)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("post-execute listener failed for %s", execution.call_id)
        return failure(errors.INTERNAL, f"Tool {execution.name!r} failed in a post-execute check: {exc}")

    if isinstance(decision, Block):
        feedback = _content_tuple(decision.feedback)
        message = "\n".join(b.text for b in feedback if isinstance(b, TextBlock)) or "blocked by policy"
        return ToolFailure(
            ToolFailureInfo(message, errors.BLOCKED),
            feedback,
            result.meta,
            tuple(decision.additional_contexts),
        )
    if not isinstance(decision, Accept):
        return failure(
            errors.INTERNAL, f"Tool {execution.name!r}: a post-execute listener returned {decision!r}."
        )

    contexts = result.additional_contexts + tuple(decision.additional_contexts)
    if decision.value is not UNSET:
        if not isinstance(result, ToolSuccess):
            log.warning("post-execute value replacement on a failed call %s ignored", execution.call_id)
            return replace(result, additional_contexts=contexts)
        # A replaced value is revalidated and re-rendered.
        return _materialise_success(
            definition, execution, typed, decision.value, contexts, result.concludes_turn
        )
    if decision.content is not None:
        try:
            content = _content_tuple(decision.content)
        except TypeError as exc:
            return failure(errors.INTERNAL, f"Tool {execution.name!r}: invalid replacement content: {exc}")
        return replace(result, content=content, additional_contexts=contexts)
    return replace(result, additional_contexts=contexts) if contexts != result.additional_contexts else result


def _finalize(finalize: Any, execution: ToolExecution, result: ToolExecutionResult) -> ToolExecutionResult:
    if finalize is None:
        return result
    try:
        replacement = finalize(execution, result)
        if replacement is None:
            return result
        return replace(result, content=_content_tuple(replacement))
    except Exception:
        log.exception("finalize_content of tool %r failed; content kept", execution.name)
        return result


async def _observe(
    scope: PipelineScope, execution: ToolExecution, result: ToolExecutionResult
) -> ToolExecutionResult:
    for observer in list(scope.registry.result_observers):
        try:
            out = observer(execution, result)
            if _awaitable(out):
                await out
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("result observer failed for %s", execution.call_id)
    return result
