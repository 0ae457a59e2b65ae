"""An MCP tool's input schema made self-contained: its local `$ref`s inlined.

MCP servers send JSON Schema as their SDKs generate it, and the Python and TypeScript SDKs put every
nested model in `$defs` behind a `{"$ref": "#/$defs/Name"}`. OpenAI's API accepts that, but not every
"OpenAI-compatible" endpoint does (several reject or ignore `$ref` in function parameters), so the model
is given the same schema with each local reference replaced by what it names (JSON Schema 2020-12,
section 8.2.3.1: `$ref` applies the referenced schema alongside the keywords next to it).

- Only references into the schema itself (`#/$defs/…`, `#/definitions/…`, any local JSON pointer, RFC
  6901) are inlined; a remote one (`https://…`) is left as it is.
- A recursive reference cannot be inlined: it stays a `$ref`, and the root keeps the `$defs` it needs.
- A schema whose inlining would grow past `MAX_INLINED_BYTES` (a definition used in many places, nested)
  is kept as the server sent it: the model then gets the same schema the server validates against.

Must not: change what the schema accepts (the server validates the arguments against its own schema).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

MAX_INLINED_BYTES: Final = 64 * 1024
_DEFINITION_KEYS: Final = ("$defs", "definitions")
# Keywords that only describe: next to a `$ref` they can be merged over the target without changing what
# the schema accepts. Any other sibling keeps the conjunction explicit (`allOf`).
_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)


def inline_local_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with its local `$ref`s replaced by their targets (see the module docstring); a schema
    without any comes back as an equal copy."""
    root = dict(schema)
    if "$ref" not in json.dumps(root):
        return root
    kept_refs: set[str] = set()
    inlined = _inline(root, root, (), kept_refs)
    if not isinstance(inlined, dict):
        return root
    if not kept_refs:
        for key in _DEFINITION_KEYS:
            inlined.pop(key, None)
    else:
        # Recursive definitions stay referenced: the root keeps the definitions sections as sent.
        for key in _DEFINITION_KEYS:
            if key in root:
                inlined[key] = root[key]
    if len(json.dumps(inlined)) > MAX_INLINED_BYTES:
        return root
    return inlined


def _inline(node: Any, root: Mapping[str, Any], expanding: tuple[str, ...], kept: set[str]) -> Any:
    if isinstance(node, list):
        return [_inline(item, root, expanding, kept) for item in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        target = _resolve(root, ref)
        if target is not None and ref not in expanding:
            resolved = _inline(target, root, (*expanding, ref), kept)
            siblings = {k: _inline(v, root, expanding, kept) for k, v in node.items() if k != "$ref"}
            if not siblings:
                return resolved
            if isinstance(resolved, dict) and set(siblings) <= _ANNOTATIONS:
                return {**resolved, **siblings}
            return {"allOf": [resolved], **siblings}
        kept.add(ref)  # recursive, or a pointer to nothing: left for the server's own reading
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DEFINITION_KEYS and node is root:
            out[key] = value  # resolved from the root as sent; dropped at the end when nothing needs them
        else:
            out[key] = _inline(value, root, expanding, kept)
    return out


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    """The node a local reference (`#` + a JSON pointer, percent-encoded as a URI fragment) names, or None."""
    pointer = unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return None  # a named anchor (`#name`): not resolved here
    node: Any = root
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node
