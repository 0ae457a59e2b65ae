"""`json_bytes.dumps`: orjson's speed with the standard library's output, and the standard library's
behaviour wherever orjson would refuse a value."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_bridge.common.json_bytes import dumps
from acp_bridge.history.store import SessionStore

_stdlib = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def _as_stdlib(value: Any) -> bytes:
    return _stdlib(value).encode("utf-8", "replace")


@dataclasses.dataclass
class _Point:
    x: int


class _Colour(enum.StrEnum):
    RED = "red"


class _Size(enum.IntEnum):
    LARGE = 3


# Text with what encoders disagree on: escapes, control characters, U+2028, astral characters and lone
# surrogates (undecodable tool output keeps them).
_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
_scalars = st.none() | st.booleans() | st.integers() | _text
_floats = st.floats(allow_nan=False, allow_infinity=False)


def _json(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
        max_leaves=20,
    )


@given(_json(_scalars))
def test_any_json_value_without_floats_encodes_byte_for_byte_as_the_standard_library_does(
    value: Any,
) -> None:
    assert dumps(value) == _as_stdlib(value)


@given(_json(_scalars | _floats))
def test_a_float_may_be_spelled_shorter_but_reads_back_as_the_same_number(value: Any) -> None:
    assert json.loads(dumps(value)) == json.loads(_as_stdlib(value))


def test_a_float_exponent_is_spelled_without_padding() -> None:
    assert dumps(5.960464477539063e-08) == b"5.960464477539063e-8"
    assert dumps(1e16) == _as_stdlib(1e16) == b"1e+16"


@pytest.mark.parametrize(
    "value",
    [
        {1: "int key", None: "null key", False: "bool key", 2.5: "float key"},
        (1, (2, 3)),
        _Point(1),  # orjson would encode a dataclass as an object
        datetime.datetime(2026, 12, 1, 19, 0),  # and a datetime as RFC 3339
        {"bytes": b"\x00", "set": {1}},
        _Colour.RED,
        _Size.LARGE,
        2**70,  # past orjson's 64 bits
        "lone \ud800 surrogate",
        -0.0,
        '\u2028 \x00 \x1f \\ " é 🎉',
    ],
    ids=repr,
)
def test_values_beyond_plain_json_encode_as_the_standard_library_does(value: Any) -> None:
    assert dumps(value) == _as_stdlib(value)


def test_nesting_deeper_than_orjson_allows_still_encodes() -> None:
    deep: Any = "leaf"
    for _ in range(400):
        deep = [deep]
    assert dumps(deep) == _as_stdlib(deep)


def test_what_the_standard_library_refuses_fails_the_same_way() -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        dumps({(1, 2): "tuple key"})
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(circular)


def test_nan_becomes_null_where_the_standard_library_writes_invalid_json() -> None:
    assert dumps({"x": math.nan, "y": math.inf}) == b'{"x":null,"y":null}'
    assert _as_stdlib({"x": math.nan}) == b'{"x":NaN}'


def test_a_logged_event_with_a_unicode_line_separator_loads_whole(tmp_path: Path) -> None:
    """The encoder leaves U+2028 and U+0085 unescaped in strings; the log is still one event per line."""
    store = SessionStore(tmp_path)
    session_id = "sess_" + "0" * 32
    store.begin(session_id, "/ws", ("/ws",))
    store.append(session_id, {"type": "user", "text": "first\u2028second\x85third"})
    store.append(session_id, {"type": "user", "text": "next"})
    store.end(session_id)
    loaded = store.load(session_id)
    assert loaded is not None
    _, events = loaded
    assert [event["text"] for event in events] == ["first\u2028second\x85third", "next"]
