"""The enforced raw JSON-Schema subset: check a schema is inside it, validate a value against it.

Raw schemas come from MCP servers, dynamic registrations and `define_tool`'s compiler. The subset is
small on purpose, so that what the model is told is exactly what is enforced:

  type (one of object/array/string/number/integer/boolean/null), properties, required,
  additionalProperties (boolean), items, enum and const (scalars matching the node type),
  oneOf (>= 2 branches, exactly one must match), and the annotations description, title, default,
  examples (which must be lossless JSON). `{}` means any JSON value.

`assert_supported` reports *every* unsupported keyword or malformed node with its path, in one error.
`validate` returns *every* violation with its path (empty list = valid).

Invariant: pure functions; no I/O, no knowledge of tools.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final

from .errors import JsonSchemaError, Violation
from .json_values import FrozenDict, NotJsonError, snapshot

JsonSchema = Mapping[str, Any]

TYPES: Final = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
SCALAR_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "null"})
ANNOTATIONS: Final = frozenset({"description", "title", "default", "examples"})
KEYWORDS: Final = (
    frozenset({"type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const"})
    | ANNOTATIONS
)
OBJECT_ONLY: Final = ("properties", "required", "additionalProperties")


def assert_supported(schema: Any) -> None:
    """Raise `JsonSchemaError` listing every problem, or return None when `schema` is in the subset."""
    problems: list[Violation] = []
    _check_node(schema, "", problems)
    if problems:
        raise JsonSchemaError(problems)


def assert_object_schema(schema: Any) -> None:
    """Like `assert_supported`, and the root must be `type: object` (tool parameters, structured output)."""
    problems: list[Violation] = []
    _check_node(schema, "", problems)
    if isinstance(schema, Mapping) and schema.get("type") != "object":
        problems.append(Violation("", "the root must be {'type': 'object'}"))
    if problems:
        raise JsonSchemaError(problems)


def _check_node(node: Any, path: str, problems: list[Violation]) -> None:
    if not isinstance(node, Mapping):
        problems.append(Violation(path, f"a schema node must be an object, got {type(node).__name__}"))
        return
    for key in node:
        if key not in KEYWORDS:
            problems.append(Violation(f"{path}/{key}", f"unsupported keyword {key!r}"))
    typ = node.get("type")
    if "type" in node and (not isinstance(typ, str) or typ not in TYPES):
        problems.append(Violation(f"{path}/type", f"type must be one of {sorted(TYPES)}, got {typ!r}"))
        typ = None
    for key in ("description", "title"):
        if key in node and not isinstance(node[key], str):
            problems.append(Violation(f"{path}/{key}", f"{key} must be a string"))
    for key in ("default", "examples"):
        if key in node:
            try:
                snapshot(node[key])
            except NotJsonError as exc:
                problems.append(
                    Violation(f"{path}/{key}{exc.path}", f"annotation is not lossless JSON: {exc.reason}")
                )

    if "oneOf" in node:
        branches = node["oneOf"]
        clash = [k for k in node if k in KEYWORDS and k not in ANNOTATIONS and k != "oneOf"]
        if clash:
            problems.append(Violation(path, f"oneOf cannot be combined with {clash}"))
        if not isinstance(branches, list) or len(branches) < 2:
            problems.append(Violation(f"{path}/oneOf", "oneOf needs a list of at least two branches"))
        else:
            for i, branch in enumerate(branches):
                _check_node(branch, f"{path}/oneOf/{i}", problems)

    if typ != "object":
        for key in OBJECT_ONLY:
            if key in node:
                problems.append(Violation(f"{path}/{key}", f"{key} needs type 'object'"))
    else:
        props = node.get("properties", {})
        if not isinstance(props, Mapping):
            problems.append(Violation(f"{path}/properties", "properties must be an object"))
            props = {}
        for name, sub in props.items():
            _check_node(sub, f"{path}/properties/{name}", problems)
        if "required" in node:
            req = node["required"]
            if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
                problems.append(Violation(f"{path}/required", "required must be a list of strings"))
            else:
                if len(set(req)) != len(req):
                    problems.append(Violation(f"{path}/required", "required names must be unique"))
                for name in req:
                    if name not in props:
                        problems.append(
                            Violation(f"{path}/required", f"required {name!r} is not in properties")
                        )
        if "additionalProperties" in node and not isinstance(node["additionalProperties"], bool):
            problems.append(
                Violation(f"{path}/additionalProperties", "additionalProperties must be a boolean")
            )

    if "items" in node:
        if typ != "array":
            problems.append(Violation(f"{path}/items", "items needs type 'array'"))
        else:
            _check_node(node["items"], f"{path}/items", problems)

    for key in ("enum", "const"):
        if key not in node:
            continue
        if typ is not None and typ not in SCALAR_TYPES:
            problems.append(Violation(f"{path}/{key}", f"{key} is for scalar nodes, not {typ!r}"))
            continue
        values = node[key] if key == "enum" else [node[key]]
        if key == "enum" and (not isinstance(values, list) or not values):
            problems.append(Violation(f"{path}/enum", "enum must be a non-empty list"))
            continue
        for i, val in enumerate(values):
            where = f"{path}/enum/{i}" if key == "enum" else f"{path}/const"
            if not _is_scalar(val):
                problems.append(Violation(where, f"{val!r} is not a JSON scalar"))
            elif typ is not None and not _TYPE_TESTS.get(typ, _never)(val):
                problems.append(Violation(where, f"{val!r} does not match type {typ!r}"))


def _is_scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (str, bool, int))


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1 (Python conflates bools and ints)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def validate(schema: JsonSchema, value: Any) -> list[Violation]:
    """Every way `value` violates `schema` (which must already pass `assert_supported`)."""
    return compile_validator(schema)(value)


def is_valid(schema: JsonSchema, value: Any) -> bool:
    return not validate(schema, value)


def compile_validator(schema: JsonSchema) -> Callable[[Any], list[Violation]]:
    """`validate` for one schema, compiled once: for a schema checked on every call (a tool's parameters
    or output). The schema must pass `assert_supported`, and must not change afterwards."""
    check = _compile(schema)

    def violations(value: Any) -> list[Violation]:
        out: list[Violation] = []
        check(value, None, out)
        return out

    return violations


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


# A node's path is a chain of (parent, segment) pairs, spelled out only when a violation is recorded:
# validation runs on every call, mostly on valid values.
Path = tuple["Path", str | int] | None
Check = Callable[[Any, Path, list[Violation]], None]


def _pointer(path: Path) -> str:
    segments: list[str] = []
    while path is not None:
        path, segment = path
        segments.append(f"/{segment}")
    return "".join(reversed(segments))


def _violation(path: Path, message: str) -> Violation:
    return Violation(_pointer(path), message)


def _is_object(value: Any) -> bool:
    cls = type(value)
    return cls is FrozenDict or cls is dict or isinstance(value, Mapping)


def _is_array(value: Any) -> bool:
    cls = type(value)
    return cls is tuple or cls is list or isinstance(value, (list, tuple))


def _is_string(value: Any) -> bool:
    return type(value) is str or isinstance(value, str)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


_TYPE_TESTS: Final[dict[str, Callable[[Any], bool]]] = {
    "object": _is_object,
    "array": _is_array,
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


# For each type, the one exact type that always passes its test (`bool` is no integer, a float may be).
_EXACT_TYPE: Final[dict[str, type]] = {
    "object": FrozenDict, "array": tuple, "string": str, "integer": int, "number": float, "boolean": bool,
    "null": type(None),
}  # fmt: skip

# The compiled checks that are a type test only: (the exact type that passes, the test, the type's name).
_LEAVES: weakref.WeakKeyDictionary[Check, tuple[type | None, Callable[[Any], bool], str]] = (
    weakref.WeakKeyDictionary()
)


def _never(value: Any) -> bool:
    return False


def _accept(value: Any, path: Path, out: list[Violation]) -> None:
    return None


def _compile(node: JsonSchema) -> Check:
    """One node's check. The rules, in the order their violations are reported: type (nothing else is
    checked on a mismatch), enum, const, oneOf (exactly one branch), then an object's required and
    additional properties and each property's own node, or an array's items."""
    typ = node.get("type")
    type_ok = _TYPE_TESTS.get(typ, _never) if typ is not None else None
    enum = tuple(node["enum"]) if "enum" in node else None
    has_const = "const" in node
    const = node.get("const")
    branches = tuple(_compile(b) for b in node["oneOf"]) if "oneOf" in node else None
    kinds = " | ".join(str(b.get("type", "a listed shape")) for b in node.get("oneOf", ()))
    properties: dict[str, Check] = {n: _compile(sub) for n, sub in node.get("properties", {}).items()}
    required = tuple(node.get("required", ()))
    closed = node.get("additionalProperties") is False
    items = _compile(node["items"]) if "items" in node else None
    if items is _accept:
        items = None
    walks_object = bool(required or closed or any(c is not _accept for c in properties.values()))

    plain = enum is None and not has_const and branches is None and not walks_object and items is None
    if plain and type_ok is None:
        return _accept
    if plain and type_ok is not None:
        leaf_type = type_ok

        def check_type(value: Any, path: Path, out: list[Violation]) -> None:
            if not leaf_type(value):
                out.append(_violation(path, f"expected {typ}, got {_type_name(value)}"))

        _LEAVES[check_type] = (_EXACT_TYPE.get(str(typ)), leaf_type, str(typ))
        return check_type

    # The hot path, the same verdicts with fewer calls: a property or a oneOf branch that is only a type
    # test is tested inline (its exact type passes without a call, as the test would pass it), and an enum
    # of strings is a set look-up for a string (a string equals no number, boolean or container).
    leaves = {name: leaf for name, sub in properties.items() if (leaf := _LEAVES.get(sub)) is not None}
    # Each branch as its type test when it is only that, else its full check behind its type test: a
    # value of another type fails such a branch (its type is checked first), so the branch's violations
    # are not spelled out only to be dropped (`None` for an optional object: each call of a tool whose
    # output has one).
    branch_tests = tuple(
        (
            leaf[1] if (leaf := _LEAVES.get(b)) is not None else None,
            _TYPE_TESTS.get(sub["type"], _never) if "type" in sub else None,
            b,
        )
        for sub, b in zip(node.get("oneOf", ()), branches or (), strict=True)
    )
    item_leaf = _LEAVES.get(items) if items is not None else None
    item_exact = frozenset({item_leaf[0]}) if item_leaf is not None and item_leaf[0] is not None else None
    strings = frozenset(enum) if enum is not None and all(type(v) is str for v in enum) else None

    def check(value: Any, path: Path, out: list[Violation]) -> None:
        if type_ok is not None and not type_ok(value):
            out.append(_violation(path, f"expected {typ}, got {_type_name(value)}"))
            return
        if enum is not None and not (
            (strings is not None and type(value) is str and value in strings)
            or any(json_equal(value, v) for v in enum)
        ):
            out.append(_violation(path, f"must be one of {list(enum)!r}, got {value!r}"))
        if has_const and not json_equal(value, const):
            out.append(_violation(path, f"must be {const!r}, got {value!r}"))
        if branches is not None:
            matched = 0
            for test, gate, branch in branch_tests:
                if test is not None:
                    matched += test(value)
                    continue
                if gate is not None and not gate(value):
                    continue
                branch_out: list[Violation] = []
                branch(value, path, branch_out)
                if not branch_out:
                    matched += 1
            if matched == 0:
                out.append(_violation(path, f"expected one of {kinds}, got {_type_name(value)} {value!r}"))
            elif matched > 1:
                out.append(_violation(path, f"must match exactly one oneOf branch, matched {matched}"))
        cls = type(value)
        if cls is str or cls is int or cls is bool or value is None or cls is float:
            return
        if walks_object and _is_object(value):
            for name in required:
                if name not in value:
                    out.append(_violation((path, name), "required property is missing"))
            for name, item in value.items():
                leaf = leaves.get(name)
                if leaf is not None:
                    exact, test, leaf_typ = leaf
                    if type(item) is not exact and not test(item):
                        out.append(_violation((path, name), f"expected {leaf_typ}, got {_type_name(item)}"))
                    continue
                sub = properties.get(name)
                if sub is not None:
                    sub(item, (path, name), out)
                elif closed:
                    out.append(_violation((path, name), "additional property is not allowed"))
        elif items is not None and _is_array(value):
            if item_exact is not None and item_exact.issuperset(map(type, value)):
                return  # every item has the exact type its test passes (one C-level pass: a file's lines)
            for i, item in enumerate(value):
                items(item, (path, i), out)

    return check
