from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from registry_core import (
    INVALID_ARGS,
    INVALID_TOOL_OUTPUT,
    FrozenDict,
    Output,
    RegistrationError,
    SchemaCompileError,
    ToolExecutionInput,
    ToolFailure,
    ToolRegistry,
    ToolRunContext,
    ToolSuccess,
    assert_supported,
    compile_parameters_spec,
    compile_type,
    compile_value_spec,
    define_tool,
)


class ReadArgs(BaseModel):
    file_path: str = Field(description="Path to read")
    offset: int | None = Field(default=None, ge=1)
    mode: Literal["text", "bytes"] = "text"
    ignore_case: bool = Field(default=False, alias="-i")


class ReadOut(BaseModel):
    text: str
    lines: int


def make_tool(body: Any = None) -> Any:
    async def default(args: ReadArgs, ctx: ToolRunContext) -> ReadOut:
        return ReadOut(text=args.file_path, lines=args.offset or 0)

    return define_tool(
        name="read",
        description="Read a file",
        parameters=ReadArgs,
        output=Output(
            ReadOut, render=lambda a, v: f"{v.text}:{v.lines}", presentation_meta=lambda a, v: {"n": v.lines}
        ),
        execute=body or default,
    )


def test_pydantic_parameters_compile_to_the_subset() -> None:
    tool = make_tool()
    params = tool.parameters
    assert_supported(params)
    assert params["type"] == "object"
    assert params["required"] == ["file_path"]
    props = params["properties"]
    assert props["file_path"] == {"type": "string", "description": "Path to read"}
    assert props["-i"]["type"] == "boolean"  # aliases are the wire names
    assert props["mode"]["enum"] == ["text", "bytes"]
    # a constraint the subset cannot express moves into the description, still enforced by pydantic
    assert "minimum 1" in str(props["offset"])
    assert "title" not in props["file_path"]


async def test_arguments_are_validated_before_the_body_with_every_violation() -> None:
    ran = False

    async def body(args: ReadArgs, ctx: ToolRunContext) -> ReadOut:
        nonlocal ran
        ran = True
        return ReadOut(text="", lines=0)

    registry = ToolRegistry()
    registry.register(make_tool(body))
    result = await registry.execute(ToolExecutionInput("c", "read", {"offset": "x", "mode": "nope"}))
    assert isinstance(result, ToolFailure)
    assert result.error.code == INVALID_ARGS
    for fragment in ("/file_path", "/offset", "/mode"):
        assert fragment in result.error.message
    assert not ran


async def test_pydantic_only_constraints_are_enforced_as_invalid_args() -> None:
    registry = ToolRegistry()
    registry.register(make_tool())
    result = await registry.execute(ToolExecutionInput("c", "read", {"file_path": "a", "offset": 0}))
    assert isinstance(result, ToolFailure)
    assert result.error.code == INVALID_ARGS
    assert "/offset" in result.error.message


async def test_typed_body_render_and_meta() -> None:
    registry = ToolRegistry()
    registry.register(make_tool())
    result = await registry.execute(
        ToolExecutionInput("c", "read", {"file_path": "a.txt", "offset": 3, "-i": True})
    )
    assert isinstance(result, ToolSuccess)
    assert result.value == {"text": "a.txt", "lines": 3}
    assert result.content[0].text == "a.txt:3"  # type: ignore[union-attr]
    assert result.meta == {"n": 3}


async def test_a_body_value_outside_the_output_type_is_invalid_tool_output() -> None:
    async def body(args: ReadArgs, ctx: ToolRunContext) -> Any:
        return {"text": 5}

    registry = ToolRegistry()
    registry.register(make_tool(body))
    result = await registry.execute(ToolExecutionInput("c", "read", {"file_path": "a"}))
    assert isinstance(result, ToolFailure)
    assert result.error.code == INVALID_TOOL_OUTPUT


def test_spec_dictionaries_compile_like_the_seed() -> None:
    params = compile_parameters_spec(
        {
            "path": {"type": "string", "required": True},
            "opts": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"deep": {"type": "boolean", "required": True}, "any": {"type": "json"}},
            },
            "pick": {"oneOf": [{"type": "string"}, {"type": "null"}]},
        }
    )
    assert params["required"] == ["path"]
    assert params["properties"]["opts"]["required"] == ["deep"]
    assert params["properties"]["opts"]["additionalProperties"] is False
    assert params["properties"]["opts"]["properties"]["any"] == {}
    with pytest.raises(SchemaCompileError):
        compile_value_spec({"type": "object", "properties": {}})  # openness must be explicit
    with pytest.raises(SchemaCompileError):
        compile_value_spec({"type": "date"})


async def test_spec_tools_get_frozen_json_arguments() -> None:
    seen: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        seen.append(args)
        return "ok"

    tool = define_tool(
        name="spec",
        description="",
        parameters={"path": {"type": "string", "required": True}},
        output=Output({"type": "string"}, render=lambda a, v: str(v)),
        execute=body,
    )
    registry = ToolRegistry()
    registry.register(tool)
    bad = await registry.execute(ToolExecutionInput("c1", "spec", {}))
    assert isinstance(bad, ToolFailure) and bad.error.code == INVALID_ARGS
    ok = await registry.execute(ToolExecutionInput("c2", "spec", {"path": "x"}))
    assert isinstance(ok, ToolSuccess)
    assert isinstance(seen[0], FrozenDict)


def test_recursive_types_are_rejected_clearly() -> None:
    class Node(BaseModel):
        children: list[Node]

    with pytest.raises(SchemaCompileError, match="recursive"):
        compile_type(Node)


def test_non_object_parameters_are_rejected() -> None:
    with pytest.raises(RegistrationError):
        define_tool(
            name="x",
            description="",
            parameters=int,  # type: ignore[arg-type]
            output=Output(int, render=lambda a, v: ""),
            execute=lambda a, c: None,  # type: ignore[arg-type,return-value]
        )
