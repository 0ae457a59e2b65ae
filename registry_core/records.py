"""`Record`: frozen, keyword-only, validated value classes that cost next to nothing to define.

The card vocabulary is ~20 small classes that every process defines at start-up, while an editor waits
for `initialize`. As pydantic models they cost ~30 ms to define (and pydantic itself); as `@dataclass`es
~0.5 ms each (the decorator generates and compiles code per class). A `Record` subclass is a plain class:
its fields are read from its annotations, and checked, the first time it is instantiated: that first time
also compiles the class's own `__init__` (as `dataclasses` does at definition), a straight run of one
check per field, since a card may build thousands of records (a read window's lines) and the generic
loop over the fields costs several times as much.

What a record checks (the subset of pydantic's behaviour the cards rely on): every required field is
given and no unknown one; `str`, `int` (a `bool` counts as 0/1), `bool`, `None`, `Literal[...]`, unions,
`tuple[X, ...]` (a list is accepted and stored as a tuple), nested records and tuple subclasses that
check themselves (`_checked_class`; a mapping is accepted and built into one), `Any`, and
`Annotated[int, AtLeast(n)]`. Defaults are trusted, not checked. An invalid value raises `RecordError`
naming the field. Instances compare equal when their class and field values are, hash by their values,
and refuse assignment (`dataclasses.FrozenInstanceError`).

`typing.dataclass_transform` (PEP 681) tells type checkers that subclasses get a typed, keyword-only
`__init__` and are frozen, so constructor calls are checked as if they were dataclasses.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import FrozenInstanceError
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    Union,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
)

Check = Callable[[Any], Any]
_Field = tuple[str, Any, tuple[type, ...], Check]
_MISSING: Any = object()


class RecordError(ValueError):
    """A value that does not fit a record: which field, and why."""


class AtLeast:
    """A lower bound for an `int` field: `Annotated[int, AtLeast(1)]`."""

    __slots__ = ("minimum",)

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum


@dataclass_transform(kw_only_default=True, frozen_default=True)
class Record:
    """Base of the frozen records. See the module docstring."""

    # Per class, compiled on first use, for every field in order: (name, default or _MISSING, the exact
    # types whose values pass as they are, check for any other value).
    _record_fields: ClassVar[tuple[_Field, ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._record_fields = None
        if "__init__" not in vars(cls):
            cls.__init__ = _first_init  # type: ignore[method-assign]

    def __init__(self, **values: Any) -> None:
        cls = type(self)
        fields = cls._record_fields or _compile(cls)
        own = self.__dict__
        for name, default, exact, check in fields:
            value = values.pop(name, _MISSING)
            if value is _MISSING:
                if default is _MISSING:
                    raise RecordError(f"{cls.__name__}.{name}: missing")
                own[name] = default
            elif type(value) in exact:
                own[name] = value
            else:
                try:
                    own[name] = check(value)
                except RecordError as exc:
                    raise RecordError(f"{cls.__name__}.{name}: {exc}") from None
        if values:
            raise RecordError(f"{cls.__name__}: unknown field(s) {', '.join(sorted(values))}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.__class__, *self.__dict__.values()))

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({body})"


def _compile(cls: type[Record]) -> tuple[_Field, ...]:
    hints = get_type_hints(cls, include_extras=True)
    fields = tuple(
        (name, getattr(cls, name, _MISSING), _exact_types(hint), _check_for(hint))
        for name, hint in hints.items()
        if not name.startswith("_")
    )
    cls._record_fields = fields
    return fields


def _first_init(self: Record, **values: Any) -> None:
    """A record class's `__init__` until its first instance: compile the class's own, then use it."""
    cls = type(self)
    init = _compiled_init(cls, cls._record_fields or _compile(cls))
    if vars(cls).get("__init__") is _first_init:
        cls.__init__ = init  # type: ignore[method-assign]
    init(self, **values)


def _compiled_init(cls: type[Record], fields: tuple[_Field, ...]) -> Callable[..., None]:
    """`Record.__init__`'s loop unrolled for `cls`'s fields: the same checks in the same order, the same
    errors. Field names are identifiers that never start with "_", so the helpers' names (all with "_")
    cannot clash."""
    # Builtins by names of their own: a field may be called `type` (a parameter shadows the builtin).
    scope: dict[str, Any] = {
        "_MISSING": _MISSING, "_RecordError": RecordError, "_type": type, "_int": int, "_str": str,
        "_sorted": sorted,
    }  # fmt: skip
    hints = get_type_hints(cls, include_extras=True)
    params = "".join(f"{name}=_MISSING, " for name, *_ in fields)
    lines = [f"def __init__(_self, *, {params}**_unknown):" if fields else "def __init__(_self, **_unknown):"]
    lines.append("    _own = _self.__dict__")
    for i, (name, default, exact, check) in enumerate(fields):
        scope[f"_default{i}"], scope[f"_exact{i}"], scope[f"_check{i}"] = default, exact, check
        label = f"{cls.__name__}.{name}"
        lines.append(f"    if {name} is _MISSING:")
        if default is _MISSING:
            lines.append(f"        raise _RecordError({label + ': missing'!r})")
        else:
            lines.append(f"        _own[{name!r}] = _default{i}")
        if exact:
            lines.append(f"    elif _type({name}) in _exact{i}:")
            lines.append(f"        _own[{name!r}] = {name}")
        minimum = _int_minimum(hints[name])
        if minimum is not None:  # `Annotated[int, AtLeast(n)]`: a plain int in bounds passes as it is
            lines.append(f"    elif _type({name}) is _int and {name} >= {minimum}:")
            lines.append(f"        _own[{name!r}] = {name}")
        lines.append("    else:")
        lines.append("        try:")
        lines.append(f"            _own[{name!r}] = _check{i}({name})")
        lines.append("        except _RecordError as _exc:")
        lines.append(f"            raise _RecordError({label + ': '!r} + _str(_exc)) from None")
    lines.append("    if _unknown:")
    lines.append(
        f"        raise _RecordError({cls.__name__ + ': unknown field(s) '!r} + ', '.join(_sorted(_unknown)))"
    )
    exec("\n".join(lines), scope)  # our own code, built from the class's annotations
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _int_minimum(hint: Any) -> int | None:
    """The lower bound of an `Annotated[int, AtLeast(n)]` field, else None."""
    if get_origin(hint) is not Annotated or get_args(hint)[0] is not int:
        return None
    bounds = [m.minimum for m in get_args(hint)[1:] if isinstance(m, AtLeast)]
    return int(max(bounds)) if bounds else None


def _exact_types(hint: Any) -> tuple[type, ...]:
    """Types whose exact instances the field takes unchanged without a check: plain `str`, `int`,
    `bool`, `None` and records, alone or in a union (the usual values, on the hot path)."""
    if hint is None or hint is type(None):
        return (type(None),)
    if hint in (str, int, bool) or _checked_class(hint):
        return (hint,)
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        return tuple(t for arg in get_args(hint) for t in _exact_types(arg))
    return ()


def _checked_class(hint: Any) -> bool:
    """A class whose instances were checked when built, so they pass as they are: a record, or a tuple
    subclass whose `__new__` checks its items (a card's row built by the thousand, such as
    `presentation.ReadFileLine`). A mapping is built into one by keywords."""
    return isinstance(hint, type) and (
        issubclass(hint, Record) or (issubclass(hint, tuple) and hint is not tuple)
    )


def _check_for(hint: Any) -> Check:
    """A function that returns the value (possibly converted) or raises RecordError."""
    if hint is Any:
        return _any
    if hint is None or hint is type(None):
        return _none
    if hint is bool:
        return _bool
    if hint is int:
        return _int
    if hint is str:
        return _str
    if hint is float:
        return _float
    if _checked_class(hint):
        return _record(hint)
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is Annotated:
        return _bounded(_check_for(args[0]), args[1:])
    if origin is Literal:
        return _literal(args)
    if origin is Union or origin is types.UnionType:
        return _union(tuple(_check_for(a) for a in args))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _tuple_of(_check_for(args[0]), frozenset(_exact_types(args[0])))
    raise TypeError(f"a record field cannot be {hint!r}")


def _any(value: Any) -> Any:
    return value


def _none(value: Any) -> None:
    if value is not None:
        raise RecordError(f"expected None, got {type(value).__name__}")


def _bool(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise RecordError(f"expected a boolean, got {type(value).__name__}")


def _int(value: Any) -> int:
    if isinstance(value, int):
        return int(value) if isinstance(value, bool) else value
    raise RecordError(f"expected an integer, got {type(value).__name__}")


def _float(value: Any) -> float:
    # As JSON numbers are: an integer is a float too (a bool is not).
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise RecordError(f"expected a number, got {type(value).__name__}")


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise RecordError(f"expected a string, got {type(value).__name__}")


def _record(cls: type[Any]) -> Check:
    def check(value: Any) -> Any:
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls(**value)
        raise RecordError(f"expected {cls.__name__}, got {type(value).__name__}")

    return check


def _bounded(inner: Check, metadata: tuple[Any, ...]) -> Check:
    bounds = [m.minimum for m in metadata if isinstance(m, AtLeast)]
    if not bounds:
        return inner
    minimum = max(bounds)

    def check(value: Any) -> Any:
        value = inner(value)
        if value < minimum:
            raise RecordError(f"must be at least {minimum}, got {value!r}")
        return value

    return check


def _literal(allowed: tuple[Any, ...]) -> Check:
    # Keyed by type too, so that True never passes for 1, nor 1 for True.
    accepted = frozenset((type(a), a) for a in allowed)

    def check(value: Any) -> Any:
        try:
            if (type(value), value) in accepted:
                return value
        except TypeError:  # an unhashable value is no literal
            pass
        raise RecordError(f"expected one of {', '.join(map(repr, allowed))}, got {value!r}")

    return check


def _union(branches: tuple[Check, ...]) -> Check:
    def check(value: Any) -> Any:
        reasons = []
        for branch in branches:
            try:
                return branch(value)
            except RecordError as exc:
                reasons.append(str(exc))
        raise RecordError(" or ".join(reasons))

    return check


def _tuple_of(item: Check, exact: frozenset[type]) -> Check:
    def check(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, (tuple, list)):
            raise RecordError(f"expected an array, got {type(value).__name__}")
        if exact.issuperset(map(type, value)):  # every item passes as it is (one C-level pass)
            return value if isinstance(value, tuple) else tuple(value)
        out = []
        same = True
        for i, element in enumerate(value):
            try:
                checked = item(element)
            except RecordError as exc:
                raise RecordError(f"[{i}]: {exc}") from None
            same = same and checked is element
            out.append(checked)
        return value if same and isinstance(value, tuple) else tuple(out)

    return check
