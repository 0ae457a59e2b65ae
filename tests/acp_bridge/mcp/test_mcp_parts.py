"""The pure parts of MCP support: configuration sources, names, the result budget, cards and commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_bridge import mapping
from acp_bridge.mapping import WireContext
from acp_bridge.mcp.config import (
    ConfigError,
    HttpServer,
    StdioServer,
    load_config_file,
    merge,
    parse_acp,
    parse_any,
    parse_config_mapping,
)
from acp_bridge.mcp.content import MAX_IMAGE_CHARS, MAX_TEXT_CHARS, bound_result, error_message, model_content
from acp_bridge.mcp.naming import MAX_TOOL_NAME, command_name, split_tool_name, tool_name
from acp_bridge.mcp.present import ToolFacts, facts_of, presentation_definition, result_view, title
from acp_bridge.mcp.prompts import PromptArgsError, parse_arguments, prompt_command, render_messages
from acp_bridge.permissions.external import ExternalTool
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions
from registry_core import ContentResourceLink, GenericResultView, StatusProgress, ToolResult

# --- configuration ------------------------------------------------------------------------------------


def test_acp_servers_of_every_transport_are_read() -> None:
    servers = parse_acp(
        [
            {
                "name": "fs",
                "command": "/usr/bin/fs-server",
                "args": ["--ro"],
                "env": [{"name": "K", "value": "v"}],
            },
            {
                "type": "http",
                "name": "api",
                "url": "https://mcp.example/mcp",
                "headers": [{"name": "A", "value": "b"}],
            },
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
        ]
    )
    assert servers.servers == (
        StdioServer("fs", "/usr/bin/fs-server", ("--ro",), (("K", "v"),)),
        HttpServer("api", "https://mcp.example/mcp", "http", (("A", "b"),)),
        HttpServer("old", "http://127.0.0.1:9/sse", "sse", ()),
    )
    assert servers.problems == ()


def test_a_bad_acp_entry_is_a_problem_not_a_refusal() -> None:
    servers = parse_acp(
        [
            {"name": "ok", "command": "/bin/ok", "args": [], "env": []},
            {"name": "nocmd", "args": []},
            {"name": "ok", "command": "/bin/again", "args": [], "env": []},
            {"type": "acp", "name": "inner", "serverId": "1"},
            {"type": "http", "name": "ftp", "url": "ftp://x", "headers": []},
            "junk",
        ]
    )
    assert [s.name for s in servers.servers] == ["ok"]
    assert [(p.name, p.reason) for p in servers.problems] == [
        ("nocmd", "`command` must be a non-empty string"),
        ("ok", "another server has the same name"),
        ("inner", "transport 'acp' is not supported (stdio, http and sse are)"),
        ("ftp", "`url` must be an http(s) URL, got 'ftp://x'"),
        ("mcpServers[5]", "a server must be an object"),
    ]


def test_the_config_file_format_with_variables_and_inferred_transports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "gh": {"command": "npx", "args": ["-y", "gh-mcp"], "env": {"TOKEN": "${GH_TOKEN}"}},
                    "web": {
                        "url": "https://${HOST:-mcp.example}/mcp",
                        "headers": {"Authorization": "Bearer x"},
                    },
                    "events": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                    "streamy": {"type": "streamable-http", "url": "http://127.0.0.1:2/mcp"},
                    "off": {"command": "nothing", "disabled": True},
                    "unset": {"command": "x", "env": {"A": "${NOT_SET_ANYWHERE}"}},
                }
            }
        )
    )
    servers = parse_config_mapping(json.loads(path.read_text())["mcpServers"], {"GH_TOKEN": "t0k"})
    assert servers.servers == (
        StdioServer("gh", "npx", ("-y", "gh-mcp"), (("TOKEN", "t0k"),)),
        HttpServer("web", "https://mcp.example/mcp", "http", (("Authorization", "Bearer x"),)),
        HttpServer("events", "http://127.0.0.1:1/sse", "sse"),
        HttpServer("streamy", "http://127.0.0.1:2/mcp", "http"),
    )
    assert [(p.name, p.reason) for p in servers.problems] == [
        ("unset", "${NOT_SET_ANYWHERE} is not set in the environment")
    ]
    monkeypatch.setenv("GH_TOKEN", "from-env")
    loaded = load_config_file(str(path))
    assert loaded.servers[0] == StdioServer("gh", "npx", ("-y", "gh-mcp"), (("TOKEN", "from-env"),))


@pytest.mark.parametrize(
    ("content", "says"), [(None, "cannot read"), ("{", "not valid JSON"), ("[]", "mcpServers")]
)
def test_an_unreadable_config_file_is_an_error(tmp_path: Path, content: str | None, says: str) -> None:
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=says):
        load_config_file(str(path))


def test_lsp_options_take_either_shape_and_the_session_list_wins() -> None:
    as_list = parse_any([{"name": "a", "command": "/bin/a", "args": [], "env": []}])
    as_object = parse_any({"a": {"command": "/bin/other"}, "b": {"command": "/bin/b"}})
    assert parse_any({"mcpServers": {"b": {"command": "/bin/b"}}}).servers == (StdioServer("b", "/bin/b"),)
    merged = merge(as_list, as_object)
    assert [(s.name, getattr(s, "command", "")) for s in merged.servers] == [("a", "/bin/a"), ("b", "/bin/b")]
    assert not parse_any(None)


# --- names --------------------------------------------------------------------------------------------


def test_tool_names_are_safe_bounded_and_unique() -> None:
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert tool_name("my server", "do.it/now") == "mcp__my_server__do_it_now"
    long = tool_name("s" * 40, "t" * 40)
    assert len(long) == MAX_TOOL_NAME and long.startswith("mcp__sss")
    assert long == tool_name("s" * 40, "t" * 40)  # stable
    clash = tool_name("a", "b c", taken={"mcp__a__b_c"})
    assert clash != "mcp__a__b_c" and clash.startswith("mcp__a__b_c_") and len(clash) <= MAX_TOOL_NAME
    assert split_tool_name("mcp__github__create_issue") == ("github", "create_issue")
    assert split_tool_name("read") is None
    assert command_name("git hub", "review") == "git_hub:review"


# --- results ------------------------------------------------------------------------------------------


def test_the_model_sees_bounded_text_and_the_card_keeps_the_servers_order() -> None:
    raw = {
        "content": [
            {"type": "text", "text": "x" * (MAX_TEXT_CHARS + 10)},
            {"type": "text", "text": "dropped"},
            {"type": "image", "data": "A" * (MAX_IMAGE_CHARS + 1), "mimeType": "image/png"},
            {"type": "image", "data": "QUJD", "mimeType": "image/gif"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        ],
        "structuredContent": {"big": "y" * 70_000},
    }
    value = bound_result(raw)
    blocks, layout = model_content(value)
    texts = [getattr(b, "text", None) for b in blocks]
    assert texts[0] == "x" * MAX_TEXT_CHARS
    assert "dropped" not in texts
    assert texts[1].startswith("[image image/png") and "over the result budget" in texts[1]
    assert getattr(blocks[2], "mime_type", None) == "image/gif"
    assert texts[3] == "[audio audio/wav, 4 bytes]"
    notes = " ".join(t for t in texts[4:] if t)
    assert "structured content" in notes and "left out" in notes
    assert f"{MAX_TEXT_CHARS} of its {MAX_TEXT_CHARS + 10 + 7} characters" in notes
    assert "structuredContent" not in value
    assert "1 image(s) over the" in notes
    assert [next(iter(entry)) for entry in layout] == [
        "text",
        "text",
        "image",
        "text",
        "text",
        "text",
        "text",
    ]


def test_structured_content_alone_is_told_to_the_model_as_json() -> None:
    value = bound_result({"content": [], "structuredContent": {"a": 1}})
    blocks, _ = model_content(value)
    assert [getattr(b, "text", None) for b in blocks] == ['{"a": 1}']


def test_an_error_result_says_what_the_server_said() -> None:
    assert (
        error_message({"content": [{"type": "text", "text": "no such repo"}], "isError": True})
        == "no such repo"
    )
    assert "without a message" in error_message({"content": [], "isError": True})


# --- cards --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "kind", "read_only", "exclusive"),
    [
        (None, "other", False, False),
        ({"readOnlyHint": True}, "read", True, False),
        ({"readOnlyHint": True, "openWorldHint": True}, "fetch", True, False),
        ({"destructiveHint": True}, "delete", False, True),
        ({"destructiveHint": False}, "edit", False, False),
        ({"readOnlyHint": False}, "edit", False, False),
        ({"openWorldHint": True}, "fetch", False, False),
    ],
)
def test_annotations_give_the_card_kind_and_the_policy_facts(
    annotations: dict[str, Any] | None, kind: str, read_only: bool, exclusive: bool
) -> None:
    facts = facts_of("srv", {"name": "t", "annotations": annotations})
    assert (facts.kind, facts.read_only, facts.exclusive) == (kind, read_only, exclusive)


def test_titles_summarise_the_arguments() -> None:
    assert title("gh", "list", {}) == "gh: list"
    long = "a" * 100
    assert title("gh", "create", {"title": long, "labels": ["x"], "draft": True, "body": "b"}) == (
        f'gh: create (title="{"a" * 39}…", labels=[…], draft=true, …)'
    )


def test_a_replayed_mcp_card_needs_no_server() -> None:
    definition = presentation_definition("mcp__gh__create")
    assert definition is not None and presentation_definition("read") is None
    assert definition.present_call is not None and definition.present_result is not None
    assert definition.present_call({"n": 1}).title == "gh: create (n=1)"
    result = ToolResult(
        (), False, None, {"server": "git hub", "tool": "create", "kind": "edit", "layout": []}
    )
    view = definition.present_result({}, result)
    assert isinstance(view, GenericResultView)
    assert (view.title, view.kind) == ("git hub: create", "edit")


def test_result_content_items_map_to_acp_blocks_within_the_budget() -> None:
    ctx = WireContext(cwd="/w", max_update_bytes=4000)
    facts = ToolFacts("srv", "t")
    layout = [
        {"link": {"uri": "file:///a", "name": "a", "size": 3}},
        {"resource": {"uri": "file:///b"}, "text": 0},
    ]
    from registry_core import TextBlock

    result = ToolResult((TextBlock("z" * 10_000),), False, None, {**facts.meta(), "layout": layout})
    view = result_view(facts, {}, result)
    assert view is not None and isinstance(view.content[0], ContentResourceLink)  # type: ignore[index]
    (update,) = mapping.tool_call_completed(ctx, "c", "mcp__srv__t", {}, None, result, view)
    link, resource = (block["content"] for block in update["content"])
    assert link == {"type": "resource_link", "uri": "file:///a", "name": "a", "size": 3}
    assert resource["type"] == "resource" and "truncated" in resource["resource"]["text"]
    assert len(json.dumps(update)) <= 4000


def test_progress_is_one_line_on_the_card() -> None:
    ctx = WireContext(cwd="/w")
    line = mapping.tool_call_progress(
        ctx, "c", None, StatusProgress(progress=1, total=3, message="indexing\nfiles")
    )
    assert line == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "content": [
            {
                "type": "content",
                "content": {"type": "text", "text": "Progress: 1 of 3 (33%) · indexing ↵ files"},
            }
        ],
    }
    bare = mapping.tool_call_progress(ctx, "c", None, StatusProgress(progress=2.5))
    assert bare["content"][0]["content"]["text"] == "Progress: 2.5"


# --- prompts ------------------------------------------------------------------------------------------


def test_prompt_arguments_by_name_position_or_the_whole_line() -> None:
    review = prompt_command("s:review", "s", {"name": "review", "arguments": [
        {"name": "pr", "required": True}, {"name": "focus"}]})  # fmt: skip
    assert review.hint == "pr [focus]"
    assert parse_arguments(review, "42 error handling") == {"pr": "42", "focus": "error handling"}
    assert parse_arguments(review, 'focus="speed" pr=7') == {"pr": "7", "focus": "speed"}
    with pytest.raises(PromptArgsError, match="needs `pr`"):
        parse_arguments(review, "")
    one = prompt_command("s:ask", "s", {"name": "ask", "arguments": [{"name": "question", "required": True}]})
    assert parse_arguments(one, "why is the sky blue?") == {"question": "why is the sky blue?"}
    none = prompt_command("s:go", "s", {"name": "go"})
    with pytest.raises(PromptArgsError, match="takes no more"):
        parse_arguments(none, "extra")


def test_prompt_messages_become_the_turns_text() -> None:
    user_only = [{"role": "user", "content": {"type": "text", "text": "Do it."}}]
    assert render_messages(user_only) == "Do it."
    mixed = [
        {"role": "user", "content": {"type": "text", "text": "Q"}},
        {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "file:///r", "text": "R"}}},
    ]
    assert render_messages(mixed) == "**User:** Q\n\n**Assistant:** [Resource file:///r]\nR"


# --- the policy ---------------------------------------------------------------------------------------


def test_mcp_tools_ask_and_always_covers_the_tool_or_the_server() -> None:
    permissions = SessionPermissions(PolicyConfig(), "/w", ("/w",))
    permissions.external_tools["mcp__gh__read"] = ExternalTool("gh", "read", read_only=True)
    permissions.external_tools["mcp__gh__write"] = ExternalTool("gh", "write")
    permissions.external_tools["mcp__db__read"] = ExternalTool("db", "read", read_only=True)
    assert permissions.decide("mcp__gh__read", {}).kind == "ask"  # annotations never skip the question
    permissions.remember(permissions.scope_for("mcp__gh__read", {}), allow=True)
    assert permissions.decide("mcp__gh__read", {}).kind == "allow"
    assert permissions.decide("mcp__gh__write", {}).kind == "ask"
    server = permissions.server_scope_for("mcp__gh__write")
    assert server is not None and server.label() == "every tool of MCP server `gh`"
    permissions.remember(server, allow=True)
    assert permissions.decide("mcp__gh__write", {}).kind == "allow"
    assert permissions.decide("mcp__db__read", {}).kind == "ask"  # another server's tool is not covered
    permissions.forget()
    permissions.mode = "plan"
    assert permissions.decide("mcp__gh__read", {}).kind == "ask"
    assert permissions.decide("mcp__gh__write", {}).kind == "deny"


def test_only_the_client_and_its_transport_import_the_sdk() -> None:
    """The rest of the bridge stays importable (and fast to start) without the MCP SDK."""
    from tests.support.source_imports import REPO, imports_of

    sdk = ("mcp", "mcp_types", "httpx2")  # anyio is the core's own (cancel scopes), not the SDK's
    users = {
        str(path.relative_to(REPO))
        for path in (REPO / "acp_bridge").rglob("*.py")
        if any(name.split(".")[0] in sdk for name in imports_of(path))
    }
    assert users == {"acp_bridge/mcp/client.py", "acp_bridge/mcp/stdio.py"}


def test_the_lsp_face_reads_mcp_servers_from_its_initialization_options() -> None:
    from acp_bridge.lsp.options import LspOptions

    servers = {"docs": {"url": "http://127.0.0.1:1/mcp"}}
    options = LspOptions.from_init({"model": "scripted", "mcpServers": servers})
    assert options.mcp_servers == servers
    assert parse_any(options.mcp_servers).servers == (HttpServer("docs", "http://127.0.0.1:1/mcp"),)
    assert LspOptions.from_init({}).mcp_servers is None
