"""The ACP face's inbound edge (`acp_bridge.acp.params`): each request's params read into a typed value, a
bad field refused with -32602 naming it by its path; what only the core can judge is let through."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from acp_bridge.acp import params
from acp_bridge.common.errors import INVALID_PARAMS, InvalidParams
from acp_bridge.mcp.config import StdioServer

WS = "/work/space"

# (reader, params, the field the error names, a word of the reason)
REFUSED: list[tuple[Callable[[object], object], object, str, str]] = [
    (params.read_new_session, [WS], "params", "object"),
    (params.read_new_session, {}, "cwd", "required"),
    (params.read_new_session, {"cwd": ""}, "cwd", "required"),
    (params.read_new_session, {"cwd": "relative/dir"}, "cwd", "absolute"),
    (params.read_new_session, {"cwd": 3}, "cwd", "absolute"),
    (params.read_new_session, {"cwd": WS, "additionalDirectories": "/x"}, "additionalDirectories", "list"),
    (params.read_new_session, {"cwd": WS, "additionalDirectories": ["/x", "y"]}, "additionalDirectories[1]",
     "absolute"),
    (params.read_reopen, {"cwd": WS}, "sessionId", "required"),
    (params.read_reopen, {"sessionId": 42, "cwd": WS}, "sessionId", "string"),
    (params.read_reopen, {"sessionId": "s", "cwd": "."}, "cwd", "absolute"),
    (params.read_reopen, {"sessionId": "s", "cwd": WS, "additionalDirectories": [None]},
     "additionalDirectories[0]", "absolute"),
    (params.read_prompt, {"sessionId": "s", "prompt": "hi"}, "prompt", "list"),
    (params.read_prompt, {"sessionId": "s", "prompt": [{"type": "text", "text": "a"}, 7]}, "prompt[1]",
     "content block"),
    (params.read_prompt, {"sessionId": ["s"], "prompt": []}, "sessionId", "string"),
    (params.read_set_mode, {"sessionId": "s"}, "modeId", "required"),
    (params.read_set_mode, {"sessionId": "s", "modeId": 1}, "modeId", "string"),
    (params.read_set_config_option, {"sessionId": "s", "value": "x"}, "configId", "required"),
    (params.read_set_config_option, {"sessionId": "s", "configId": "mode", "value": True}, "value",
     'goes with type "boolean"'),
    (params.read_set_config_option, {"sessionId": "s", "configId": "x", "type": "boolean", "value": "true"},
     "value", "true or false"),
    (params.read_set_config_option, {"sessionId": "s", "configId": "x", "type": "boolean"}, "value",
     "true or false"),
    (params.read_list_sessions, {"cwd": "rel"}, "cwd", "absolute"),
    (params.read_list_sessions, {"cursor": 5}, "cursor", "string"),
    (params.read_set_title, {"sessionId": "s", "title": "  \n "}, "title", "empty"),
    (params.read_set_title, {"sessionId": "s", "title": 5}, "title", "string"),
    (params.read_forget_rules, {"sessionId": "s", "number": 0}, "number", "rule number"),
    (params.read_forget_rules, {"sessionId": "s", "number": True}, "number", "rule number"),
    (params.read_forget_rules, {"sessionId": "s", "number": "1"}, "number", "rule number"),
    (params.read_session, {"sessionId": {"id": 1}}, "sessionId", "string"),
    (params.read_session, None, "sessionId", "required"),
    (params.read_authenticate, {"methodId": 1}, "methodId", "string"),
    (params.read_cancel_request, {"requestId": None}, "requestId", "string or an integer"),
    (params.read_cancel_request, {"requestId": False}, "requestId", "string or an integer"),
    (params.read_no_params, "x", "params", "object"),
]  # fmt: skip


@pytest.mark.parametrize(("read", "raw", "field", "reason"), REFUSED)
def test_a_bad_field_is_invalid_params_naming_it(
    read: Callable[[object], object], raw: object, field: str, reason: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        read(raw)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message.startswith(f"{field} "), caught.value.message
    assert reason in caught.value.message
    if field != "params":
        assert caught.value.data == {"field": field}


def test_a_long_bad_value_is_quoted_only_in_part() -> None:
    with pytest.raises(InvalidParams) as caught:
        params.read_new_session({"cwd": "x" * 100_000})
    assert len(caught.value.message) < 400
    assert "100000 characters" in caught.value.message


def test_a_new_session_reads_its_roots_and_servers() -> None:
    server = {"name": "bench", "command": "/bin/bench", "args": ["-v"], "env": []}
    asked = params.read_new_session(
        {"cwd": WS, "additionalDirectories": ["/a", "/b/../c"], "mcpServers": [server], "_meta": {"x": 1}}
    )
    # Normalizing and dropping duplicates is the core's (`SessionManager`): the face passes what it got.
    assert asked == params.SessionSetup(WS, ("/a", "/b/../c"), asked.mcp_servers, None)
    assert asked.mcp_servers.servers == (StdioServer("bench", "/bin/bench", ("-v",)),)


@pytest.mark.parametrize("read", [params.read_new_session, params.read_reopen])
def test_the_clients_system_prompt_is_read_with_the_session(read: Callable[[object], object]) -> None:
    base = {"sessionId": "s", "cwd": WS}
    told = {"mode": "override", "content": [{"type": "text", "text": "Be brief."}]}
    asked = read({**base, "systemPrompt": told})
    setup = asked.setup if isinstance(asked, params.ReopenParams) else asked
    assert isinstance(setup, params.SessionSetup) and setup.system_prompt is not None
    assert (setup.system_prompt.mode, setup.system_prompt.text) == ("override", "Be brief.")
    image = {"type": "image", "data": "", "mimeType": "image/png"}
    with pytest.raises(InvalidParams) as caught:
        read({**base, "systemPrompt": {"content": [told["content"][0], image]}})
    assert caught.value.message.startswith("systemPrompt.content[1] ")


def test_what_only_the_core_can_judge_is_let_through() -> None:
    # An unusable MCP server is reported in the session, not a refused request.
    asked = params.read_reopen({"sessionId": "sess_nope", "cwd": WS, "mcpServers": [{"name": ""}]})
    assert (asked.session_id, asked.setup.additional_directories) == ("sess_nope", ())
    assert [p.name for p in asked.setup.mcp_servers.problems] == ["mcpServers[0]"]
    # An empty prompt, an unknown mode, an unknown option: the session says what is wrong with them.
    assert params.read_prompt({"sessionId": "s", "prompt": []}).blocks == ()
    assert params.read_set_mode({"sessionId": "s", "modeId": "teleport"}).mode_id == "teleport"
    chosen = params.read_set_config_option({"sessionId": "s", "configId": "temperature", "value": "1"})
    assert (chosen.config_id, chosen.value) == ("temperature", "1")
    # A boolean value (ACP's `type: "boolean"` form), whichever option it names.
    toggled = params.read_set_config_option(
        {"sessionId": "s", "configId": "x", "type": "boolean", "value": False}
    )
    assert (toggled.config_id, toggled.value) == ("x", False)


def test_optional_fields_may_be_left_out_or_null() -> None:
    assert params.read_list_sessions(None) == params.ListSessionsParams(None, None)
    assert params.read_list_sessions({"cwd": None, "cursor": None}) == params.ListSessionsParams(None, None)
    assert params.read_forget_rules({"sessionId": "s"}).number is None
    assert params.read_forget_rules({"sessionId": "s", "number": 2}).number == 2
    assert params.read_set_title({"sessionId": "s", "title": " A\nnew  title "}).title == "A new title"
    assert params.read_cancel_request({"requestId": 0}) == 0
    assert params.read_reopen({"sessionId": "s", "cwd": WS, "additionalDirectories": None}) == (
        params.read_reopen({"sessionId": "s", "cwd": WS})
    )
    params.read_no_params(None)
    params.read_no_params({"_meta": {}})
