"""TypeScript declarations of the tools a Code Mode program may call, generated from their JSON schemas.

Each tool becomes `declare function name(args: {...}): Promise<...>;` with its parameters and its
declared output as TypeScript types, and its description as a doc comment; every tool is also a member of
`tools` (the only way to reach one whose name is not a JavaScript identifier). The schemas are the
registry's enforced subset (`registry_core.json_schema`): `type`, `properties`, `required`,
`additionalProperties`, `items`, `enum`, `const`, `oneOf`, descriptions; a node with none of them is any
JSON value. Deeply nested types stop at `MAX_DEPTH` and become `JsonValue`.

Must not: emit anything a TypeScript parser would reject: names that are not identifiers are quoted, and
comments cannot be closed early by a description.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from registry_core import NestedTool

MAX_DEPTH: Final = 6
MAX_DOC_CHARS: Final = 300
_IDENTIFIER: Final = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
# Reserved words (ECMAScript, strict mode) and the names the program's module binds itself.
_RESERVED: Final = """break case catch class const continue debugger default delete do else enum export
extends
false finally for function if import in instanceof new null return super switch this throw true try typeof
var void while with yield let static implements interface package private protected public await
arguments eval undefined NaN Infinity tools ToolError JsonValue console globalThis"""
_TAKEN: Final = frozenset(_RESERVED.split())

PREAMBLE: Final = """\
type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** What a failed or rejected call throws: `message` says why, `tool` and `code` which and how. */
declare class ToolError extends Error { readonly tool: string; readonly code: string | null }"""


def is_binding(name: str) -> bool:
    """Whether the program may refer to tool `name` by its bare name (else only as `tools["name"]`)."""
    return bool(_IDENTIFIER.match(name)) and name not in _TAKEN


def declarations(tools: Sequence[NestedTool]) -> str:
    """The declarations block for `tools`, in order."""
    parts = [PREAMBLE]
    members: list[str] = []
    for tool in tools:
        signature = f"(args: {ts_type(tool.parameters, 0)}): Promise<{ts_type(tool.output, 0)}>"
        doc = _doc(tool.description, "")
        if is_binding(tool.name):
            parts.append(f"{doc}declare function {tool.name}{signature};")
            members.append(f"  {tool.name}: typeof {tool.name};")
        else:
            members.append(f"{_doc(tool.description, '  ')}  {_key(tool.name)}{signature};")
    parts.append(
        "declare const tools: {\n" + "\n".join(members) + "\n};" if members else "declare const tools: {};"
    )
    return "\n".join(parts)


def ts_type(schema: Mapping[str, Any], depth: int) -> str:
    """The TypeScript type of one schema node (`depth` levels deep in its parent)."""
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return "JsonValue"
    if "const" in schema:
        return _literal(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(_literal(v) for v in schema["enum"])
    if isinstance(schema.get("oneOf"), list) and schema["oneOf"]:
        return " | ".join(_member(branch, depth) for branch in schema["oneOf"])
    kind = schema.get("type")
    if kind in ("number", "integer"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind == "array":
        items = schema.get("items")
        return f"{_member(items, depth) if isinstance(items, Mapping) else 'JsonValue'}[]"
    if kind == "object":
        return _object(schema, depth)
    return "JsonValue"


def _object(schema: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    required = set(schema.get("required") or ())
    open_ended = schema.get("additionalProperties") is not False
    if not isinstance(properties, Mapping) or not properties:
        return "{ [key: string]: JsonValue }" if open_ended else "{}"
    pad = "  " * (depth + 1)
    lines = []
    for name, sub in properties.items():
        optional = "" if name in required else "?"
        description = sub.get("description") if isinstance(sub, Mapping) else None
        doc = _doc(description, pad) if isinstance(description, str) else ""
        lines.append(f"{doc}{pad}{_key(str(name))}{optional}: {ts_type(sub, depth + 1)};")
    return "{\n" + "\n".join(lines) + "\n" + "  " * depth + "}"


def _member(schema: Any, depth: int) -> str:
    """A type as part of a larger one (a union's branch, an array's items): a union in parentheses."""
    text = ts_type(schema, depth)
    return f"({text})" if _is_union(schema) else text


def _is_union(schema: Any) -> bool:
    if not isinstance(schema, Mapping) or "const" in schema:
        return False
    return any(isinstance(schema.get(key), list) and len(schema[key]) > 1 for key in ("enum", "oneOf"))


def _literal(value: Any) -> str:
    if isinstance(value, str) or value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return "JsonValue"


def _key(name: str) -> str:
    return name if _IDENTIFIER.match(name) else json.dumps(name)


def _doc(text: str | None, pad: str) -> str:
    if not text or not text.strip():
        return ""
    flat = " ".join(text.split())
    if len(flat) > MAX_DOC_CHARS:
        flat = flat[: MAX_DOC_CHARS - 1].rstrip() + "…"
    flat = flat.replace("*/", "*\\/")  # a description cannot end the comment
    return f"{pad}/** {flat} */\n"
