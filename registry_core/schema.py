"""The author DSL compiled to the enforced JSON-Schema subset.

Two vocabularies compile here:
- Python types (pydantic models, `list[str]`, `Literal[...]`, ...): `compile_type()` takes pydantic's JSON
  Schema and rewrites it into the subset: `$ref`s are inlined, `anyOf`/nullable become `oneOf`, auto
  titles are dropped, and constraints the subset cannot express (minimum, maxLength, pattern, ...) move
  into the description text. Pydantic still enforces them, so nothing the model is told is unenforced,
  and nothing enforced is hidden from it.
- The seed's spec dictionaries (`{"path": {"type": "string", "required": True}}`): `compile_parameters_spec`
  and `compile_value_spec`.

Both raise `SchemaCompileError` naming the path of anything they cannot express. Only `compile_type`
needs pydantic, and imports it when called: spec dictionaries compile without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .json_schema import SCALAR_TYPES, TYPES, assert_supported
from .json_values import NotJsonError, snapshot, thaw

CONSTRAINTS: Final = {
    "minimum": "minimum {}",
    "maximum": "maximum {}",
    "exclusiveMinimum": "greater than {}",
    "exclusiveMaximum": "less than {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matches /{}/",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "uniqueItems": "unique items",
    "multipleOf": "multiple of {}",
    "format": "format {}",
    "minProperties": "at least {} properties",
    "maxProperties": "at most {} properties",
}
DROPPED: Final = frozenset(
    {"title", "discriminator", "prefixItems", "$schema", "readOnly", "writeOnly", "deprecated"}
)


class SchemaCompileError(ValueError):
    pass


def compile_type(tp: Any, *, mode: str = "validation") -> dict[str, Any]:
    """JSON Schema (subset) for a Python type, via pydantic. Raises SchemaCompileError."""
    from pydantic import TypeAdapter

    raw = TypeAdapter(tp).json_schema(by_alias=True, mode=mode)  # type: ignore[arg-type]
    defs = raw.pop("$defs", {})
    out = _convert(raw, defs, "", ())
    assert_supported(out)
    return out


def _convert(
    node: Mapping[str, Any], defs: Mapping[str, Any], path: str, stack: tuple[str, ...]
) -> dict[str, Any]:
    if "$ref" in node:
        ref = node["$ref"]
        name = ref.rsplit("/", 1)[-1]
        if name in stack:
            raise SchemaCompileError(f"{path or '/'}: recursive type {name!r} cannot be expressed")
        if name not in defs:
            raise SchemaCompileError(f"{path or '/'}: unresolved reference {ref!r}")
        target = _convert(defs[name], defs, path, (*stack, name))
        extra = {k: v for k, v in node.items() if k != "$ref"}
        if extra:
            target = {**target, **_convert(extra, defs, path, stack)}
        return target

    out: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in node.items():
        if key in DROPPED:
            continue
        if key in CONSTRAINTS:
            if value is True and key == "uniqueItems":
                notes.append(CONSTRAINTS[key])
            elif value is not False:
                notes.append(CONSTRAINTS[key].format(value))
            continue
        if key in ("anyOf", "oneOf"):
            out.update(_union(value, defs, path, stack))
        elif key == "allOf":
            if len(value) != 1:
                raise SchemaCompileError(f"{path or '/'}: allOf with several branches cannot be expressed")
            out.update(_convert(value[0], defs, path, stack))
        elif key == "type":
            if isinstance(value, list):
                out["oneOf"] = [{"type": t} for t in value]
            else:
                out["type"] = value
        elif key == "properties":
            out["properties"] = {
                name: _convert(sub, defs, f"{path}/properties/{name}", stack) for name, sub in value.items()
            }
        elif key == "items":
            out["items"] = _convert(value, defs, f"{path}/items", stack)
        elif key == "additionalProperties":
            # A typed map (`dict[str, X]`) is an open object in the subset; pydantic enforces X.
            if isinstance(value, bool):
                out["additionalProperties"] = value
        elif key in ("required", "enum", "const", "description"):
            out[key] = value
        elif key in ("default", "examples"):
            try:
                out[key] = thaw(snapshot(value))
            except NotJsonError:
                continue
        else:
            notes.append(f"{key} {value!r}")
    if notes:
        text = "Constraints: " + ", ".join(notes) + "."
        out["description"] = f"{out['description']} {text}" if out.get("description") else text
    if out.get("type") == "array" and "items" not in out and "prefixItems" in node:
        out["items"] = {}
    return out


def _union(branches: list[Any], defs: Mapping[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any]:
    converted = [_convert(b, defs, f"{path}/oneOf/{i}", stack) for i, b in enumerate(branches)]
    # Flatten nested unions so `X | Y | None` does not nest oneOf inside oneOf.
    flat: list[dict[str, Any]] = []
    for branch in converted:
        if set(branch) <= {"oneOf", "description"} and "oneOf" in branch:
            flat.extend(branch["oneOf"])
        else:
            flat.append(branch)
    if len(flat) == 1:
        return flat[0]
    return {"oneOf": flat}


# --- the seed's spec dictionaries -----------------------------------------------------------------

SPEC_TYPES: Final = TYPES | {"json"}


def compile_value_spec(spec: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    """Compile one `ValueSchemaSpec` node (string/number/integer/boolean/null/array/object/json/oneOf)."""
    if not isinstance(spec, Mapping):
        raise SchemaCompileError(f"{path or '/'}: a spec node must be a mapping")
    out: dict[str, Any] = {}
    for key in ("description", "title", "default", "examples"):
        if key in spec:
            out[key] = spec[key]
    if "oneOf" in spec:
        branches = spec["oneOf"]
        if not isinstance(branches, list) or len(branches) < 2:
            raise SchemaCompileError(f"{path}/oneOf: needs at least two branches")
        out["oneOf"] = [compile_value_spec(b, f"{path}/oneOf/{i}") for i, b in enumerate(branches)]
        return out
    typ = spec.get("type")
    if typ not in SPEC_TYPES:
        raise SchemaCompileError(f"{path}/type: expected one of {sorted(SPEC_TYPES)}, got {typ!r}")
    if typ == "json":
        return out
    out["type"] = typ
    if typ in SCALAR_TYPES:
        for key in ("enum", "const"):
            if key in spec:
                out[key] = spec[key]
    elif typ == "array":
        if "items" in spec:
            out["items"] = compile_value_spec(spec["items"], f"{path}/items")
    elif typ == "object":
        if "additionalProperties" not in spec:
            raise SchemaCompileError(
                f"{path}: an object node must declare additionalProperties true or false"
            )
        out["properties"] = {
            name: compile_value_spec(sub, f"{path}/properties/{name}")
            for name, sub in spec.get("properties", {}).items()
        }
        req = [name for name, sub in spec.get("properties", {}).items() if sub.get("required") is True]
        if req:
            out["required"] = req
        out["additionalProperties"] = spec["additionalProperties"]
    assert_supported(out)
    return out


def compile_parameters_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Compile a parameter map (an implicit open object; `required: True` on each required property)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, prop in spec.items():
        if not isinstance(name, str):
            raise SchemaCompileError(f"parameter names must be strings, got {name!r}")
        prop_spec = {k: v for k, v in prop.items() if k != "required"}
        properties[name] = compile_value_spec(prop_spec, f"/properties/{name}")
        if prop.get("required") is True:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    assert_supported(out)
    return out
