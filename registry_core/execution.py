"""One tool call as the pipeline sees it: its input, its frozen identity, its run context, its outcome.

Call identity lives on the immutable `ToolExecution` (never on results), so no hook can create a second,
disagreeing identity. Results are a closed union: `ToolSuccess` (with the execution-local canonical
`value`) or `ToolFailure` (with a `ToolFailureInfo`); both carry the model-facing `content`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .cancellation import NEVER, CancelSignal
from .content import ContentBlock, ContextMessage
from .json_values import JsonValue

if TYPE_CHECKING:
    from .presentation import ToolProgress


@dataclass(frozen=True, slots=True, eq=False)
class Agent:
    """On whose behalf a call runs: the session's identity and workspace.

    `cwd` is absolute; `roots` are the directories file tools may touch without asking (cwd first).
    `services` carries host-provided capabilities a tool may use when present (e.g. editor file access).
    """

    id: str
    cwd: str
    roots: tuple[str, ...] = ()
    services: dict[str, Any] = field(default_factory=dict)


class ToolExecutionToken:
    """Opaque call identity: compared by identity only, shared with nested calls as their `parent`."""

    __slots__ = ("__weakref__", "_label")

    def __init__(self, label: str) -> None:
        self._label = label

    def __repr__(self) -> str:
        return f"<ToolExecutionToken {self._label}>"


ProgressSink = Callable[["ToolExecution", "ToolProgress"], None]

ExecutionMode = Literal["parallel", "exclusive"]


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """A call's arguments as a caller already materialised them for one tool definition (a host parses
    each call once for its cards): `frozen` is `snapshot(arguments)` and `typed` that definition's
    `parse_args(frozen)`. Handed to the pipeline (`ToolExecutionInput.parsed`) so the call runs with the
    very arguments the caller showed, without a second snapshot and parse."""

    definition: object  # the `ToolDefinition` `typed` was parsed by (compared by identity)
    frozen: JsonValue
    typed: Any


@dataclass(frozen=True, slots=True)
class ToolExecutionInput:
    """What a caller supplies for one call. `arguments` are the parsed model arguments (a raw string
    stands for unparseable model output and fails with INVALID_ARGS). `parsed`: the same arguments
    already snapshotted and parsed by the caller; the pipeline takes them when the tool it resolves is
    that definition, and parses `arguments` itself otherwise."""

    call_id: str
    name: str
    arguments: Any
    signal: CancelSignal = NEVER
    agent: Agent | None = None
    parent: ToolExecutionToken | None = None
    on_progress: ProgressSink | None = None
    parsed: ParsedArguments | None = None


@dataclass(frozen=True, slots=True)
class ToolExecution:
    """The pipeline-owned call: arguments snapshotted and deep-frozen once, a registry-assigned token.

    `timeout_ms` is the resolved tool's deadline (host-only, never sent to a model), carried here so an
    execute wrapper (the timeout policy) reads it from the call it wraps instead of looking the tool up.
    """

    call_id: str
    name: str
    arguments: JsonValue
    signal: CancelSignal
    token: ToolExecutionToken
    agent: Agent | None = None
    parent: ToolExecutionToken | None = None
    on_progress: ProgressSink | None = None
    timeout_ms: float | None = None

    def with_signal(self, signal: CancelSignal) -> ToolExecution:
        # Direct construction: `dataclasses.replace` costs several microseconds on this hot path.
        return ToolExecution(
            self.call_id,
            self.name,
            self.arguments,
            signal,
            self.token,
            self.agent,
            self.parent,
            self.on_progress,
            self.timeout_ms,
        )


@dataclass(frozen=True, slots=True)
class ToolFailureInfo:
    """Canonical failure detail: a human message (no "Error: " envelope) and a stable code."""

    message: str
    code: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message}
        if self.code is not None:
            out["code"] = self.code
        return out


@dataclass(frozen=True, slots=True)
class ToolSuccess:
    value: JsonValue
    content: tuple[ContentBlock, ...]
    meta: JsonValue = None
    additional_contexts: tuple[ContextMessage, ...] = ()
    concludes_turn: bool = False
    is_error: Literal[False] = False

    @property
    def error(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class ToolFailure:
    error: ToolFailureInfo
    content: tuple[ContentBlock, ...]
    meta: JsonValue = None
    additional_contexts: tuple[ContextMessage, ...] = ()
    is_error: Literal[True] = True

    @property
    def concludes_turn(self) -> bool:
        return False


ToolExecutionResult = ToolSuccess | ToolFailure


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The durable projection of a result, what `present_result` and replay see: never the value."""

    content: tuple[ContentBlock, ...]
    is_error: bool
    error: ToolFailureInfo | None = None
    meta: JsonValue = None

    @staticmethod
    def of(result: ToolExecutionResult) -> ToolResult:
        return ToolResult(result.content, result.is_error, result.error, result.meta)


@dataclass(frozen=True, slots=True)
class NestedTool:
    """A tool a composite tool's nested calls may name, as the composite's scope shows it: the
    model-facing fields plus the declared output schema, so the composite can tell its own caller (a
    program's author) what each call returns. Never sent to a model as a tool schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    output: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CodeDispatchLog:
    """One settled Code Mode sub-dispatch about to be logged, as the `tools/code-dispatch-log` waterfall
    sees it: the outer execution (`execution`: session owner, outer call identity), the sub-call's
    identity and arguments, and its outcome. `content` is the rendered result projection (what a
    top-level `tool/result` would carry); the program itself received the structured value, or only the
    error message. A listener may reshape the content of the durable copy, nothing else."""

    execution: ToolExecution
    sub_call_id: str  # `<outer call id>:code:<n>`
    name: str
    arguments: JsonValue
    is_error: bool
    content: tuple[ContentBlock, ...]
    error: ToolFailureInfo | None = None
    meta: JsonValue = None

    @property
    def agent(self) -> Agent | None:
        return self.execution.agent


class NestedDispatch(Protocol):
    """What a composite tool's body may do with the scope its own call runs in (`ToolRunContext.nested`):
    see the tools a nested call may name, ask how one would be scheduled, dispatch one through the full
    pipeline, and log a settled Code Mode sub-dispatch (the `tools/code-dispatch-log` waterfall, then the
    durable `tool/code-dispatch` event to the registry's observers)."""

    def nested_tools(self) -> list[NestedTool]: ...

    def execution_mode(self, name: str, arguments: Any) -> ExecutionMode: ...

    async def execute(self, call: ToolExecutionInput) -> ToolExecutionResult: ...

    async def log_code_dispatch(self, entry: CodeDispatchLog) -> None: ...


class ToolRunContext:
    """Handed to a tool body: the execution plus the composite-tool and progress channels. `nested` is the
    scope the call runs in (None when a caller built the context by hand)."""

    __slots__ = ("_concluded", "_deferred", "_partial_meta", "execution", "nested")

    def __init__(self, execution: ToolExecution, nested: NestedDispatch | None = None) -> None:
        self.execution = execution
        self.nested = nested
        self._deferred: list[ContextMessage] = []
        self._concluded = False
        self._partial_meta: Any = None

    @property
    def call_id(self) -> str:
        return self.execution.call_id

    @property
    def signal(self) -> CancelSignal:
        return self.execution.signal

    @property
    def agent(self) -> Agent | None:
        return self.execution.agent

    @property
    def token(self) -> ToolExecutionToken:
        return self.execution.token

    def defer_context(self, context: ContextMessage) -> None:
        """Record nested-dispatch context; it reaches the loop after this call's result, in call order."""
        self._deferred.append(context)

    def conclude_turn(self) -> None:
        """Mark a successful result as ending the agent turn (ignored when the call fails)."""
        self._concluded = True

    def set_partial_meta(self, meta: Any) -> None:
        """Presentation metadata for the card if the call ends without a value: cancelled, timed out by
        the registry, or failed. A body that is stopped part-way (a command killed mid-run) records what
        its card showed and how it ended, so the live card and a replay of it keep that. Must be lossless
        JSON (otherwise dropped, logged); a `ToolError`'s own `meta` wins over it."""
        self._partial_meta = meta

    @property
    def partial_meta(self) -> Any:
        return self._partial_meta

    def progress(self, update: ToolProgress) -> None:
        """Report live progress (e.g. terminal output). Never raises: a broken sink is not the tool's."""
        sink = self.execution.on_progress
        if sink is None:
            return
        try:
            sink(self.execution, update)
        except Exception:
            import logging

            logging.getLogger(__name__).exception("progress sink failed for call %s", self.call_id)

    @property
    def deferred_contexts(self) -> tuple[ContextMessage, ...]:
        return tuple(self._deferred)

    @property
    def concluded(self) -> bool:
        return self._concluded
