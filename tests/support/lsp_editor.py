"""The editor side of `acp-bridge lsp` for end-to-end tests: pytest-lsp's real LSP client spawns the server
over stdio on a scripted model and plays the editor (answers approvals, applies workspace edits, records
every `acpBridge/sessionUpdate`), with recorded capabilities of real editors (Neovim 0.11, VS Code) and a
bare client without window capabilities."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import SessionNotification
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from tests.support.eventually import eventually

SERVER = [sys.executable, "-m", "acp_bridge", "lsp"]
CONSOLE_SCRIPT = [str(Path(sys.executable).with_name("acp-bridge")), "lsp"]  # what editors configure
NEOVIM = client_capabilities("neovim@v0.11.0")  # showMessage, showDocument, progress, applyEdit (`changes`)
VSCODE = client_capabilities("visual-studio-code")  # + documentChanges, create, change annotations
BARE = types.ClientCapabilities()
TIMEOUT = 20.0


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _offset(text: str, position: types.Position) -> int:
    lines = text.splitlines(keepends=True)
    before = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = index = 0
    while units < position.character and index < len(line):
        units += _utf16(line[index])
        index += 1
    return before + index


def _apply_text_edits(text: str, edits: Sequence[Any]) -> str:
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: _offset(text, edit.range.start)] + edit.new_text + text[_offset(text, edit.range.end) :]
    return text


@dataclass
class Editor:
    """The editor side of one connection: what the server sent, and how the "user" answers."""

    client: LanguageClient
    workspace: Path
    updates: list[dict[str, Any]] = field(default_factory=list)  # raw acpBridge/sessionUpdate params
    answers: list[str | None] = field(default_factory=list)  # showMessageRequest answers, in order
    asked: list[types.ShowMessageRequestParams] = field(default_factory=list)
    # The titles of the progresses begun when each question arrived (what the editor could show by then).
    begun_when_asked: list[list[str]] = field(default_factory=list)
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    disk_when_asked: list[dict[str, str]] = field(default_factory=list)
    refuse_edits: str | None = None  # a failure reason: the "user" declines every edit
    initialized: types.InitializeResult | None = None

    @property
    def pid(self) -> int:
        assert self.client._server is not None
        return self.client._server.pid

    async def prompt(self, text: str) -> dict[str, Any]:
        result = await asyncio.wait_for(
            self.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="acpBridge.prompt", arguments=[text])
            ),
            TIMEOUT,
        )
        return _plain(result)

    async def command(self, name: str, *arguments: Any) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=list(arguments))
        return _plain(await asyncio.wait_for(self.client.workspace_execute_command_async(params), TIMEOUT))

    def cards(self, call_id: str) -> list[dict[str, Any]]:
        return [
            p["update"]
            for p in self.updates
            if p["update"].get("toolCallId") == call_id
            and p["update"]["sessionUpdate"].startswith("tool_call")
        ]

    def final(self, call_id: str) -> dict[str, Any]:
        (last,) = [c for c in self.cards(call_id) if c.get("status") in ("completed", "failed")]
        return last

    async def progress_of(self, title_prefix: str) -> list[Any]:
        """The progress values of the call titled `title_prefix…`, once it ended (the frames may trail the
        prompt's answer by the token-creation round trip)."""

        def find() -> list[Any] | None:
            for values in self.client.progress_reports.values():
                begin = values[0] if values else None
                if isinstance(begin, types.WorkDoneProgressBegin) and begin.title.startswith(title_prefix):
                    return values if isinstance(values[-1], types.WorkDoneProgressEnd) else None
            return None

        await self.wait_for(lambda: find() is not None, f"the progress of {title_prefix!r} to end")
        values = find()
        assert values is not None
        return values

    async def wait_for(self, condition: Any, what: str) -> None:
        await eventually(condition, within=TIMEOUT, what=what)


def _plain(value: Any) -> Any:
    """pygls hands unknown JSON objects back as namedtuples; compare them as plain data."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def write_turns(tmp_path: Path, turns: list[dict[str, Any]]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return path


def _client(editor_box: list[Editor]) -> LanguageClient:
    client = make_test_lsp_client()
    original = client.protocol.structure_message

    def recording(data: dict[str, Any]) -> Any:
        # Nested objects arrive here first and stay plain dicts; keep the exact JSON of our notification.
        if isinstance(data, dict) and data.get("method") == "acpBridge/sessionUpdate" and editor_box:
            editor_box[0].updates.append(copy.deepcopy(data["params"]))
        return original(data)

    client.protocol.structure_message = recording  # type: ignore[method-assign]

    @client.feature("acpBridge/sessionUpdate")
    def session_update(_ls: LanguageClient, _params: Any) -> None:
        return None

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(_ls: LanguageClient, params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        editor = editor_box[0]
        editor.asked.append(params)
        editor.begun_when_asked.append(
            [
                values[0].title
                for values in _ls.progress_reports.values()
                if values and isinstance(values[0], types.WorkDoneProgressBegin)
            ]
        )
        answer = editor.answers.pop(0) if editor.answers else None
        return types.MessageActionItem(title=answer) if answer is not None else None

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(
        _ls: LanguageClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        editor = editor_box[0]
        editor.edits.append(params)
        editor.disk_when_asked.append(
            {p.name: p.read_text() for p in editor.workspace.iterdir() if p.is_file()}
        )
        if editor.refuse_edits is not None:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason=editor.refuse_edits)
        # Apply to the buffer, and "save" it, as a user would before the next command.
        for uri, text_edits in (params.edit.changes or {}).items():
            path = Path(uri.removeprefix("file://"))
            path.write_text(_apply_text_edits(path.read_text(), text_edits))
        for change in params.edit.document_changes or ():
            if isinstance(change, types.CreateFile):
                Path(change.uri.removeprefix("file://")).touch()
            elif isinstance(change, types.TextDocumentEdit):
                path = Path(change.text_document.uri.removeprefix("file://"))
                path.write_text(_apply_text_edits(path.read_text(), change.edits))
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


@contextlib.asynccontextmanager
async def editor(
    tmp_path: Path,
    turns: list[dict[str, Any]],
    *,
    capabilities: types.ClientCapabilities = NEOVIM,
    options: dict[str, Any] | None = None,
    args: Sequence[str] = (),
    command: Sequence[str] = SERVER,
) -> AsyncIterator[Editor]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    box: list[Editor] = []
    client = _client(box)
    await client.start_io(*command, "--model", f"scripted:{write_turns(tmp_path, turns)}", *args)
    box.append(Editor(client, workspace))
    try:
        box[0].initialized = await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    capabilities=capabilities,
                    root_uri=(tmp_path / "elsewhere").as_uri(),
                    workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
                    initialization_options=options,
                )
            ),
            TIMEOUT,
        )
        yield box[0]
        # Whatever a test did, every acpBridge/sessionUpdate it received is a valid ACP notification.
        for params in box[0].updates:
            SessionNotification.model_validate(params)
    finally:
        await _stop(client)


async def _stop(client: LanguageClient) -> None:
    process = client._server
    if process is not None and process.returncode is None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 5)
        if process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 5)
            except TimeoutError:
                process.kill()
                await process.wait()
    await client.stop()


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}
