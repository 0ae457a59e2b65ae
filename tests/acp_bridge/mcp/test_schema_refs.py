"""`schema_refs.inline_local_refs`: an MCP tool's schema made self-contained for the model."""

from __future__ import annotations

import json
from typing import Any

from acp_bridge.mcp.schema_refs import MAX_INLINED_BYTES, inline_local_refs


def _refs(schema: Any) -> list[str]:
    text = json.dumps(schema)
    return [part.split('"')[0] for part in text.split('"$ref": "')[1:]]


def test_nested_definitions_are_inlined_and_the_definitions_dropped() -> None:
    schema = {
        "type": "object",
        "properties": {"trip": {"$ref": "#/$defs/Trip"}},
        "required": ["trip"],
        "$defs": {
            "Stop": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "Trip": {
                "type": "object",
                "properties": {"stops": {"type": "array", "items": {"$ref": "#/$defs/Stop"}}},
            },
        },
    }
    out = inline_local_refs(schema)
    assert _refs(out) == [] and "$defs" not in out
    stop = out["properties"]["trip"]["properties"]["stops"]["items"]
    assert stop == {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert out["required"] == ["trip"]
    assert "$defs" in schema and schema["properties"]["trip"] == {"$ref": "#/$defs/Trip"}  # input untouched


def test_annotations_beside_a_ref_are_merged_and_constraints_stay_a_conjunction() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/Name", "description": "who"},
            "b": {"$ref": "#/definitions/Name", "maxLength": 3},
        },
        "definitions": {"Name": {"type": "string", "description": "a name"}},
    }
    out = inline_local_refs(schema)
    assert out["properties"]["a"] == {"type": "string", "description": "who"}
    assert out["properties"]["b"] == {"allOf": [{"type": "string", "description": "a name"}], "maxLength": 3}
    assert "definitions" not in out


def test_pointers_are_decoded_and_remote_refs_left_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "slash": {"$ref": "#/$defs/a~1b"},
            "space": {"$ref": "#/$defs/with%20space"},
            "remote": {"$ref": "https://example.invalid/schema.json"},
        },
        "$defs": {"a/b": {"type": "integer"}, "with space": {"type": "boolean"}},
    }
    out = inline_local_refs(schema)
    assert out["properties"]["slash"] == {"type": "integer"}
    assert out["properties"]["space"] == {"type": "boolean"}
    assert out["properties"]["remote"] == {"$ref": "https://example.invalid/schema.json"}


def test_a_recursive_definition_stays_referenced_with_its_definitions() -> None:
    children = {"type": "array", "items": {"$ref": "#/$defs/Node"}}
    node = {"type": "object", "properties": {"children": children}}
    schema = {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": node}}
    out = inline_local_refs(schema)
    # The first level is inlined; the recursion point stays a reference the kept `$defs` resolves.
    assert out["properties"]["root"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert out["$defs"] == {"Node": node}


def test_a_reference_to_nothing_is_kept_as_sent() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}, "$defs": {}}
    out = inline_local_refs(schema)
    assert out["properties"]["x"] == {"$ref": "#/$defs/Missing"} and out["$defs"] == {}


def test_an_inlining_that_would_explode_keeps_the_schema_as_sent() -> None:
    # Each level uses the one below twice: inlining doubles per level.
    defs: dict[str, Any] = {"L0": {"type": "string", "description": "x" * 200}}
    for level in range(1, 12):
        below = {"$ref": f"#/$defs/L{level - 1}"}
        defs[f"L{level}"] = {"type": "object", "properties": {"a": below, "b": below}}
    schema = {"type": "object", "properties": {"top": {"$ref": "#/$defs/L11"}}, "$defs": defs}
    assert len(json.dumps(schema)) < MAX_INLINED_BYTES
    assert inline_local_refs(schema) == schema


def test_a_schema_without_refs_comes_back_equal() -> None:
    schema = {"type": "object", "properties": {"p": {"type": "string"}}, "$defs": {"U": {"type": "null"}}}
    assert inline_local_refs(schema) == schema
