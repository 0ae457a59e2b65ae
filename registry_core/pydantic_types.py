"""`define_tool`'s pydantic side: parameters and output declared as Python types (models, `list[str]`, ...).

Imported only when a tool declares such a type, so a registry of spec-dictionary tools never loads
pydantic. The schema the model sees is compiled by `schema.compile_type`; pydantic validates on top of it
(constraints the subset cannot express), and its errors become the registry's `Violation`s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from .errors import RegistrationError, ToolArgsError, ToolOutputError, Violation
from .json_schema import compile_validator
from .json_values import JsonValue, thaw
from .schema import compile_type


def violations_of(exc: ValidationError) -> list[Violation]:
    out = []
    for err in exc.errors():
        path = "".join(f"/{part}" for part in err.get("loc", ()))
        out.append(Violation(path, err.get("msg", "invalid")))
    return out


def typed_parameters(tool: str, model: Any) -> tuple[dict[str, Any], Callable[[JsonValue], Any]]:
    """The parameters' schema, and the parser from frozen JSON arguments to an instance of `model`."""
    schema = compile_type(model)
    if schema.get("type") != "object":
        raise RegistrationError(f"tool {tool!r}: parameters must be an object type")
    adapter: TypeAdapter[Any] = TypeAdapter(model)
    check = compile_validator(schema)

    def parse_args(raw: JsonValue) -> Any:
        # The subset first, so the model gets the same violations a spec tool would report.
        problems = check(raw)
        if problems:
            raise ToolArgsError(tool, problems)
        try:
            return adapter.validate_python(thaw(raw))
        except ValidationError as exc:
            raise ToolArgsError(tool, violations_of(exc)) from None

    return schema, parse_args


def typed_output(
    tool: str, tp: Any
) -> tuple[dict[str, Any], Callable[[Any], JsonValue], Callable[[JsonValue], Any]]:
    """The output's schema, the body value → JSON dump (ToolOutputError), and JSON → the typed value."""
    adapter: TypeAdapter[Any] = TypeAdapter(tp)
    schema = compile_type(tp, mode="serialization")
    # A model's body may return a plain mapping: it is validated into the model before the dump.
    model = tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None

    def to_json(value: Any) -> JsonValue:
        try:
            if model is not None and not isinstance(value, model):
                value = adapter.validate_python(value)
            return adapter.dump_python(value, mode="json", by_alias=True)
        except (ValidationError, TypeError, ValueError) as exc:
            problems = violations_of(exc) if isinstance(exc, ValidationError) else [Violation("", str(exc))]
            raise ToolOutputError(tool, problems) from None

    def from_json(value: JsonValue) -> Any:
        return adapter.validate_python(thaw(value))

    return schema, to_json, from_json
