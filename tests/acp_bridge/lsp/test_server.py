"""`acp-bridge lsp` end to end: pytest-lsp's real LSP client spawns the server over stdio on a scripted
model and plays the editor (approval answers, applying workspace edits), with recorded capabilities of
real editors (Neovim 0.11, VS Code) and a bare client without window capabilities."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest
from acp.schema import SessionNotification
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from tests.support.lsp_editor import (
    BARE,
    CONSOLE_SCRIPT,
    SERVER,
    TIMEOUT,
    VSCODE,
    call,
    editor,
    write_turns,
)

pytestmark = pytest.mark.slow


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _sleeps(pid: int) -> list[psutil.Process]:
    """The `sleep` processes below `pid`; a child that ends while we look (the checkpoints' `git`) is
    left out."""
    found = []
    for process in _children(pid):
        try:
            if process.name() == "sleep":
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found


def _alive(processes: Sequence[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


# --- initialize -------------------------------------------------------------------------------------


async def test_initialize_advertises_the_commands_and_the_first_folder_is_the_cwd(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("r1", "read", file_path="notes.txt")]}, {"text": "ok"}]}]
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("hello\n")
    async with editor(tmp_path, turns, command=CONSOLE_SCRIPT) as ed:
        assert ed.initialized is not None
        commands = ed.initialized.capabilities.execute_command_provider
        assert commands is not None
        assert list(commands.commands) == [
            "acpBridge.prompt",
            "acpBridge.cancel",
            "acpBridge.newSession",
            "acpBridge.setConfigOption",
            "acpBridge.checkpoints",
            "acpBridge.rewind",
            "acpBridge.revertFile",
        ]
        await ed.prompt("read my notes")
        final = ed.final("r1")
        assert final["status"] == "completed"
        assert final["locations"] == [{"path": str(tmp_path / "ws" / "notes.txt"), "line": 1}]


async def test_prompt_logs_text_and_thoughts_and_answers_with_the_reply(tmp_path: Path) -> None:
    turns = [{"steps": [{"thought": "First, think.", "text": "Hello,\nworld."}]}]
    async with editor(tmp_path, turns) as ed:
        result = await ed.prompt("hi")
        assert result["stopReason"] == "end_turn"
        assert result["reply"] == "Hello,\nworld."
        assert result["sessionId"] == ed.updates[-1]["sessionId"]
        logged = [(m.type, m.message) for m in ed.client.log_messages]
        assert (types.MessageType.Log, "(thinking) First, think.") in logged
        assert (types.MessageType.Info, "Hello,") in logged and (types.MessageType.Info, "world.") in logged


async def test_every_session_update_is_a_valid_acp_session_notification(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("x = 1\n")
    turns = [
        {
            "steps": [
                {"thought": "plan", "text": "Working.", "tool_calls": [call("r", "read", file_path="a.py")]},
                {"tool_calls": [call("e", "edit", file_path="a.py", old_string="x = 1", new_string="x = 2")]},
                {"tool_calls": [call("b", "bash", command="echo out; exit 3")]},
                {"tool_calls": [call("t", "todo_write", todos=[{"content": "fix", "status": "pending"}])]},
                {"tool_calls": [call("bad", "read", file_path="missing.txt")]},
                {"text": "Done."},
            ]
        }
    ]
    async with editor(tmp_path, turns, args=["--mode", "full_access"]) as ed:
        await ed.prompt("go")
        kinds = {p["update"]["sessionUpdate"] for p in ed.updates}
        assert {
            "agent_thought_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "plan",
        } <= kinds
        for params in ed.updates:
            SessionNotification.model_validate(params)
        assert ed.final("bad")["status"] == "failed"
        assert ed.final("b")["rawOutput"]["exitCode"] == 3


# --- progress -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("terminal_output", [False, True])
async def test_each_tool_call_is_one_progress_with_live_output_lines(
    tmp_path: Path, terminal_output: bool
) -> None:
    command = "echo one; sleep 0.3; echo two; sleep 0.3; echo three"
    turns = [
        {
            "steps": [
                {"tool_calls": [call("b1", "bash", command=command)]},
                {"tool_calls": [call("r1", "read", file_path="nope.txt")]},
                {"text": "done"},
            ]
        }
    ]
    options = {"terminalOutput": terminal_output}
    async with editor(tmp_path, turns, options=options, args=["--allow-tool", "bash"]) as ed:
        await ed.prompt("run it")
        values = await ed.progress_of(command)
        assert isinstance(values[0], types.WorkDoneProgressBegin) and values[0].message == "running"
        reports = [v.message for v in values[1:-1]]
        assert all(isinstance(v, types.WorkDoneProgressReport) for v in values[1:-1])
        assert "one" in reports and "two" in reports and "three" in reports
        assert values[-1].message == "completed"
        failed = await ed.progress_of("Read nope.txt")
        assert len(ed.client.progress_reports) == 2  # one token per call, nothing else
        assert failed[-1].message.startswith("failed: ") and "nope.txt" in failed[-1].message


# --- approvals ----------------------------------------------------------------------------------------


async def test_reject_fails_the_call_and_always_allow_is_not_asked_again(tmp_path: Path) -> None:
    turns = [
        {
            "steps": [
                {"tool_calls": [call("b1", "bash", command="echo first > first.txt")]},
                {"tool_calls": [call("b2", "bash", command="python3 -c pass")]},
                {"tool_calls": [call("b3", "bash", command="python3 -c pass")]},
                {"text": "done"},
            ]
        }
    ]
    async with editor(tmp_path, turns) as ed:
        ed.answers = ["Reject", "Always allow"]
        await ed.prompt("go")
        assert len(ed.asked) == 2  # b3 is covered by the "always" answer for b2
        first = ed.asked[0]
        assert first.type == types.MessageType.Warning
        assert "$ echo first > first.txt" in first.message
        assert [a.title for a in first.actions or ()] == [
            "Allow once",
            "Always allow",
            "Reject",
            "Always reject",
        ]
        rejected = ed.final("b1")
        assert rejected["status"] == "failed"
        assert "rejected" in rejected["rawOutput"]["error"]["message"]
        assert not (ed.workspace / "first.txt").exists()
        end = (await ed.progress_of("echo first"))[-1]
        assert isinstance(end, types.WorkDoneProgressEnd) and end.message.startswith(
            "failed: The user rejected"
        )
        assert ed.final("b2")["status"] == "completed" and ed.final("b3")["status"] == "completed"
        assert "You chose: always allow" in json.dumps(ed.final("b2"))
        assert "Allowed by your session rule" in json.dumps(ed.final("b3"))


async def test_the_approval_question_comes_after_its_calls_progress_began(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="touch asked.txt")]}, {"text": "ok"}]}]
    async with editor(tmp_path, turns) as ed:
        ed.answers = ["Allow once"]
        await ed.prompt("go")
        assert len(ed.asked) == 1
        (begun,) = ed.begun_when_asked
        assert [title for title in begun if "touch asked.txt" in title], begun
        values = await ed.progress_of("touch asked.txt")
        assert isinstance(values[-1], types.WorkDoneProgressEnd) and values[-1].message == "completed"


async def test_a_dismissed_question_rejects(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="touch x")]}, {"text": "done"}]}]
    async with editor(tmp_path, turns) as ed:
        ed.answers = [None]
        await ed.prompt("go")
        assert ed.final("b1")["status"] == "failed" and not (ed.workspace / "x").exists()


async def test_without_window_capabilities_calls_that_ask_are_denied_visibly(tmp_path: Path) -> None:
    turns = [
        {
            "steps": [
                {"tool_calls": [call("b1", "bash", command="touch made.txt")]},
                {"tool_calls": [call("w1", "write", file_path="new.txt", content="hi\n")]},
                {"text": "done"},
            ]
        }
    ]
    async with editor(tmp_path, turns, capabilities=BARE, args=["--allow-tool", "write"]) as ed:
        result = await ed.prompt("go")
        assert result["stopReason"] == "end_turn"
        assert ed.asked == [] and ed.client.progress_reports == {}
        denied = ed.final("b1")
        assert denied["status"] == "failed"
        reason = denied["rawOutput"]["error"]["message"]  # also what the model gets as the tool's error
        assert "cannot show approval prompts" in reason and "--allow-tool" in reason
        assert any("acp-bridge denied" in m.message for m in ed.client.messages)
        assert not (ed.workspace / "made.txt").exists()
        # No workspace/applyEdit support: the allowed write went to disk.
        assert ed.final("w1")["status"] == "completed"
        assert (ed.workspace / "new.txt").read_text() == "hi\n" and ed.edits == []


async def test_a_denial_for_want_of_a_prompt_shows_in_the_progress(tmp_path: Path) -> None:
    # Emacs 29's eglot advertises progress but not window.showMessage.
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="touch made.txt")]}, {"text": "done"}]}]
    async with editor(tmp_path, turns, capabilities=client_capabilities("emacs")) as ed:
        await ed.prompt("go")
        end = (await ed.progress_of("touch made.txt"))[-1]
        assert (
            end.message.startswith("failed: `bash` was denied")
            and "cannot show approval prompts" in end.message
        )
        assert ed.asked == [] and not (ed.workspace / "made.txt").exists()


# --- follow-along -------------------------------------------------------------------------------------


async def test_follow_shows_the_file_at_the_line_without_focus(tmp_path: Path) -> None:
    # `follow: false` is test_lsp_face.py's: there the test can wait until nothing is left to show.
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 40)))
    turns = [
        {"steps": [{"tool_calls": [call("r1", "read", file_path="long.txt", offset=12)]}, {"text": "ok"}]}
    ]
    async with editor(tmp_path, turns, options={"follow": True}) as ed:
        await ed.prompt("look")
        await ed.wait_for(lambda: ed.client.shown_documents, "showDocument")
        (shown,) = ed.client.shown_documents
        assert shown.uri == (tmp_path / "ws" / "long.txt").as_uri()
        assert shown.take_focus is False
        assert shown.selection == types.Range(types.Position(11, 0), types.Position(12, 0))


# --- edits through the editor ---------------------------------------------------------------------


async def test_an_edit_is_exactly_one_workspace_edit_and_disk_waits_for_the_editor(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "app.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    turns = [
        {
            "steps": [
                {
                    "tool_calls": [
                        call("e1", "edit", file_path="app.py", old_string="return 1", new_string="return 2")
                    ]
                },
                {"tool_calls": [call("b1", "bash", command="python3 app.py")]},
                {"text": "done"},
            ]
        }
    ]
    async with editor(tmp_path, turns) as ed:
        ed.answers = ["Allow once", "Allow once"]
        await ed.prompt("fix f")
        (params,) = ed.edits
        uri = (tmp_path / "ws" / "app.py").as_uri()
        assert params.edit.changes == {
            uri: (
                types.TextEdit(
                    range=types.Range(types.Position(1, 0), types.Position(2, 0)), new_text="    return 2\n"
                ),
            )
        }
        assert ed.disk_when_asked[0]["app.py"] == "def f():\n    return 1\n\nprint(f())\n"
        assert ed.final("e1")["status"] == "completed"
        # The editor applied (and saved) it, so the command sees the new code.
        assert "2" in ed.final("b1")["rawOutput"]["output"]


async def test_document_changes_carry_an_annotation_and_a_refused_edit_fails_with_its_reason(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("keep\nold\n")
    turns = [
        {
            "steps": [
                {"tool_calls": [call("e1", "edit", file_path="a.txt", old_string="old", new_string="new")]},
                {"tool_calls": [call("w1", "write", file_path="b.txt", content="created\n")]},
                {"text": "done"},
            ]
        }
    ]
    async with editor(tmp_path, turns, capabilities=VSCODE, args=["--mode", "accept_edits"]) as ed:
        ed.refuse_edits = "the user discarded the change"
        await ed.prompt("edit")
        first, second = ed.edits
        (document,) = first.edit.document_changes or ()
        assert isinstance(document, types.TextDocumentEdit)
        (text_edit,) = document.edits
        assert isinstance(text_edit, types.AnnotatedTextEdit) and text_edit.new_text == "new\n"
        annotation = (first.edit.change_annotations or {})[text_edit.annotation_id]
        assert annotation.needs_confirmation is True and annotation.label == "acp-bridge: edit a.txt"
        assert isinstance((second.edit.document_changes or ())[0], types.CreateFile)
        for call_id in ("e1", "w1"):
            final = ed.final(call_id)
            assert final["status"] == "failed"
            assert "the user discarded the change" in final["rawOutput"]["error"]["message"]
        assert (ed.workspace / "a.txt").read_text() == "keep\nold\n" and not (ed.workspace / "b.txt").exists()


async def test_apply_edits_in_editor_off_writes_on_disk(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("old\n")
    turns = [
        {
            "steps": [
                {"tool_calls": [call("e1", "edit", file_path="a.txt", old_string="old", new_string="new")]},
                {},
            ]
        }
    ]
    async with editor(
        tmp_path, turns, options={"applyEditsInEditor": False}, args=["--mode", "accept_edits"]
    ) as ed:
        await ed.prompt("edit")
        assert ed.edits == [] and (ed.workspace / "a.txt").read_text() == "new\n"


# --- sessions and commands ----------------------------------------------------------------------------


async def test_cancel_stops_a_running_command_and_its_process(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="sleep 30")]}, {"text": "never"}]}]
    async with editor(tmp_path, turns, args=["--allow-tool", "bash"]) as ed:
        prompt = asyncio.ensure_future(ed.prompt("wait"))
        await ed.wait_for(lambda: bool(_sleeps(ed.pid)), "sleep to start")
        sleepers = _children(ed.pid)
        started = asyncio.get_running_loop().time()
        assert await ed.command("acpBridge.cancel") is None
        result = await prompt
        assert result["stopReason"] == "cancelled"
        # Far below the command's 30 s: the cancel stopped it (a tighter bound is a benchmark's job, and
        # flaked on a loaded 2-core machine).
        assert asyncio.get_running_loop().time() - started < 10.0
        await ed.wait_for(lambda: not _alive(sleepers), "the sleep process to be gone")
        end = (await ed.progress_of("sleep 30"))[-1]
        assert isinstance(end, types.WorkDoneProgressEnd) and end.message.startswith("failed")


async def test_a_second_prompt_is_refused_and_a_new_session_starts_fresh(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="sleep 30")]}, {"text": "first"}]}]
    async with editor(tmp_path, turns, args=["--allow-tool", "bash"]) as ed:
        running = asyncio.ensure_future(ed.prompt("one"))
        await ed.wait_for(lambda: ed.cards("b1"), "the first prompt's call")
        with pytest.raises(JsonRpcException, match="already running a prompt"):
            await ed.prompt("two")
        fresh = await ed.command("acpBridge.newSession")
        assert (await running)["stopReason"] == "cancelled"  # switching sessions cancels the old prompt
        assert fresh["cwd"] == str(ed.workspace) and fresh["sessionId"] != ed.updates[0]["sessionId"]
        # A new session replays the script from its first turn (its own cursor), so b1 runs again there.
        again = asyncio.ensure_future(ed.prompt("one again"))
        await ed.wait_for(
            lambda: any(
                p["sessionId"] == fresh["sessionId"] and p["update"].get("toolCallId") == "b1"
                for p in ed.updates
            ),
            "the new session's first turn",
        )
        await ed.command("acpBridge.cancel")
        assert (await again)["sessionId"] == fresh["sessionId"]


# --- shutdown -----------------------------------------------------------------------------------------


async def test_shutdown_during_a_command_leaves_no_process(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="sleep 30 & sleep 30")]}, {"text": "x"}]}]
    async with editor(tmp_path, turns, args=["--allow-tool", "bash"]) as ed:
        prompt = asyncio.ensure_future(ed.prompt("wait"))
        await ed.wait_for(lambda: len(_sleeps(ed.pid)) == 2, "two sleeps")
        everything = [psutil.Process(ed.pid), *_children(ed.pid)]
        await asyncio.wait_for(ed.client.shutdown_session(), TIMEOUT)
        assert ed.client._server is not None and ed.client._server.returncode == 0
        await ed.wait_for(lambda: not _alive(everything), "every process to be gone")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(prompt, 1)


async def test_closed_stdin_cancels_everything_and_exits(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="sleep 30")]}, {"text": "x"}]}]
    async with editor(tmp_path, turns, args=["--allow-tool", "bash"]) as ed:
        prompt = asyncio.ensure_future(ed.prompt("wait"))
        await ed.wait_for(lambda: bool(_sleeps(ed.pid)), "sleep to start")
        everything = [psutil.Process(ed.pid), *_children(ed.pid)]
        process = ed.client._server
        assert process is not None and process.stdin is not None
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), 5) == 0
        await ed.wait_for(lambda: not _alive(everything), "every process to be gone")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(prompt, 1)


async def test_sigterm_cancels_everything_and_exits(tmp_path: Path) -> None:
    turns = [{"steps": [{"tool_calls": [call("b1", "bash", command="sleep 30")]}, {"text": "x"}]}]
    async with editor(tmp_path, turns, args=["--allow-tool", "bash"]) as ed:
        prompt = asyncio.ensure_future(ed.prompt("wait"))
        await ed.wait_for(lambda: bool(_sleeps(ed.pid)), "sleep to start")
        everything = [psutil.Process(ed.pid), *_children(ed.pid)]
        process = ed.client._server
        assert process is not None
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 5) == 0
        await ed.wait_for(lambda: not _alive(everything), "every process to be gone")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(prompt, 1)


async def test_exit_without_shutdown_exits_with_1(tmp_path: Path) -> None:
    async with editor(tmp_path, [{"steps": [{"text": "x"}]}]) as ed:
        process = ed.client._server
        assert process is not None
        ed.client.exit(None)
        assert await asyncio.wait_for(process.wait(), 5) == 1


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _frames(data: bytes) -> list[dict[str, Any]]:
    messages = []
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        fields = dict(line.split(b": ", 1) for line in header.split(b"\r\n"))
        length = int(fields[b"Content-Length"])
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


def test_stdin_from_a_file_and_every_stdout_byte_is_a_frame(tmp_path: Path) -> None:
    # Not a pipe: the reader falls back to a thread; stdout must still carry nothing but LSP frames.
    requests = tmp_path / "in.lsp"
    requests.write_bytes(
        _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
        + _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        + _frame({"jsonrpc": "2.0", "method": "exit"})
    )
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [*SERVER, "--model", f"scripted:{write_turns(tmp_path, [])}"],
            stdin=stdin,
            capture_output=True,
            timeout=TIMEOUT,
            cwd=tmp_path,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    messages = _frames(done.stdout)
    answers = {m["id"]: m for m in messages if "id" in m}
    assert answers[1]["result"]["serverInfo"]["name"] == "acp-bridge"
    assert answers[2]["result"] is None
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
