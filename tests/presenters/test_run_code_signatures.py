"""The typed signatures in `run_code`'s description: TypeScript declarations of exactly the tools a
program of that scope may call, generated from their schemas, that TypeScript itself accepts."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from presenters import build_tools
from presenters.deno_sandbox import deno_executable
from presenters.run_code import run_code_tool
from presenters.ts_signatures import declarations, ts_type
from registry_core import (
    NestedTool,
    TextBlock,
    ToolDefinition,
    ToolOutputDefinition,
    ToolRegistry,
    ToolRestriction,
)


def _registry(*extra: ToolDefinition) -> ToolRegistry:
    registry = ToolRegistry()
    for definition in (*build_tools(), *extra):
        registry.register(definition)
    registry.register(run_code_tool(), transport=True)
    return registry


def _raw(name: str, parameters: dict[str, Any], output: dict[str, Any]) -> ToolDefinition:
    async def body(_args: Any, _ctx: Any) -> Any:
        return None

    return ToolDefinition(
        name=name,
        description=f"The {name} tool. */ Not the end of the comment.",
        parameters=parameters,
        output=ToolOutputDefinition(schema=output, render=lambda _a, _v: (TextBlock("x"),)),
        execute=body,
    )


def _description(registry: ToolRegistry, restriction: ToolRestriction | None = None) -> str:
    scope = registry.root if restriction is None else registry.root.restricted(restriction)
    return next(s["description"] for s in scope.schemas() if s["name"] == "run_code")


def test_the_description_declares_every_tool_the_scope_shows_and_no_other() -> None:
    registry = _registry()
    full = _description(registry)
    for name in ("read", "write", "edit", "bash", "grep", "glob", "web_fetch", "todo_write"):
        assert f"declare function {name}(args: {{" in full
    assert "declare function run_code" not in full
    narrow = _description(registry, ToolRestriction.of(allow=["read"]))
    assert "declare function read(" in narrow and "declare function bash(" not in narrow
    # A tool registered later is in the next description.
    registry.register(_raw("my-tool", {"type": "object", "properties": {}}, {"type": "string"}))
    assert '  "my-tool"(args: { [key: string]: JsonValue }): Promise<string>;' in _description(registry)


def test_schemas_become_typescript_types() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where."},
            "mode": {"enum": ["a", "b"], "type": "string"},
            "n": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "number"}]}},
            "any": {},
            "odd key": {"const": 3},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert ts_type(schema, 0) == (
        "{\n"
        "  /** Where. */\n"
        "  path: string;\n"
        '  mode?: "a" | "b";\n'
        "  n?: number | null;\n"
        "  tags?: (string | number)[];\n"
        "  any?: JsonValue;\n"
        '  "odd key"?: 3;\n'
        "}"
    )


@pytest.mark.slow
def test_typescript_accepts_the_declarations_and_a_program_using_them(tmp_path: Path) -> None:
    odd = _raw(
        "odd-name",
        {"type": "object", "properties": {"a b": {"type": "array", "items": {"enum": ["x", "y"]}}}},
        {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": False,
        },
    )
    tools = [NestedTool(t.name, t.description, t.parameters, t.output.schema) for t in (*build_tools(), odd)]
    program = (
        "const r = await read({ file_path: 'a.txt' });\n"
        "const n: number = r.total_lines;\n"
        "const ok: boolean = (await tools['odd-name']({ 'a b': ['x'] })).ok;\n"
        "try { await bash({ command: 'true' }) }\n"
        "catch (e) { if (e instanceof ToolError) console.log(e.tool, e.code) }\n"
        "console.log(n, ok);\n"
    )
    source = tmp_path / "check.ts"
    source.write_text(f"{declarations(tools)}\nasync function main() {{\n{program}}}\nexport {{ main }};\n")
    checked = subprocess.run(
        [deno_executable(), "check", "--no-config", "--no-lock", "--no-remote", "--no-npm", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"DENO_DIR": str(tmp_path / "deno"), "NO_COLOR": "1"},
        cwd=tmp_path,
    )
    assert checked.returncode == 0, checked.stderr
    # And a program that misuses a tool is caught by the same declarations.
    source.write_text(f"{declarations(tools)}\nexport const bad = () => read({{ path: 1 }});\n")
    wrong = subprocess.run(
        [deno_executable(), "check", "--no-config", "--no-lock", "--no-remote", "--no-npm", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"DENO_DIR": str(tmp_path / "deno"), "NO_COLOR": "1"},
        cwd=tmp_path,
    )
    assert wrong.returncode != 0
