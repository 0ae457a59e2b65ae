"""acp_bridge.lsp.channel: the core's ClientChannel over LSP, driven with a recording fake transport.

The end-to-end behaviour (a real LSP client, the real server process) is in test_lsp_server.py; these
tests pin the channel's own rules: ordering of progress frames, the approval mapping, editor edits."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from acp_bridge import mapping
from acp_bridge.client.channel import PermissionOutcome
from acp_bridge.common.errors import ConnectionClosed, RemoteError
from acp_bridge.lsp.channel import SESSION_UPDATE, LspChannel, OpenDocument
from acp_bridge.lsp.options import EditorFeatures, LspOptions
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions
from registry_core import ToolResult, text
from registry_core.presentation import FileLocation, GenericCallView, TerminalCallView
from tests.support.lsp_fakes import FakeDocuments, FakeTransport

FULL = EditorFeatures(
    work_done_progress=True,
    show_message_request=True,
    show_document=True,
    apply_edit=True,
    document_changes=True,
    create_files=True,
    change_annotations=True,
)


def make(
    tmp_path: Path, features: EditorFeatures = FULL, **options: Any
) -> tuple[LspChannel, FakeTransport, FakeDocuments]:
    transport, documents = FakeTransport(), FakeDocuments()
    channel = LspChannel(
        transport,
        documents,
        options=LspOptions(**options),
        features=features,
        cwd_of=lambda _sid: str(tmp_path),
    )
    return channel, transport, documents


def _exists(path: str) -> bool:
    return os.path.exists(path)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


# --- updates ----------------------------------------------------------------------------------------


async def test_every_update_is_forwarded_verbatim_with_its_session(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    update = mapping.agent_message_chunk("hi\n")
    channel.send_update("s1", update)
    assert transport.sent[0] == (SESSION_UPDATE, {"sessionId": "s1", "update": update})
    logs = transport.of(types.WINDOW_LOG_MESSAGE)
    assert [(p.type, p.message) for p in logs] == [(types.MessageType.Info, "hi")]


async def test_progress_waits_for_the_token_to_be_created(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    created = asyncio.Event()

    async def create(_params: Any) -> None:
        await created.wait()

    transport.answers[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = create
    ctx = mapping.WireContext(cwd=str(tmp_path), terminal_meta=True)
    channel.send_update(
        "s", mapping.tool_call_started(ctx, "c1", "bash", {}, TerminalCallView(title="make"), "in_progress")
    )
    channel.send_update("s", mapping.terminal_output(ctx, "c1", "building\n", ""))
    await settle()
    assert transport.of(types.PROGRESS) == []  # nothing before the client created the token
    created.set()
    await settle()
    done = mapping.tool_call_completed(
        ctx, "c1", "bash", {}, TerminalCallView(title="make"), ToolResult(text("ok"), False), None
    )
    for update in done:
        channel.send_update("s", update)
    (create_params,) = transport.of(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    values = [p.value for p in transport.of(types.PROGRESS)]
    assert {p.token for p in transport.of(types.PROGRESS)} == {create_params.token}
    assert [type(v).__name__ for v in values] == [
        "WorkDoneProgressBegin",
        "WorkDoneProgressReport",
        "WorkDoneProgressEnd",
    ]
    assert values[0].title == "make" and values[1].message == "building" and values[2].message == "completed"


async def test_a_refused_token_is_never_used(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)

    def refuse(_params: Any) -> None:
        raise RemoteError(-32603, "no")

    transport.answers[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = refuse
    ctx = mapping.WireContext(cwd=str(tmp_path))
    channel.send_update("s", mapping.tool_call_started(ctx, "c1", "x", {}, None, "in_progress"))
    await settle()
    channel.send_update("s", mapping.tool_call_status(ctx, "c1", "pending"))
    assert transport.of(types.PROGRESS) == []


async def test_follow_shows_the_file_at_the_line_without_focus(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    target = tmp_path / "a.py"
    target.write_text("x\n" * 20)
    ctx = mapping.WireContext(cwd=str(tmp_path))
    view = GenericCallView(
        title="Read a.py", kind="read", locations=(FileLocation(path=str(target), line=12),)
    )
    missing = GenericCallView(
        title="Read b.py", kind="read", locations=(FileLocation(path=str(tmp_path / "b.py")),)
    )
    channel.send_update("s", mapping.tool_call_started(ctx, "c1", "read", {}, view, "in_progress"))
    channel.send_update("s", mapping.tool_call_started(ctx, "c2", "read", {}, missing, "in_progress"))
    await channel.settled()  # the existence check runs in a thread
    (shown,) = transport.of(types.WINDOW_SHOW_DOCUMENT)
    assert shown.uri == f"file://{target}" and shown.take_focus is False
    assert shown.selection == types.Range(types.Position(11, 0), types.Position(12, 0))


async def test_no_show_document_when_the_client_cannot_or_follow_is_off(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("x\n")
    view = GenericCallView(
        title="Read a.py", kind="read", locations=(FileLocation(path=str(target), line=1),)
    )
    for channel, transport, _ in (
        make(tmp_path, follow=False),
        make(tmp_path, EditorFeatures(work_done_progress=True)),
    ):
        ctx = mapping.WireContext(cwd=str(tmp_path))
        channel.send_update("s", mapping.tool_call_started(ctx, "c1", "read", {}, view, "in_progress"))
        # Settled: a showDocument would have been sent by now (as the test above shows with follow on).
        await channel.settled()
        assert transport.of(types.PROGRESS)  # the update was derived (its progress began)
        assert transport.of(types.WINDOW_SHOW_DOCUMENT) == []


# --- approvals ----------------------------------------------------------------------------------------


def _bash_request(tmp_path: Path) -> tuple[mapping.ToolCallUpdate, list[mapping.PermissionOption]]:
    ctx = mapping.WireContext(cwd=str(tmp_path))
    args = {"command": "rm -rf build"}
    call = mapping.permission_tool_call(
        ctx, "c1", "bash", args, TerminalCallView(title=args["command"]), None
    )
    scope = SessionPermissions(PolicyConfig(), str(tmp_path), (str(tmp_path),)).scope_for("bash", args)
    return call, mapping.permission_options(scope.label())


@pytest.mark.parametrize(
    ("answer", "option"),
    [(types.MessageActionItem(title="Always allow"), "allow_always"), (None, "reject_once")],
)
async def test_permission_is_a_warning_message_request(tmp_path: Path, answer: Any, option: str) -> None:
    channel, transport, _ = make(tmp_path)
    transport.answers[types.WINDOW_SHOW_MESSAGE_REQUEST] = lambda _p: answer
    call, options = _bash_request(tmp_path)
    outcome = await channel.request_permission("s", call, options)
    assert outcome == PermissionOutcome("selected", option)
    (params,) = transport.of(types.WINDOW_SHOW_MESSAGE_REQUEST)
    assert params.type == types.MessageType.Warning
    assert "$ rm -rf build" in params.message
    assert [a.title for a in params.actions] == ["Allow once", "Always allow", "Reject", "Always reject"]


async def test_the_calls_progress_waits_for_approval_while_the_question_is_open(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    ctx = mapping.WireContext(cwd=str(tmp_path))
    view = TerminalCallView(title="rm -rf build")
    channel.send_update(
        "s", mapping.tool_call_started(ctx, "c1", "bash", {"command": "rm -rf build"}, view, "pending")
    )
    await channel.settled()
    transport.answers[types.WINDOW_SHOW_MESSAGE_REQUEST] = lambda _p: types.MessageActionItem(
        title="Allow once"
    )
    call, options = _bash_request(tmp_path)
    await channel.request_permission("s", call, options)
    asked = [
        p.value.message if method == types.PROGRESS else method
        for method, p in transport.sent
        if method in (types.PROGRESS, types.WINDOW_SHOW_MESSAGE_REQUEST)
    ]
    assert asked == ["pending", "waiting for your approval", types.WINDOW_SHOW_MESSAGE_REQUEST]


async def test_without_the_capability_the_call_is_denied_visibly(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path, EditorFeatures(work_done_progress=True))
    call, options = _bash_request(tmp_path)
    with pytest.raises(RemoteError, match="cannot show approval prompts"):
        await channel.request_permission("s", call, options)
    assert transport.of(types.WINDOW_SHOW_MESSAGE_REQUEST) == []
    (warning,) = transport.of(types.WINDOW_SHOW_MESSAGE)
    assert warning.type == types.MessageType.Warning
    assert warning.message.startswith("acp-bridge denied `bash`: rm -rf build: this editor cannot show")
    # The editor may opt in when it answers the request without advertising it (Emacs eglot).
    forced, transport2, _ = make(tmp_path, EditorFeatures(), show_message_request=True)
    transport2.answers[types.WINDOW_SHOW_MESSAGE_REQUEST] = lambda _p: types.MessageActionItem(title="Reject")
    assert (await forced.request_permission("s", call, options)).option_id == "reject_once"


# --- file access through the editor ---------------------------------------------------------------


def _applied(result: bool = True, reason: str | None = None) -> Callable[[Any], Any]:
    return lambda _params: types.ApplyWorkspaceEditResult(applied=result, failure_reason=reason)


async def test_capabilities_offer_editor_files_only_when_edits_go_there(tmp_path: Path) -> None:
    assert make(tmp_path)[0].capabilities.fs_write is True
    assert make(tmp_path)[0].capabilities.fs_read is True
    off = make(tmp_path, apply_edits_in_editor=False)[0].capabilities
    assert (off.fs_read, off.fs_write) == (False, False)
    no_apply = make(tmp_path, EditorFeatures(show_message_request=True))[0].capabilities
    assert (no_apply.fs_read, no_apply.fs_write) == (False, False)


async def test_write_to_an_open_document_is_one_versioned_line_edit(tmp_path: Path) -> None:
    channel, transport, documents = make(tmp_path)
    path = str(tmp_path / "a.py")
    documents.open[path] = OpenDocument("file:///buffer/a.py", "one\ntwo\nthree\n", 4)
    transport.answers[types.WORKSPACE_APPLY_EDIT] = _applied()
    assert await channel.read_text_file("s", path) == "one\ntwo\nthree\n"
    await channel.write_text_file("s", path, "one\n2\nthree\n")
    (params,) = transport.of(types.WORKSPACE_APPLY_EDIT)
    (document,) = params.edit.document_changes
    assert document.text_document == types.OptionalVersionedTextDocumentIdentifier("file:///buffer/a.py", 4)
    (edit,) = document.edits
    assert (edit.range.start.line, edit.range.end.line, edit.new_text) == (1, 2, "2\n")
    assert params.edit.change_annotations[edit.annotation_id].needs_confirmation is True
    assert not _exists(path)  # nothing was written to disk


async def test_write_to_a_closed_file_leaves_the_disk_alone_and_reads_see_the_edit(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    target = tmp_path / "b.txt"
    target.write_text("a\nb\n")
    transport.answers[types.WORKSPACE_APPLY_EDIT] = _applied()
    with pytest.raises(RemoteError):
        await channel.read_text_file("s", str(target))  # not open: the tool reads the disk itself
    await channel.write_text_file("s", str(target), "a\nB\n")
    assert target.read_text() == "a\nb\n"
    assert await channel.read_text_file("s", str(target)) == "a\nB\n"
    # A second edit is computed against the editor's text, not the stale disk.
    await channel.write_text_file("s", str(target), "a\nB\nc\n")
    second = transport.of(types.WORKSPACE_APPLY_EDIT)[1].edit.document_changes[0].edits[0]
    assert (second.range.start.line, second.new_text) == (2, "c\n")
    target.write_text("saved by the user\n")  # the disk changed: it is the truth again
    with pytest.raises(RemoteError):
        await channel.read_text_file("s", str(target))


async def test_a_refused_edit_fails_with_the_editors_reason(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    target = tmp_path / "c.txt"
    target.write_text("x\n")
    transport.answers[types.WORKSPACE_APPLY_EDIT] = _applied(False, "the user declined")
    with pytest.raises(RemoteError, match=r"did not apply the edit of c\.txt: the user declined"):
        await channel.write_text_file("s", str(target), "y\n")


async def test_new_files_are_created_in_the_editor_or_on_disk(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    transport.answers[types.WORKSPACE_APPLY_EDIT] = _applied()
    await channel.write_text_file("s", str(tmp_path / "new.txt"), "hello\n")
    (params,) = transport.of(types.WORKSPACE_APPLY_EDIT)
    assert isinstance(params.edit.document_changes[0], types.CreateFile)
    assert not (tmp_path / "new.txt").exists()
    # A client that cannot create files through edits (Neovim advertises no documentChanges): disk.
    no_create = EditorFeatures(apply_edit=True, show_message_request=True)
    channel2, transport2, _ = make(tmp_path, no_create)
    await channel2.write_text_file("s", str(tmp_path / "disk.txt"), "on disk\n")
    assert (tmp_path / "disk.txt").read_text() == "on disk\n"
    assert transport2.of(types.WORKSPACE_APPLY_EDIT) == []


async def test_a_closed_connection_fails_the_write(tmp_path: Path) -> None:
    channel, transport, _ = make(tmp_path)
    (tmp_path / "d.txt").write_text("x\n")

    def closed(_params: Any) -> None:
        raise ConnectionClosed("gone")

    transport.answers[types.WORKSPACE_APPLY_EDIT] = closed
    with pytest.raises(ConnectionClosed):
        await channel.write_text_file("s", str(tmp_path / "d.txt"), "y\n")


async def test_reply_collects_the_agents_text_per_step(tmp_path: Path) -> None:
    channel, _, _ = make(tmp_path)
    channel.begin_reply("s")
    channel.send_update("s", mapping.agent_message_chunk("Looking"))
    channel.send_update("s", mapping.agent_message_chunk(" now."))
    channel.send_update(
        "s", mapping.tool_call_started(mapping.WireContext(cwd="/"), "c", "x", {}, None, "pending")
    )
    channel.send_update("s", mapping.agent_message_chunk("Done."))
    channel.send_update("other", mapping.agent_message_chunk("not mine"))
    assert channel.take_reply("s") == "Looking now.\n\nDone."
