"""`ToolDefinition`, the one registered shape of a tool, and `define_tool`, the typed way to build one.

A raw `ToolDefinition` takes frozen JSON arguments and returns a JSON value; `define_tool` adds typed
parameters and output for Python authors: the seed's spec dictionaries, or pydantic models (or any type
pydantic understands). It compiles both to the enforced JSON-Schema subset, validates arguments before
the body runs (`ToolArgsError`, listing every violation with its path) and the body's value against the
output type (`ToolOutputError`). Spec dictionaries need no pydantic: `pydantic_types` (and pydantic) is
imported only when a tool declares a Python type, which keeps a registry of spec tools cheap to start.

The registry calls `parse_args` once per call and hands the typed arguments to the body, `render`,
`presentation_meta`, `is_concurrency_safe` and the presenters, so each runs against one validated view.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .content import ContentBlock, TextBlock
from .errors import RegistrationError, ToolArgsError, Violation
from .execution import NestedTool, ToolExecution, ToolExecutionResult, ToolResult, ToolRunContext
from .json_schema import JsonSchema, assert_object_schema, assert_supported, compile_validator
from .json_values import JsonValue, NotJsonError, snapshot
from .schema import compile_parameters_spec, compile_value_spec

RenderFn = Callable[[Any, JsonValue], Sequence[ContentBlock]]
FinalizeFn = Callable[[ToolExecution, ToolExecutionResult], Sequence[ContentBlock] | None]


@dataclass(frozen=True, slots=True)
class ToolOutputDefinition:
    """The mandatory canonical output contract: a raw schema, a pure renderer to model content, and an
    optional pure projection to presentation metadata (persisted with the result for replay)."""

    schema: JsonSchema
    render: RenderFn
    presentation_meta: Callable[[Any, JsonValue], JsonValue] | None = None
    # Typed DSL hook: turn the canonical JSON value into the author's type before render/meta.
    parse_value: Callable[[JsonValue], Any] | None = None
    _check: Callable[[JsonValue], list[Violation]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def violations(self, value: JsonValue) -> list[Violation]:
        """Every way `value` violates `schema`. The schema is compiled on the first call: a registered
        definition is borrowed read-only (and its schema checked at registration)."""
        check = self._check
        if check is None:
            check = compile_validator(self.schema)
            object.__setattr__(self, "_check", check)
        return check(value)


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A registered tool. Only `name`, `description` and `parameters` ever reach a model."""

    name: str
    description: str
    parameters: JsonSchema
    output: ToolOutputDefinition
    execute: Callable[[Any, ToolRunContext], Awaitable[Any]]
    finalize_content: FinalizeFn | None = None
    timeout_ms: float | None = None
    is_concurrency_safe: Callable[[Any], bool] | None = None
    present_call: Callable[[Any], Any] | None = None
    present_result: Callable[[Any, ToolResult], Any] | None = None
    # Typed DSL hook: validate and narrow frozen JSON arguments, raising ToolArgsError.
    parse_args: Callable[[JsonValue], Any] | None = None
    # Optional, live only: awaited by a host right before it asks the user about a call. Returns the pending
    # card computed against the world as it is now (a file change's real hunks), or None to keep
    # `present_call`'s; it may also pin what the question is about (the file a path leads to), so the body
    # does exactly that. `present_call` stays the pure card, the only one replay uses. Changes nothing.
    preview_call: Callable[[Any, ToolExecution], Awaitable[Any]] | None = None
    # A raw schema that the tool's own server enforces (MCP): registration checks only that it is a JSON
    # object schema with an object root, not that it stays inside the enforced subset, and it reaches the
    # model as it was sent. The pipeline still requires the arguments to be a JSON object.
    open_parameters: bool = False
    # Optional: a description that depends on the tools its scope shows beside it (Code Mode's typed
    # signatures of every tool a program may call). `schemas()` sends its text instead of `description`;
    # should it fail, `description` is sent.
    describe: Callable[[Sequence[NestedTool]], str] | None = None


def check_definition(definition: ToolDefinition) -> None:
    """Registration-time checks. Raises RegistrationError naming the tool and every problem."""
    problems: list[str] = []
    if not isinstance(definition.name, str) or not definition.name:
        problems.append("name must be a non-empty string")
    if not isinstance(definition.description, str):
        problems.append("description must be a string")
    if not isinstance(definition.output, ToolOutputDefinition):
        problems.append("output must be a ToolOutputDefinition (it is mandatory)")
    else:
        try:
            assert_supported(definition.output.schema)
        except ValueError as exc:
            problems.append(f"output schema: {exc}")
    if definition.open_parameters:
        problem = _open_schema_problem(definition.parameters)
        if problem is not None:
            problems.append(f"parameters: {problem}")
    else:
        try:
            assert_object_schema(definition.parameters)
        except ValueError as exc:
            problems.append(f"parameters: {exc}")
    timeout = definition.timeout_ms
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        problems.append(f"timeout_ms must be a positive finite number, got {timeout!r}")
    if not callable(definition.execute):
        problems.append("execute must be callable")
    if definition.describe is not None and not callable(definition.describe):
        problems.append("describe must be callable")
    if problems:
        raise RegistrationError(f"tool {getattr(definition, 'name', '?')!r}: " + "; ".join(problems))


def _open_schema_problem(schema: Any) -> str | None:
    """Why an open (server-enforced) parameter schema cannot be registered, or None."""
    if not isinstance(schema, Mapping):
        return f"a schema must be a JSON object, got {type(schema).__name__}"
    try:
        snapshot(schema)
    except NotJsonError as exc:
        return f"not lossless JSON at {exc.path or '/'}: {exc.reason}"
    if schema.get("type") != "object":
        return "the root must be {'type': 'object'}"
    return None


# --- define_tool ----------------------------------------------------------------------------------

P = TypeVar("P")
O = TypeVar("O")  # noqa: E741


@dataclass(frozen=True, slots=True)
class Output(Generic[P, O]):
    """A typed output declaration: `type` is a Python type (or a seed spec mapping); `render` turns the
    typed arguments and value into model content (a str is shorthand for one text block)."""

    type: Any
    render: Callable[[P, O], Sequence[ContentBlock] | str]
    presentation_meta: Callable[[P, O], JsonValue] | None = None


def define_tool(
    *,
    name: str,
    description: str,
    parameters: type[P] | Mapping[str, Any],
    output: Output[P, O],
    execute: Callable[[P, ToolRunContext], Awaitable[O]],
    finalize_content: FinalizeFn | None = None,
    timeout_ms: float | None = None,
    concurrency_safe: bool | Callable[[P], bool] = False,
    present_call: Callable[[P], Any] | None = None,
    present_result: Callable[[P, ToolResult], Any] | None = None,
    preview_call: Callable[[P, ToolExecution], Awaitable[Any]] | None = None,
) -> ToolDefinition:
    """Build a `ToolDefinition` from typed parameters and output. See the module docstring."""
    params_schema: dict[str, Any]
    parse_args: Callable[[JsonValue], Any]
    if isinstance(parameters, Mapping):
        params_schema = compile_parameters_spec(parameters)
        check_params = compile_validator(params_schema)

        def parse_args(raw: JsonValue) -> Any:
            violations = check_params(raw)
            if violations:
                raise ToolArgsError(name, violations)
            return raw  # the frozen JSON object is the typed view for spec tools
    else:
        from . import pydantic_types  # loads pydantic: only tools declared with Python types pay for it

        params_schema, parse_args = pydantic_types.typed_parameters(name, parameters)

    out_schema: dict[str, Any]
    run: Callable[[Any, ToolRunContext], Awaitable[Any]]
    from_json: Callable[[JsonValue], Any] | None
    if isinstance(output.type, Mapping):
        out_schema = compile_value_spec(output.type)
        run = execute  # the body returns the JSON value; the pipeline validates it
        from_json = None  # and the canonical JSON value is the typed view
    else:
        from . import pydantic_types

        out_schema, to_json, from_json = pydantic_types.typed_output(name, output.type)

        async def run(args: Any, ctx: ToolRunContext) -> Any:
            return to_json(await execute(args, ctx))

    def render(args: Any, value: JsonValue) -> Sequence[ContentBlock]:
        rendered = output.render(args, value)
        if isinstance(rendered, str):
            return (TextBlock(rendered),)
        return rendered

    meta_fn: Callable[[Any, JsonValue], JsonValue] | None = None
    if output.presentation_meta is not None:
        meta_fn = output.presentation_meta

    if callable(concurrency_safe):
        safe_fn: Callable[[Any], bool] = concurrency_safe
    else:
        flag = bool(concurrency_safe)

        def safe_fn(_args: Any) -> bool:
            return flag

    return ToolDefinition(
        name=name,
        description=description,
        parameters=params_schema,
        output=ToolOutputDefinition(out_schema, render, meta_fn, parse_value=from_json),
        execute=run,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        is_concurrency_safe=safe_fn,
        present_call=present_call,
        present_result=present_result,
        parse_args=parse_args,
        preview_call=preview_call,
    )


def parse_args_for_display(definition: ToolDefinition, raw: JsonValue) -> tuple[bool, Any]:
    """Soft-validate arguments for presenters: (True, typed) or (False, None). Never raises.

    Display must never crash a replay, so malformed or older logged argument shapes yield no view.
    """
    if definition.parse_args is None:
        return True, raw
    try:
        return True, definition.parse_args(raw)
    except Exception:  # noqa: BLE001 - contained by contract
        return False, None
