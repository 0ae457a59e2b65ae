"""acp_bridge.mapping.permission_options: the four answers of a permission question, the scope of the
"always" ones in words (their names) and as data (`_meta.acpBridge.scope`), which the LSP face reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import schema

from acp_bridge import mapping
from acp_bridge.lsp.approval import build_question
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions
from registry_core.presentation import TerminalCallView
from tests.support.acp_unstable_schema import as_the_sdk_knows_it
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected, write_script

CWD = "/work/proj"
CTX = mapping.WireContext(cwd=CWD)


def _scope_label(tool: str, args: dict[str, object]) -> str:
    return SessionPermissions(PolicyConfig(), CWD, (CWD,)).scope_for(tool, args).label()


def test_the_four_options_name_the_scope_and_carry_it_as_data() -> None:
    label = _scope_label("bash", {"command": "npm test -- --watch=false"})
    assert label == "`npm test` commands"
    scope = {"_meta": {"acpBridge": {"scope": "`npm test` commands"}}}
    assert mapping.permission_options(label) == [
        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
        {
            "optionId": "allow_always",
            "name": "Always allow `npm test` commands (this session)",
            "kind": "allow_always",
            **scope,
        },
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {
            "optionId": "reject_always",
            "name": "Always reject `npm test` commands (this session)",
            "kind": "reject_always",
            **scope,
        },
    ]
    # On the wire the name, kind and id come first, in that order, as they always have.
    wire = json.dumps(mapping.permission_options(label)[1])
    assert wire.startswith('{"optionId": "allow_always", "name": "Always allow `npm test` commands (this')


def test_only_the_always_options_have_a_scope() -> None:
    options = mapping.permission_options(_scope_label("edit", {"file_path": "src/app.py"}))
    scopes = [mapping.option_scope(option) for option in options]
    assert scopes == [None, "`edit` on src/app.py", None, "`edit` on src/app.py"]


def test_the_options_are_valid_acp_permission_options() -> None:
    call = mapping.permission_tool_call(
        CTX, "c1", "bash", {"command": "ls"}, TerminalCallView(title="ls"), None
    )
    request = {"sessionId": "s1", "toolCall": call, "options": mapping.permission_options("`ls` commands")}
    model = schema.RequestPermissionRequest.model_validate(request)
    assert model.model_dump(mode="json", by_alias=True, exclude_unset=True) == {
        **request,
        "toolCall": as_the_sdk_knows_it(dict(call)),
    }
    assert call["name"] == "bash"


def _question_lines(options: list[Any]) -> list[str]:
    call = mapping.permission_tool_call(
        CTX, "c1", "bash", {"command": "npm test"}, TerminalCallView(title="npm test"), None
    )
    return build_question(call, options, CWD).message.splitlines()


def test_the_lsp_question_reads_the_scope_from_the_data_not_from_the_names() -> None:
    options: list[Any] = mapping.permission_options("`npm test` commands")
    # A client-facing name worded otherwise (e.g. translated) changes nothing: the scope is data.
    renamed = [{**option, "name": f"Toujours: {option['name']}"} for option in options]
    assert '"Always" answers cover `npm test` commands (this session).' in _question_lines(renamed)
    # A name that merely looks like it names a scope is not read as one.
    unscoped = [{key: value for key, value in option.items() if key != "_meta"} for option in options]
    assert not [line for line in _question_lines(unscoped) if "answers cover" in line]


async def test_the_bridge_sends_the_scope_with_its_always_options(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    async def allow(session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]) -> Any:
        return selected("allow_once")

    steps = [
        {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "ok"},
    ]
    bridge = await bridges(
        model=write_script(tmp_path / "script.json", [steps]), client=RecordingClient(allow)
    )
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    (frame,) = [f for f in bridge.frames if f.get("method") == "session/request_permission"]
    options = frame["params"]["options"]
    assert [(o["optionId"], o["name"]) for o in options] == [
        ("allow_once", "Allow once"),
        ("allow_always", "Always allow `echo` commands (this session)"),
        ("reject_once", "Reject"),
        ("reject_always", "Always reject `echo` commands (this session)"),
    ]
    assert [o.get("_meta") for o in options] == [
        None,
        {"acpBridge": {"scope": "`echo` commands"}},
        None,
        {"acpBridge": {"scope": "`echo` commands"}},
    ]
