"""The core's `ClientChannel` over a language-server connection: what the agent does, shown with LSP means.

- `send_update`: every update leaves verbatim as `acpBridge/sessionUpdate` with the exact params the ACP
  face sends as `session/update` (`{sessionId, update}`), so a rich client can draw the same cards; then
  `derive.UpdateView` turns it into `window/logMessage` lines, one work-done progress per tool call
  (`window/workDoneProgress/create`, then `$/progress` begin/report/end) and follow-along
  `window/showDocument` (takeFocus false, the line selected) — each only when the client supports it.
- `request_permission`: `window/showMessageRequest` (Warning) with Allow once / Always allow / Reject /
  Always reject; a dismissed request rejects. It goes out after the call's progress `begin` (which waits
  for the client to create the token; at most `BEGIN_WAIT` s), so the editor shows which call the
  question is about first. While it is open, the call's progress says it waits for the user's approval.
  Without the capability the call is denied with a reason the user sees (a `window/showMessage`, the
  failed progress, the card) and the model gets as the tool error.
- `read_text_file` / `write_text_file` (offered only when edits go through the editor): reads see the
  editor's synced buffers (and edits we applied that the editor has not saved yet); writes become one
  `workspace/applyEdit` of the changed lines (a change annotation with `needsConfirmation` where
  supported). A refused edit raises with the editor's reason, so the call fails with it.

Must not: block or raise in `send_update`, touch sessions or turns (the core owns them), or import pygls
(the transport is the `LspTransport` seam; lsprotocol types are only data).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from lsprotocol import types

from acp_bridge.client.channel import (
    ClientCapabilities,
    PermissionOption,
    PermissionOutcome,
    ToolCallUpdate,
    Update,
)
from acp_bridge.common.errors import METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, ConnectionClosed, RemoteError

from ..mapping import TextChunk, display_path, read_update
from .approval import build_question, describe_call
from .derive import Action, Begin, End, Log, Report, Show, UpdateView
from .edits import EditSupport, workspace_edit
from .options import EditorFeatures, LspOptions

log = logging.getLogger(__name__)

SESSION_UPDATE: Final = "acpBridge/sessionUpdate"
REQUEST_FAILED: Final = -32803  # LSP's RequestFailed: the editor refused what we asked
# How long an approval question waits for its call's progress to begin (the client creating the token).
BEGIN_WAIT: Final = 2.0


class LspTransport(Protocol):
    """The LSP connection as the channel needs it. Params are lsprotocol types (or plain JSON for our own
    notification); results come back structured the same way."""

    @property
    def closed(self) -> bool: ...

    def notify(self, method: str, params: Any) -> None:
        """Send a notification (dropped when closed; never raises)."""
        ...

    async def request(self, method: str, params: Any) -> Any:
        """Send a request, await its result. Raises RemoteError (an error answer) or ConnectionClosed."""
        ...

    def backlog(self) -> int: ...

    async def drain(self) -> None: ...


@dataclass(frozen=True, slots=True)
class OpenDocument:
    """A document the editor keeps in sync with us: its URI as the editor spells it, text and version."""

    uri: str
    text: str
    version: int | None


class EditorDocuments(Protocol):
    """The documents the editor has synced to us (`textDocument/didOpen` / `didChange`)."""

    def find(self, path: str) -> OpenDocument | None: ...

    def uri_for(self, path: str) -> str: ...

    def units(self, text: str) -> int:
        """`text`'s length in the client's position units (UTF-16 code units unless negotiated)."""
        ...


@dataclass(slots=True)
class _Progress:
    """One call's work-done progress: values wait in `queue` until the client created the token."""

    token: str
    ready: bool = False
    queue: list[Any] = field(default_factory=list)
    # Set once the client answered the token's creation (either way): the `begin` went out, or never will.
    created: asyncio.Event = field(default_factory=asyncio.Event)


Signature = tuple[int, int] | None  # (mtime_ns, size) of a file on disk, None when it does not exist


def _disk_signature(path: str) -> Signature:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


def _read_disk(path: str) -> tuple[str | None, bool]:
    """(text, exists) of a file as the editor would load it; text None when it is not UTF-8 text."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None, False
    except OSError:
        return None, True
    try:
        return data.decode("utf-8-sig"), True
    except UnicodeDecodeError:
        return None, True


class LspChannel:
    """`ClientChannel` for one LSP client. Create it in `initialize`, on the event loop's thread."""

    def __init__(
        self,
        transport: LspTransport,
        documents: EditorDocuments,
        *,
        options: LspOptions,
        features: EditorFeatures,
        cwd_of: Callable[[str], str | None] = lambda _sid: None,
        client_name: str | None = None,
    ) -> None:
        self._transport = transport
        self._documents = documents
        self._options = options
        self._features = features
        self._cwd_of = cwd_of
        self.edits_in_editor = options.apply_edits_in_editor and features.apply_edit
        self.asks = (
            options.show_message_request
            if options.show_message_request is not None
            else features.show_message_request
        )
        self._capabilities = ClientCapabilities(
            terminal_meta=options.terminal_output,
            # Reads see the editor's buffers only when writes go there too: reading a buffer and writing
            # its text to disk would save the user's unsaved changes behind their back.
            fs_read=self.edits_in_editor,
            fs_write=self.edits_in_editor,
            client_name=client_name,
        )
        self.view = UpdateView(
            progress=features.work_done_progress, follow=options.follow and features.show_document
        )
        self._progress: dict[str, _Progress] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._replies: dict[str, list[str]] = {}  # session → the agent's text of the running prompt
        self._reply_open: set[str] = set()  # sessions whose last reply paragraph is still being streamed
        # Text we applied to files the editor has not synced to us, with the disk signature at that time:
        # until the file changes on disk (the user saved), the editor's buffer holds this text.
        self._applied: dict[str, tuple[str, Signature]] = {}
        self._edit_ids = itertools.count(1)

    # --- ClientChannel ----------------------------------------------------------------------------

    @property
    def capabilities(self) -> ClientCapabilities:
        return self._capabilities

    def send_update(self, session_id: str, update: Update) -> None:
        if self._transport.closed:
            return
        self._transport.notify(SESSION_UPDATE, {"sessionId": session_id, "update": update})
        self._collect_reply(session_id, update)
        try:
            actions = self.view.feed(session_id, update)
        except Exception:  # send_update must never raise into the turn; the derived view is extra
            log.exception("could not derive editor actions from a %s update", update.get("sessionUpdate"))
            return
        self.perform(actions)

    async def drain(self) -> None:
        await self._transport.drain()

    def backlog(self) -> int:
        return self._transport.backlog()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionOutcome:
        if not self.asks:
            reason = (
                "this editor cannot show approval prompts (no window.showMessage capability): allow the "
                "tool with --allow-tool NAME or --mode accept_edits (inside the workspace; a path outside "
                "it or a file that makes commands run code still needs a prompt, or --mode full_access), "
                "or set initializationOptions.showMessageRequest to true if the editor answers them anyway"
            )
            # The user hears it now, not only through the card and the agent's next words.
            self.show_message(f"acp-bridge denied {describe_call(tool_call)}: {reason}")
            raise RemoteError(METHOD_NOT_FOUND, reason)
        question = build_question(tool_call, options, self._cwd_of(session_id))
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=question.message,
            actions=[types.MessageActionItem(title=title) for title in question.actions],
        )
        call_id = tool_call["toolCallId"]
        await self._progress_begun(session_id, call_id)
        self.perform(self.view.asking(session_id, call_id))
        try:
            answer = await self._transport.request(types.WINDOW_SHOW_MESSAGE_REQUEST, params)
        finally:
            self.view.answered(session_id, call_id)
        if answer is not None and not isinstance(answer, types.MessageActionItem):
            raise ValueError(f"window/showMessageRequest answered with {answer!r}")
        return question.outcome(answer.title if answer is not None else None)

    async def ask_question(self, session_id: str, question: str, options: list[str]) -> str | None:
        """`ask_user` as `window/showMessageRequest`: the question, one action per option. None when the
        user dismissed it, or when the question allows only a free-text answer (LSP has no text input)."""
        if not self.asks:
            raise RemoteError(METHOD_NOT_FOUND, "this editor cannot show questions (no showMessageRequest)")
        if not options:
            self.show_message(f"acp-bridge asks: {question} (answer in your next prompt)")
            return None
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=f"acp-bridge asks: {question}",
            actions=[types.MessageActionItem(title=option) for option in options],
        )
        answer = await self._transport.request(types.WINDOW_SHOW_MESSAGE_REQUEST, params)
        if answer is None:
            return None
        if not isinstance(answer, types.MessageActionItem) or answer.title not in options:
            raise ValueError(f"window/showMessageRequest answered with {answer!r}")
        return str(answer.title)

    async def read_text_file(self, session_id: str, path: str) -> str:
        document = self._documents.find(path)
        if document is not None:
            return document.text
        applied = self._applied.get(path)
        if applied is not None:
            text, signature = applied
            if _disk_signature(path) == signature:
                return text
            del self._applied[path]  # saved (or changed) on disk since: the disk is the truth again
        raise RemoteError(RESOURCE_NOT_FOUND, f"{path} is not open in the editor")

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        """Write through `workspace/applyEdit` (or to disk when the editor cannot take this write). Raises
        RemoteError when the editor refuses (its reason in the message), ConnectionClosed, OSError."""
        if not self.edits_in_editor:
            await self._write_disk(path, content)
            return
        shown = display_path(path, self._cwd_of(session_id) or os.path.dirname(path))
        document = self._documents.find(path)
        if document is not None:
            old: str | None = document.text
            uri, version = document.uri, document.version
        else:
            uri, version = self._documents.uri_for(path), None
            applied = self._applied.get(path)
            if applied is not None and _disk_signature(path) == applied[1]:
                old = applied[0]
            else:
                old, exists = await asyncio.to_thread(_read_disk, path)
                if exists and old is None:
                    log.info("%s is not UTF-8 text the editor could patch; writing it on disk", path)
                    await self._write_disk(path, content)
                    return
        if old is None and not self._features.create_files:
            log.info("the editor cannot create files through workspace edits; creating %s on disk", path)
            await self._write_disk(path, content)
            return
        verb = "create" if old is None else "edit"
        annotation_id = f"acp-bridge-{next(self._edit_ids)}"
        annotation = types.ChangeAnnotation(
            label=f"acp-bridge: {verb} {shown}",
            needs_confirmation=True,
            description="Proposed by the agent: review it before accepting.",
        )
        support = EditSupport(self._features.document_changes, self._features.change_annotations)
        edit = workspace_edit(
            uri,
            old,
            content,
            self._documents.units,
            support,
            version=version,
            annotation=annotation,
            annotation_id=annotation_id,
        )
        if edit is None:
            return  # the editor already has exactly this text
        signature = _disk_signature(path)
        result = await self._transport.request(
            types.WORKSPACE_APPLY_EDIT, types.ApplyWorkspaceEditParams(edit=edit, label=annotation.label)
        )
        if not isinstance(result, types.ApplyWorkspaceEditResult) or not result.applied:
            reason = getattr(result, "failure_reason", None) or "no reason given"
            raise RemoteError(REQUEST_FAILED, f"the editor did not apply the {verb} of {shown}: {reason}")
        if document is None:
            self._applied[path] = (content, signature)

    # --- the face's own calls ---------------------------------------------------------------------

    def begin_reply(self, session_id: str) -> None:
        """Start collecting the agent's text of one prompt (see `take_reply`)."""
        self._replies[session_id] = []
        self._reply_open.discard(session_id)

    def take_reply(self, session_id: str) -> str:
        """The agent's text since `begin_reply`, one paragraph per model step; also flushes the
        unfinished last log line."""
        self.perform(self.view.flush_text(session_id))
        self._reply_open.discard(session_id)
        return "\n\n".join(part.strip("\n") for part in self._replies.pop(session_id, []) if part.strip())

    def _collect_reply(self, session_id: str, update: Update) -> None:
        reply = self._replies.get(session_id)
        if reply is None:
            return
        event = read_update(update)
        if not isinstance(event, TextChunk) or event.kind != "agent_message_chunk":
            # Anything else between two texts (a tool call, a thought) separates the model's steps.
            self._reply_open.discard(session_id)
            return
        text = event.text
        if text is None:
            return
        if session_id in self._reply_open:
            reply[-1] += text
        else:
            reply.append(text)
            self._reply_open.add(session_id)

    def log_message(self, text: str, level: types.MessageType = types.MessageType.Info) -> None:
        self._transport.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(type=level, message=text))

    def show_message(self, text: str, level: types.MessageType = types.MessageType.Warning) -> None:
        self._transport.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(type=level, message=text))

    def end_progress(self, message: str, session_id: str | None = None) -> None:
        """End every open progress (of one session, or all), e.g. when the turn or the connection ends."""
        self.perform(self.view.end_all(message, session_id))

    async def settled(self) -> None:
        """Wait until no background request (progress creation, showDocument) is in flight."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def aclose(self) -> None:
        """Stop background requests (progress creation, showDocument); nothing is sent afterwards."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)

    # --- actions ----------------------------------------------------------------------------------

    def perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Log):
                level = types.MessageType.Info if action.level == "info" else types.MessageType.Log
                self.log_message(action.text, level)
            elif isinstance(action, Begin):
                self._begin(action)
            elif isinstance(action, Report):
                self._progress_value(
                    action.token, types.WorkDoneProgressReport(message=action.message), last=False
                )
            elif isinstance(action, End):
                self._progress_value(
                    action.token, types.WorkDoneProgressEnd(message=action.message), last=True
                )
            elif isinstance(action, Show):
                self._spawn(self._show(action))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _begin(self, action: Begin) -> None:
        progress = _Progress(action.token)
        progress.queue.append(types.WorkDoneProgressBegin(title=action.title, message=action.message))
        self._progress[action.token] = progress
        self._spawn(self._create(progress))

    async def _create(self, progress: _Progress) -> None:
        try:
            await self._transport.request(
                types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                types.WorkDoneProgressCreateParams(token=progress.token),
            )
        except (RemoteError, ConnectionClosed) as exc:
            # The spec forbids using a token the client refused; the card and the log still show the call.
            log.debug("progress %s not created: %s", progress.token, exc)
            self._progress.pop(progress.token, None)
        else:
            progress.ready = True
            queued, progress.queue = progress.queue, []
            for value in queued:
                self._send_progress(progress.token, value)
            if queued and isinstance(queued[-1], types.WorkDoneProgressEnd):
                self._progress.pop(progress.token, None)
        finally:
            progress.created.set()

    async def _progress_begun(self, session_id: str, call_id: str) -> None:
        """Wait (at most `BEGIN_WAIT` s) until the call's progress `begin` was sent or will never be."""
        token = self.view.token_of(session_id, call_id)
        progress = self._progress.get(token) if token is not None else None
        if progress is None or progress.ready:
            return
        try:
            await asyncio.wait_for(progress.created.wait(), BEGIN_WAIT)
        except TimeoutError:
            log.debug("progress %s not created within %.1f s; asking anyway", progress.token, BEGIN_WAIT)

    def _progress_value(self, token: str, value: Any, *, last: bool) -> None:
        progress = self._progress.get(token)
        if progress is None:
            return  # never created (refused, or no progress support), or already ended
        if not progress.ready:
            progress.queue.append(value)
            return
        self._send_progress(token, value)
        if last:
            self._progress.pop(token, None)

    def _send_progress(self, token: str, value: Any) -> None:
        self._transport.notify(types.PROGRESS, types.ProgressParams(token=token, value=value))

    async def _show(self, action: Show) -> None:
        if not await asyncio.to_thread(os.path.isfile, action.path):
            return  # e.g. a file the call was about to create but did not
        line = max(0, (action.line or 1) - 1)  # ACP lines are 1-based, LSP's 0-based
        params = types.ShowDocumentParams(
            uri=self._documents.uri_for(action.path),
            take_focus=False,
            selection=types.Range(
                start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0)
            ),
        )
        try:
            await self._transport.request(types.WINDOW_SHOW_DOCUMENT, params)
        except (RemoteError, ConnectionClosed) as exc:
            log.debug("showDocument %s failed: %s", action.path, exc)

    async def _write_disk(self, path: str, content: str) -> None:
        # The presenters' own disk writer: keeps the encoding, BOM and mode, writes atomically.
        from presenters.fs_access import DiskFileAccess

        self._applied.pop(path, None)
        await DiskFileAccess().write_text(path, content)
