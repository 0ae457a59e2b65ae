"""Lossless JSON values: snapshot, deep-freeze and thaw.

The pipeline materialises every value that crosses a seam (model arguments, tool values, presentation
metadata) exactly once: `snapshot()` checks it is lossless JSON (str keys, finite numbers, no cycles, no
foreign types) and returns a deep-frozen copy (`FrozenDict`, tuples) that later hooks cannot mutate.
`thaw()` turns a frozen value back into plain dicts and lists for serialisation.

Invariant: nothing here does I/O or knows about tools.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeAlias

JsonValue: TypeAlias = Any
"""Any lossless JSON value (plain or frozen). Kept as Any: mypy cannot express recursive unions cheaply."""


class NotJsonError(ValueError):
    """A value that is not lossless JSON; `path` names where (JSON-pointer style)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '/'}: {message}")
        self.path = path
        self.reason = message


class FrozenDict(Mapping[str, Any]):
    """An immutable JSON object. Reads like a dict; every write is an error."""

    __slots__ = ("_data", "_hash")
    _data: dict[str, Any]
    _hash: int | None

    def __init__(self, data: dict[str, Any]) -> None:
        _set_data(self, data)
        _set_hash(self, None)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    # The underlying views (read-only), not the ABC's generic ones: these are on the validation hot path.
    def items(self) -> ItemsView[str, Any]:
        return self._data.items()

    def keys(self) -> KeysView[str]:
        return self._data.keys()

    def values(self) -> ValuesView[Any]:
        return self._data.values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return bool(self._data == other._data)
        if isinstance(other, Mapping):
            return bool(self._data == dict(other))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            _set_hash(self, hash(frozenset((k, _hashable(v)) for k, v in self._data.items())))
        assert self._hash is not None
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("FrozenDict is immutable")

    def __delattr__(self, name: str) -> None:
        raise TypeError("FrozenDict is immutable")


# The slots' own setters: `object.__setattr__` by name is slower, and a FrozenDict is built per object.
_set_data: Callable[[FrozenDict, dict[str, Any]], None] = vars(FrozenDict)["_data"].__set__
_set_hash: Callable[[FrozenDict, int | None], None] = vars(FrozenDict)["_hash"].__set__


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return frozenset((k, _hashable(v)) for k, v in value.items())
    return value


def snapshot(value: Any, *, path: str = "") -> JsonValue:
    """Return a deep-frozen lossless copy of `value`, or raise `NotJsonError` naming the offending path.

    Accepts dicts/Mappings (string keys), lists/tuples, str, bool, int, finite float and None.
    """
    try:
        return _snapshot(value, set())
    except NotJsonError as exc:
        if not path:
            raise
        raise NotJsonError(path + exc.path, exc.reason) from None


# The hot path of every call (arguments, values, metadata): exact types are tested first (ABC checks such
# as `isinstance(x, Mapping)` are slow), scalars inside containers are copied without a call, and an
# error's path is built only when there is an error, segment by segment on the way out.


def _snapshot(value: Any, active: set[int]) -> JsonValue:
    cls = type(value)
    if cls is str or cls is int or cls is bool or value is None:
        return value
    if cls is dict or cls is FrozenDict:
        return _snapshot_mapping(value, active)
    if cls is list or cls is tuple:
        return _snapshot_sequence(value, active)
    if cls is float:
        if not math.isfinite(value):
            raise NotJsonError("", f"non-finite number {value!r} is not JSON")
        return value
    # Subclasses and other mappings: order matters, bool is an int subclass and str a sequence.
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _snapshot(float(value), active)
    if isinstance(value, Mapping):
        return _snapshot_mapping(value, active)
    if isinstance(value, (list, tuple)):
        return _snapshot_sequence(value, active)
    raise NotJsonError("", f"{type(value).__name__} is not a JSON value")


def _snapshot_mapping(value: Mapping[Any, Any], active: set[int]) -> FrozenDict:
    ident = id(value)
    if ident in active:
        raise NotJsonError("", "cycle: the value contains itself")
    active.add(ident)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            if not isinstance(key, str):
                raise NotJsonError("", f"object key {key!r} is not a string")
            key = str(key)
        cls = type(item)
        if cls is str or cls is int or cls is bool or item is None:
            out[key] = item
            continue
        try:
            out[key] = _snapshot(item, active)
        except NotJsonError as exc:
            raise NotJsonError(f"/{_escape(key)}{exc.path}", exc.reason) from None
    # Not in a `finally`: on an error the whole snapshot, and this set, is abandoned.
    active.discard(ident)
    return FrozenDict(out)


# The types a container's items are copied as they are (a float is checked: NaN and infinities are no JSON).
_PLAIN_SCALARS = frozenset((str, int, bool, type(None)))


def _snapshot_sequence(value: list[Any] | tuple[Any, ...], active: set[int]) -> tuple[Any, ...]:
    # An array of scalars only (a file's lines, a command's argv) is copied in one C-level pass: the item
    # types are collected without a Python call per item. Such an array cannot contain itself.
    if _PLAIN_SCALARS.issuperset(map(type, value)):
        return value if type(value) is tuple else tuple(value)
    ident = id(value)
    if ident in active:
        raise NotJsonError("", "cycle: the value contains itself")
    active.add(ident)
    out: list[Any] = []
    for i, item in enumerate(value):
        cls = type(item)
        if cls is str or cls is int or cls is bool or item is None:
            out.append(item)
            continue
        try:
            out.append(_snapshot(item, active))
        except NotJsonError as exc:
            raise NotJsonError(f"/{i}{exc.path}", exc.reason) from None
    active.discard(ident)
    return tuple(out)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def thaw(value: JsonValue) -> Any:
    """Plain (mutable, `json.dumps`-able) copy of a frozen or plain JSON value."""
    cls = type(value)
    if cls is str or cls is int or cls is bool or value is None or cls is float:
        return value
    if cls is FrozenDict:
        # Scalars (most of an object's values) are copied without a call: every logged result is thawed.
        out: dict[str, Any] = {}
        for key, item in value._data.items():
            kind = type(item)
            out[key] = item if kind is str or kind is int or kind is bool or item is None else thaw(item)
        return out
    if cls is tuple and _PLAIN_SCALARS.issuperset(map(type, value)):
        return list(value)  # an array of scalars (a file's lines) in one C-level pass
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def copy_json(value: Any) -> Any:
    """A copy of a plain JSON value's mutable containers (dicts and lists; tuples and frozen values are kept,
    other objects deep-copied), several times cheaper than `copy.deepcopy` for what is known to be JSON: a
    tool list handed out every turn, a scripted model's arguments handed out every call."""
    cls = type(value)
    if cls is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if cls is list:
        return [copy_json(item) for item in value]
    if cls is str or cls is int or cls is bool or cls is float or value is None or cls is FrozenDict:
        return value
    return copy.deepcopy(value)


def is_json_object(value: Any) -> bool:
    return isinstance(value, Mapping)


def is_json_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))
