"""Decisions and the policy seams of the pipeline.

Pre-execute listeners form a waterfall: each gets `(execution, next)` and either returns a decision
(short-circuit) or awaits `next()` for the default. `Allow` runs the call; `Deny` fails it; `Ask` runs it
only when the approval service answers "allowed-once" (no service, no agent or any other answer denies;
"cancelled" stays a cancellation). Guards run after the waterfall and can only deny. Post-execute
listeners may accept (optionally replacing content *or* value), or block with corrective feedback.

Code Mode adds one waterfall and one observer list: `tools/code-dispatch-log` listeners get
`(entry, next)` for each settled sub-dispatch and return the content of its durable copy (`next()` gives
the default: the content as the later listeners leave it); code-dispatch observers then receive the
durable `tool/code-dispatch` event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .content import ContentBlock, ContextMessage

if TYPE_CHECKING:
    from .events import CodeDispatchEvent
    from .execution import CodeDispatchLog, ToolExecution, ToolExecutionResult


@dataclass(frozen=True, slots=True)
class Allow:
    kind: Literal["allow"] = "allow"


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str
    kind: Literal["deny"] = "deny"


@dataclass(frozen=True, slots=True)
class Ask:
    reason: str | None = None
    kind: Literal["ask"] = "ask"


PreToolDecision = Allow | Deny | Ask

ALLOW = Allow()


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True, slots=True)
class Accept:
    """Keep the call successful. Replace `content` *or* `value` (never both); a replaced value is
    revalidated and re-rendered. On a failed result, replacements are ignored (only contexts apply)."""

    content: tuple[ContentBlock, ...] | None = None
    value: Any = UNSET
    additional_contexts: tuple[ContextMessage, ...] = ()
    kind: Literal["accept"] = "accept"

    def __post_init__(self) -> None:
        if self.content is not None and self.value is not UNSET:
            raise ValueError("Accept replaces content or value, never both")


@dataclass(frozen=True, slots=True)
class Block:
    """Turn the call into an error whose content is the corrective feedback."""

    feedback: tuple[ContentBlock, ...]
    additional_contexts: tuple[ContextMessage, ...] = ()
    kind: Literal["block"] = "block"


PostToolDecision = Accept | Block

ACCEPT = Accept()

PreNext = Callable[[], Awaitable[PreToolDecision]]
PreExecuteListener = Callable[["ToolExecution", PreNext], Awaitable[PreToolDecision]]
PostNext = Callable[[], Awaitable[PostToolDecision]]
PostExecuteListener = Callable[
    ["ToolExecution", "ToolExecutionResult", PostNext], Awaitable[PostToolDecision]
]
ToolGuard = Callable[["ToolExecution"], str | None]
ExecuteNext = Callable[["ToolExecution"], Awaitable["ToolExecutionResult"]]
ExecuteWrapper = Callable[["ToolExecution", ExecuteNext], Awaitable["ToolExecutionResult"]]
ResultObserver = Callable[["ToolExecution", "ToolExecutionResult"], Any]
CodeDispatchNext = Callable[[], Awaitable[tuple[ContentBlock, ...]]]
CodeDispatchLogListener = Callable[
    ["CodeDispatchLog", CodeDispatchNext], Awaitable[Sequence[ContentBlock]] | Sequence[ContentBlock]
]
# The outer (program) execution and the durable event of one of its sub-calls.
CodeDispatchObserver = Callable[["ToolExecution", "CodeDispatchEvent"], Any]

ApprovalOutcome = Literal["allowed-once", "denied", "cancelled"]


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """The approval service's answer. `reason` explains a denial to the user and the model."""

    outcome: ApprovalOutcome
    reason: str | None = None


class ApprovalService(Protocol):
    """Asks someone (the editor's user) whether an `ask`ed call may run."""

    async def request_approval(self, execution: ToolExecution, reason: str | None) -> ApprovalAnswer: ...
