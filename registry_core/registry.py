"""`ToolRegistry`: registration, visibility (restrictions and scoped overlays), the model-facing schema
list, the policy hook lists, and the entry point `execute()`.

Visibility: the global layer holds deployment-wide tools. A `ToolScope` sees the global layer filtered by
every one of its `ToolRestriction`s (they intersect), with scope-local registrations laid over it (a
local tool shadows a global one of the same name and is never filtered).

`schemas()` builds the model-facing list through an explicit allowlist: name, description, parameters.
Output declarations, bodies, callbacks and timeouts never reach a model.

`tools/change`: every registration and disposal, global or scoped, is told to the `on_tools_change`
listeners and bumps `tools_version`, so a host rebuilds the model's tool list only when it changed.

The reserved Code Mode transport (`register(..., transport=True)`, the `run_code` tool) is never filtered
by a restriction, and is not among the tools a nested call may name (`nested_tools`): a program sees
exactly the other tools its scope shows. Its description may be computed from those tools
(`ToolDefinition.describe`), so the model reads the typed signatures of what a program can call.
"""

from __future__ import annotations

import copy
import itertools
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .code_dispatch import log_code_dispatch
from .definition import ToolDefinition, check_definition
from .errors import RegistrationError
from .events import CodeDispatchEvent
from .execution import CodeDispatchLog, NestedTool, ToolExecutionInput, ToolExecutionResult
from .execution import ExecutionMode as ExecutionMode
from .json_values import NotJsonError, copy_json, snapshot
from .pipeline import run_pipeline
from .policy import (
    ApprovalService,
    CodeDispatchLogListener,
    CodeDispatchObserver,
    ExecuteWrapper,
    PostExecuteListener,
    PreExecuteListener,
    ResultObserver,
    ToolGuard,
)
from .timeouts import timeout_wrapper

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolsChange:
    """`tools/change`: `name` was registered (or unregistered), globally (`scope` None) or in `scope`."""

    name: str
    registered: bool
    scope: ToolScope | None = None


ToolsChangeListener = Callable[[ToolsChange], None]


@dataclass(frozen=True, slots=True)
class ToolRestriction:
    """A filter over the global layer. `allow` (when given) keeps only those names; `deny` removes names.
    A deny-only restriction admits globals registered later; an allow list excludes them."""

    allow: frozenset[str] | None = None
    deny: frozenset[str] = frozenset()

    @staticmethod
    def of(allow: Iterable[str] | None = None, deny: Iterable[str] = ()) -> ToolRestriction:
        return ToolRestriction(frozenset(allow) if allow is not None else None, frozenset(deny))

    def admits(self, name: str) -> bool:
        if name in self.deny:
            return False
        return self.allow is None or name in self.allow


def _dispose_from(items: list[Any], item: Any) -> Callable[[], None]:
    def dispose() -> None:
        for i, existing in enumerate(items):
            if existing is item:
                del items[i]
                return

    return dispose


class ToolRegistry:
    """The deployment-global tool layer plus the pipeline's hook lists."""

    def __init__(self, *, approval: ApprovalService | None = None, timeout_policy: bool = True) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        self.pre_execute: list[PreExecuteListener] = []
        self.guards: list[ToolGuard] = []
        self.execute_wrappers: list[ExecuteWrapper] = []
        self.post_execute: list[PostExecuteListener] = []
        self.result_observers: list[ResultObserver] = []
        self.code_dispatch_log: list[CodeDispatchLogListener] = []
        self.code_dispatch_observers: list[CodeDispatchObserver] = []
        self.approval: ApprovalService | None = approval
        self._transports: set[str] = set()
        self._tokens = itertools.count(1)
        self.change_listeners: list[ToolsChangeListener] = []
        self.tools_version = 0
        self._root = ToolScope(self, (), {})
        if timeout_policy:
            self.add_execute_wrapper(timeout_wrapper)

    # --- registration ----------------------------------------------------------------------------

    def register(self, definition: ToolDefinition, *, transport: bool = False) -> Callable[[], None]:
        """Register a global tool; returns a disposer. Raises RegistrationError (checks, duplicates).
        `transport`: the reserved Code Mode transport (see the module docstring)."""
        check_definition(definition)
        if definition.name in self._tools:
            raise RegistrationError(f"a tool named {definition.name!r} is already registered")
        self._tools[definition.name] = definition
        if transport:
            self._transports.add(definition.name)
        # After the registry is complete: a listener may list the tools at once (`schemas` caches).
        self.tools_changed(ToolsChange(definition.name, True))

        def dispose() -> None:
            if self._tools.get(definition.name) is definition:
                del self._tools[definition.name]
                self._transports.discard(definition.name)
                self.tools_changed(ToolsChange(definition.name, False))

        return dispose

    def is_transport(self, name: str) -> bool:
        """Whether `name` is the reserved Code Mode transport."""
        return name in self._transports

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return self._root.schemas()

    def scope(
        self, restrictions: Sequence[ToolRestriction] = (), local: Mapping[str, ToolDefinition] | None = None
    ) -> ToolScope:
        return ToolScope(self, tuple(restrictions), dict(local or {}))

    @property
    def root(self) -> ToolScope:
        return self._root

    def tools_changed(self, change: ToolsChange) -> None:
        """Emit `tools/change` (a failing listener is logged, never raised into the registration)."""
        self.tools_version += 1
        for listener in list(self.change_listeners):
            try:
                listener(change)
            except Exception:
                log.exception("tools/change listener failed for %r", change.name)

    # --- hooks (each returns a disposer) ---------------------------------------------------------

    def on_tools_change(self, listener: ToolsChangeListener) -> Callable[[], None]:
        self.change_listeners.append(listener)
        return _dispose_from(self.change_listeners, listener)

    def on_pre_execute(self, listener: PreExecuteListener, *, first: bool = False) -> Callable[[], None]:
        """Add a pre-execute listener; `first=True` puts it ahead of the others (the waterfall is ordered)."""
        if first:
            self.pre_execute.insert(0, listener)
        else:
            self.pre_execute.append(listener)
        return _dispose_from(self.pre_execute, listener)

    def add_guard(self, guard: ToolGuard) -> Callable[[], None]:
        self.guards.append(guard)
        return _dispose_from(self.guards, guard)

    def add_execute_wrapper(self, wrapper: ExecuteWrapper, *, outermost: bool = False) -> Callable[[], None]:
        """Wrappers run outermost first. The built-in timeout wrapper is innermost-first registered, so
        later wrappers (retries, logging) see a timed-out call as its error result."""
        if outermost:
            self.execute_wrappers.insert(0, wrapper)
        else:
            self.execute_wrappers.append(wrapper)
        return _dispose_from(self.execute_wrappers, wrapper)

    def on_post_execute(self, listener: PostExecuteListener) -> Callable[[], None]:
        self.post_execute.append(listener)
        return _dispose_from(self.post_execute, listener)

    def on_result(self, observer: ResultObserver) -> Callable[[], None]:
        self.result_observers.append(observer)
        return _dispose_from(self.result_observers, observer)

    def on_code_dispatch_log(self, listener: CodeDispatchLogListener) -> Callable[[], None]:
        """Add a `tools/code-dispatch-log` listener: it may reshape the content of a settled Code Mode
        sub-dispatch's durable copy (see `code_dispatch`)."""
        self.code_dispatch_log.append(listener)
        return _dispose_from(self.code_dispatch_log, listener)

    def on_code_dispatch(self, observer: CodeDispatchObserver) -> Callable[[], None]:
        """Observe each durable `tool/code-dispatch` event (with the outer execution it belongs to)."""
        self.code_dispatch_observers.append(observer)
        return _dispose_from(self.code_dispatch_observers, observer)

    async def log_code_dispatch(self, entry: CodeDispatchLog) -> CodeDispatchEvent:
        """Log one settled Code Mode sub-dispatch: the waterfall, then the observers; the durable event."""
        return await log_code_dispatch(self.code_dispatch_log, self.code_dispatch_observers, entry)

    def next_token_label(self, call_id: str) -> str:
        return f"{call_id}#{next(self._tokens)}"

    # --- execution -------------------------------------------------------------------------------

    def execute(self, call: ToolExecutionInput) -> Coroutine[Any, Any, ToolExecutionResult]:
        # The pipeline's own coroutine, not one more awaiting it: every call of a session passes here.
        return self._root.execute(call)

    def execution_mode(self, name: str, arguments: Any) -> ExecutionMode:
        return self._root.execution_mode(name, arguments)


class ToolScope:
    """One scope's view: filtered globals with local registrations overlaid."""

    def __init__(
        self,
        registry: ToolRegistry,
        restrictions: tuple[ToolRestriction, ...],
        local: dict[str, ToolDefinition],
    ) -> None:
        self.registry = registry
        self.restrictions = restrictions
        self._local = local
        # `schemas()` as built at a `tools_version`: every turn lists the tools, and building the list
        # (the deep copies, the transport's description from every nested tool's signature) costs
        # milliseconds a turn; a registration or disposal anywhere bumps the version.
        self._schemas: tuple[int, list[dict[str, Any]]] | None = None

    def register(self, definition: ToolDefinition) -> Callable[[], None]:
        """A scope-local tool: shadows a global of the same name, unaffected by restrictions."""
        check_definition(definition)
        if definition.name in self._local:
            raise RegistrationError(f"a scoped tool named {definition.name!r} is already registered")
        self._local[definition.name] = definition
        self.registry.tools_changed(ToolsChange(definition.name, True, self))

        def dispose() -> None:
            if self._local.get(definition.name) is definition:
                del self._local[definition.name]
                self.registry.tools_changed(ToolsChange(definition.name, False, self))

        return dispose

    def restricted(self, restriction: ToolRestriction) -> ToolScope:
        return ToolScope(self.registry, (*self.restrictions, restriction), self._local)

    def _admits(self, name: str) -> bool:
        restrictions = self.restrictions
        if not restrictions:  # a session's own scope: every call resolves through here
            return True
        return self.registry.is_transport(name) or all(r.admits(name) for r in restrictions)

    def get(self, name: str) -> ToolDefinition | None:
        local = self._local.get(name)
        if local is not None:
            return local
        if not self._admits(name):
            return None
        return self.registry.get(name)

    def names(self) -> list[str]:
        visible = [n for n in self.registry.names() if n not in self._local and self._admits(n)]
        return visible + list(self._local)

    def schemas(self) -> list[dict[str, Any]]:
        """The model-facing list, a fresh copy each time (no caller can change a later caller's list)."""
        version = self.registry.tools_version
        cached = self._schemas
        if cached is None or cached[0] != version:
            cached = self._schemas = (version, self._build_schemas())
        fresh: list[dict[str, Any]] = copy_json(cached[1])
        return fresh

    def _build_schemas(self) -> list[dict[str, Any]]:
        out = []
        nested: list[NestedTool] | None = None
        for name in self.names():
            definition = self.get(name)
            assert definition is not None
            description = definition.description
            if definition.describe is not None:
                if nested is None:
                    nested = self.nested_tools()
                description = _described(definition, nested)
            # The explicit allowlist; a deep copy so no caller can mutate a registered schema.
            out.append(
                {
                    "name": definition.name,
                    "description": description,
                    "parameters": copy.deepcopy(dict(definition.parameters)),
                }
            )
        return out

    def nested_tools(self) -> list[NestedTool]:
        """The tools a nested call (a Code Mode program's sub-call) may name: every visible tool but the
        transport, with its output schema (deep copies: no caller can mutate a registered schema)."""
        out = []
        for name in self.names():
            definition = self.get(name)
            if definition is None or self.registry.is_transport(name):
                continue
            out.append(
                NestedTool(
                    definition.name,
                    definition.description,
                    copy.deepcopy(dict(definition.parameters)),
                    copy.deepcopy(dict(definition.output.schema)),
                )
            )
        return out

    async def log_code_dispatch(self, entry: CodeDispatchLog) -> None:
        await self.registry.log_code_dispatch(entry)

    def execution_mode(self, name: str, arguments: Any) -> ExecutionMode:
        """`parallel` only when the tool's classifier returns exactly True; anything else is exclusive."""
        definition = self.get(name)
        if definition is None or definition.is_concurrency_safe is None or isinstance(arguments, str):
            return "exclusive"
        try:
            frozen = snapshot(arguments)
            typed = definition.parse_args(frozen) if definition.parse_args else frozen
            return "parallel" if definition.is_concurrency_safe(typed) is True else "exclusive"
        except (NotJsonError, Exception):  # noqa: BLE001 - contained by contract
            return "exclusive"

    def execute(self, call: ToolExecutionInput) -> Coroutine[Any, Any, ToolExecutionResult]:
        # The pipeline's own coroutine, not one more awaiting it: every call of a step passes here.
        return run_pipeline(self, call)


def _described(definition: ToolDefinition, nested: list[NestedTool]) -> str:
    assert definition.describe is not None
    try:
        text = definition.describe(nested)
    except Exception:
        log.exception("describe of tool %r failed; its static description is sent", definition.name)
        return definition.description
    return text if isinstance(text, str) else definition.description
