"""`Record`: each class's `__init__` is compiled on its first instance; it must check exactly what the
generic `Record.__init__` checks, with the same errors, whatever the fields are called."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest

from registry_core.records import AtLeast, Record, RecordError


class _Line(Record):
    number: Annotated[int, AtLeast(1)]
    text: str


class _Typed(Record):
    # Fields named like builtins the compiled code must not shadow.
    type: Literal["x"] = "x"
    len: int | None = None
    sorted: tuple[_Line, ...] = ()


def _generic(cls: type[Record], **values: Any) -> Record:
    """An instance built by the generic loop, whatever `cls.__init__` is now."""
    record = cls.__new__(cls)
    Record.__init__(record, **values)
    return record


CASES: list[tuple[type[Record], dict[str, Any]]] = [
    (_Line, {"number": 3, "text": "a"}),
    (_Line, {"number": True, "text": "a"}),  # a bool counts as 1
    (_Typed, {}),
    (_Typed, {"type": "x", "len": 2, "sorted": [{"number": 1, "text": "b"}]}),
    (_Typed, {"sorted": (_Line(number=2, text="c"),)}),
]

BAD: list[tuple[type[Record], dict[str, Any], str]] = [
    (_Line, {"number": 0, "text": "a"}, "_Line.number: must be at least 1, got 0"),
    (_Line, {"number": 1.0, "text": "a"}, "_Line.number: expected an integer, got float"),
    (_Line, {"text": "a"}, "_Line.number: missing"),
    (_Line, {"number": 1, "text": 2}, "_Line.text: expected a string, got int"),
    (_Line, {"number": 1, "text": "a", "zz": 1, "aa": 2}, "_Line: unknown field(s) aa, zz"),
    (_Typed, {"type": "y"}, "_Typed.type: expected one of 'x', got 'y'"),
    (
        _Typed,
        {"sorted": [{"number": 0, "text": "b"}]},
        "_Typed.sorted: [0]: _Line.number: must be at least 1",
    ),
]


@pytest.mark.parametrize(("cls", "values"), CASES)
def test_the_compiled_init_builds_what_the_generic_one_builds(
    cls: type[Record], values: dict[str, Any]
) -> None:
    built = cls(**values)
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"  # its own, compiled
    assert built == _generic(cls, **values)
    assert vars(built) == vars(_generic(cls, **values))


@pytest.mark.parametrize(("cls", "values", "message"), BAD)
def test_the_compiled_init_refuses_what_the_generic_one_refuses(
    cls: type[Record], values: dict[str, Any], message: str
) -> None:
    with pytest.raises(RecordError) as compiled:
        cls(**values)
    with pytest.raises(RecordError) as generic:
        _generic(cls, **values)
    assert str(compiled.value) == str(generic.value)
    assert str(compiled.value).startswith(message)


def test_a_tuple_of_records_is_kept_as_given_and_a_list_becomes_a_tuple() -> None:
    lines = (_Line(number=1, text="a"), _Line(number=2, text="b"))
    assert _Typed(sorted=lines).sorted is lines
    assert _Typed(sorted=list(lines)).sorted == lines
    with pytest.raises(RecordError, match=r"_Typed.sorted: \[1\]"):
        _Typed(sorted=(lines[0], "not a line"))


def test_positional_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        _Line(1, "a")  # type: ignore[misc]
