"""`dumps`: the one JSON encoder for what the bridge writes (protocol frames, the session log) and for
what the payload budget measures; compact, UTF-8 bytes.

orjson encodes a card update in ~0.3 µs where the standard library's encoder takes ~4.7 µs, and every
call of a turn is encoded about six times (each of its two updates measured by the budget and framed,
and its call and result logged): `benchmarks/turn_profile.py`, 200-read turn.

The standard library's output is kept where orjson would differ or refuse, so no caller sees a change
but speed: a value that is not JSON becomes its `str()` (dataclasses and datetimes included, which orjson
would otherwise encode as objects and RFC 3339 strings), mapping keys that are not strings are spelled as
the standard library spells them, and what orjson refuses (an integer past 64 bits, a lone surrogate,
nesting deeper than 254 levels) is encoded by the standard library, a lone surrogate as "?". What differs:
a float's exponent may be spelled shorter (`1e-8` for `1e-08`: the same number), NaN and the infinities
become `null` (the standard library writes `NaN`, which is not JSON), and a plain `Enum` member becomes its
value (the standard library's `default=str` gives its name).

Decoding stays with the standard library: orjson reads an integer past 64 bits as a float (a request id
would come back changed), and what the bridge reads is small next to what it writes. (The session store
reads long logs with orjson, line by line where orjson reads a line alike: `history.store._loads`.)

Must not: import anything of the bridge; stdio imports this before `initialize` is answered.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

_OPTIONS: Final = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_stdlib_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def dumps(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8. Raises TypeError or ValueError only where the standard library
    would (a key that cannot be a string, a circular reference)."""
    try:
        return orjson.dumps(value, default=str, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return _stdlib_encode(value).encode("utf-8", "replace")
