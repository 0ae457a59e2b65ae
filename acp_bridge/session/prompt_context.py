"""What a session tells the model besides the conversation: its system prompt, kept per session, and the
instructions of the folders the agent works in.

`SessionContext` (one per `Session`, `session.context`):
- when the session is made, a worker thread probes the environment (`environment.probe_environment`:
  git runs there) and reads the instructions files of the system prompt (`instructions.session_files`);
  the session's first turn waits for it (`run_turn`), so nothing of it blocks the event loop;
- `system_prompt()` gives each turn its prompt (`system_prompt.compose`): the built-in part is built once,
  at the first turn, for the tools the session has then; the files are re-checked in a worker thread
  before every later turn (a stat each) and re-read only when one changed, which the user is shown and
  the prompt says. So the text stays byte-identical from step to step and turn to turn until a file
  changes;
- `client` is the client's `systemPrompt` (`client_prompt`), set by the face on new/load/resume/fork;
- the first turn shows the user what was loaded: an ACP `notice` when the client advertised
  `session.notices` (its `_meta.acpBridge.instructions` lists the files as data,
  `mapping.instructions_notice`, which the VS Code extension shows as links), else an agent message.

Folder instructions: `add_folder_instructions` is a post-execute listener on the registry (every call,
nested Code Mode calls included). The folders a call works in (`touched_folders`) are those between a root
and a path its arguments name: a file tool's `file_path` (its folder), the folders a `grep`/`glob`
searches, a command's `workdir`, any tool's `path`. Each such folder's instructions file not given yet is
given to the model, outermost first, as a message after the step's results (`ContextMessage`, which the
turn logs as a `DeferredContext`, so a reloaded session has it too), inside a `<project-instructions
path=... applies-to=...>` element, and the user is told. It is given again only when it changed since; a
reopened session first looks in its history for the files it was given. A folder looked in during a turn
is not looked in again before the next turn (so a step of many calls in one folder costs one thread hop).
The folder files of a session share one `MAX_TOTAL_BYTES` budget; past it, a file is named for the model
to read itself. A command that `cd`s into a folder does not count (its text is not parsed), nor do the
files a search finds.

Must not: block the event loop (disk and git work runs in worker threads); change the system prompt
between the steps of a turn; give the model a file outside the session's roots but the user's own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from acp_bridge import mapping
from acp_bridge.client.channel import SessionPlace, Update
from acp_bridge.models import Message, UserMessage
from acp_bridge.session import instructions
from acp_bridge.session.client_prompt import ClientSystemPrompt
from acp_bridge.session.environment import Environment, probe_environment
from acp_bridge.session.instructions import MAX_TOTAL_BYTES, InstructionFile, Stamp
from acp_bridge.session.system_prompt import CODE_MODE_ONLY, MCP, build, compose, template_text
from presenters import glob as glob_tool
from presenters import grep as grep_tool
from presenters.paths import resolve
from registry_core import ContextMessage, TextBlock, ToolExecution, ToolExecutionResult, ToolScope
from registry_core.policy import PostNext, PostToolDecision

log = logging.getLogger(__name__)

# `agent.services` key of a session's `SessionContext` (read by `add_folder_instructions`).
INSTRUCTIONS_SERVICE = "acpBridge.instructions"
# The element a folder's file reaches the model in; a reopened session finds the ones it was given by it.
FOLDER_TAG = "project-instructions"
_PATH_KEYS = ("file_path", "path", "workdir")

T = TypeVar("T")


class ContextHost(SessionPlace, Protocol):
    """What the context needs of its session (`session.Session` is one)."""

    @property
    def scope(self) -> ToolScope: ...

    @property
    def history(self) -> list[Message]: ...

    @property
    def mcp(self) -> object | None: ...

    def model_schemas(self) -> list[dict[str, Any]]: ...

    def send(self, update: Update) -> None: ...


class PromptTaker(Protocol):
    """A turn: the system prompt it sends with each step."""

    system_prompt: str


def _start(roots: Sequence[str]) -> tuple[Environment, tuple[InstructionFile, ...]]:
    """The worker thread's part of a session's start: the environment, the template, the files."""
    template_text()  # read here, off the loop (cached for the process)
    return probe_environment(roots), instructions.session_files(roots)


class SessionContext:
    """One session's system prompt and folder instructions (see the module's docstring). `client`: the
    client's `systemPrompt`, which the face sets after making the session."""

    def __init__(self, host: ContextHost) -> None:
        self.host = host
        self.client: ClientSystemPrompt | None = None
        self._starting: asyncio.Future[tuple[Environment, tuple[InstructionFile, ...]]] | None = None
        self._built_in: str | None = None
        self._files: tuple[InstructionFile, ...] = ()
        self._changed: tuple[str, ...] = ()
        # Folder files given to the model: path → the stamp it had then; None until the history was read.
        self._given: dict[str, Stamp | None] | None = None
        self._folder_bytes = 0
        # Folders looked in during the current turn (forgotten when the next one starts).
        self._settled: set[str] = set()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # made outside an event loop (a unit test): the first turn starts it
        self._starting = asyncio.ensure_future(asyncio.to_thread(_start, host.roots))
        # A session closed before its first turn never awaits it: its outcome is collected here.
        self._starting.add_done_callback(_collect)

    async def run_turn(self, turn: PromptTaker, work: Coroutine[Any, Any, T]) -> T:
        """Give `turn` this turn's system prompt, then run `work` (the turn's run)."""
        try:
            turn.system_prompt = await self.system_prompt()
        except BaseException:
            work.close()  # never started: closed, so it is not reported as never awaited
            raise
        return await work

    async def system_prompt(self) -> str:
        """The system prompt of the next turn (see the module's docstring)."""
        roots = self.host.roots
        self._settled.clear()  # a folder's file made or changed since the last turn is seen now
        if self._built_in is None:
            starting = self._starting or asyncio.ensure_future(asyncio.to_thread(_start, roots))
            self._starting = None  # should it fail, the next turn tries again
            environment, files = await starting
            self._built_in = build(environment, self._features())
            self._files = files
            if files:
                self._tell("Project instructions loaded", [_loaded_line(f) for f in files], ("loaded", files))
        else:
            now = await asyncio.to_thread(instructions.session_stamps, roots)
            if now != instructions.stamps(self._files):
                files = await asyncio.to_thread(instructions.session_files, roots)
                changed = instructions.changes(self._files, files)
                self._files = files
                if changed:
                    self._changed = tuple(changed)
                    lines = [f"{line}: re-read for this turn" for line in changed]
                    self._tell("Project instructions changed", lines, ("changed", files))
        return compose(self._built_in, self.client, self._files, self._changed)

    def _features(self) -> set[str]:
        """The tools the session has, and `mcp` / `code-mode-only` (`system_prompt.build`'s names)."""
        every = {schema["name"] for schema in self.host.scope.schemas()}
        offered = {schema["name"] for schema in self.host.model_schemas()}
        features = set(every)
        if offered == {"run_code"} and len(every) > 1:
            features.add(CODE_MODE_ONLY)
            features.discard("task")  # a program does not start subagents (presenters/run_code.py)
        if self.host.mcp is not None:
            features.add(MCP)
        return features

    def _tell(
        self,
        title: str,
        lines: Sequence[str],
        report: tuple[Literal["loaded", "changed", "added"], Sequence[InstructionFile]],
        *,
        mid_turn: bool = False,
    ) -> None:
        """Show the user a notice (or, for a client without notices, an agent message); the notice lists
        the files of `report` as data too (`mapping.instructions_notice`)."""
        description = "\n".join(f"- {line}" for line in lines)
        if self.host.channel.capabilities.notices:
            event, files = report
            entries = [(f.path, f.name, f.scope, f.skipped) for f in files]
            self.host.send(mapping.instructions_notice(title, description, event, entries))
        else:
            lead = "\n\n" if mid_turn else ""
            self.host.send(mapping.agent_message_chunk(f"{lead}_{title}:_\n{description}\n\n"))

    # --- folder instructions ------------------------------------------------------------------------

    async def folder_instructions(self, name: str, arguments: object) -> tuple[ContextMessage, ...]:
        """The messages that give the model the instructions of the folders this call works in, not given
        yet (or changed since); the user is told of each."""
        roots = self.host.roots
        # A file directly in a root (the common case) is in no folder to look in, and a folder looked in
        # during this turn is not looked in again before the next: then there is no thread hop.
        touched = touched_folders(name, arguments, self.host.cwd, roots)
        folders = [folder for folder in touched if folder not in self._settled]
        if not folders:
            return ()
        seen = self._seen_in_history() if self._given is None else ()
        budget = MAX_TOTAL_BYTES - self._folder_bytes
        given = dict(self._given or {})
        seeded, found = await asyncio.to_thread(_folder_work, folders, roots, seen, given, budget)
        self._settled.update(folders)
        if self._given is None:
            self._given = seeded
        fresh = [f for f in found if f.path not in self._given or self._given[f.path] != f.stamp]
        if not fresh:
            return ()
        for file in fresh:
            self._given[file.path] = file.stamp
            self._folder_bytes += len(file.text.encode())
        self._tell(
            "Folder instructions added",
            [f"`{f.path}`, for work in `{instructions.display(f.folder or '', roots)}`" for f in fresh],
            ("added", fresh),
            mid_turn=True,
        )
        return tuple(
            ContextMessage((TextBlock(folder_element(f, roots)),), source="instructions") for f in fresh
        )

    def _seen_in_history(self) -> tuple[str, ...]:
        """The folder files a reopened session's history already gave the model."""
        marker = f'<{FOLDER_TAG} path="'
        seen: list[str] = []
        for message in self.host.history:
            if isinstance(message, UserMessage) and marker in message.text:
                for piece in message.text.split(marker)[1:]:
                    seen.append(piece.partition('"')[0])
        return tuple(seen)


def _collect(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("taking the session's environment failed: %r", future.exception())


def _folder_work(
    folders: Sequence[str],
    roots: Sequence[str],
    seen: Sequence[str],
    given: dict[str, Stamp | None],
    budget: int,
) -> tuple[dict[str, Stamp | None], list[InstructionFile]]:
    """In a worker thread: stamp the files a history already gave (as they are now), then find the files
    of `folders` that are not given."""
    for path in seen:
        given.setdefault(path, instructions.stamp_of(path))
    return given, instructions.nested_files(folders, roots, given, budget)


def touched_folders(name: str, arguments: object, cwd: str, roots: Sequence[str]) -> list[str]:
    """The folders below the roots a call works in (see the module's docstring), outermost first:
    every folder between a root and a path its arguments name, that path included unless it names a
    file (`file_path`). Lexical: what is no folder has no instructions file to find."""
    if not isinstance(arguments, Mapping):
        return []
    named: list[tuple[str, bool]] = []
    try:
        if name in ("glob", "grep"):
            search = glob_tool.searched_paths if name == "glob" else grep_tool.searched_paths
            named = [(path, True) for path in search(arguments, cwd)]
        else:
            for key in _PATH_KEYS:
                value = arguments.get(key)
                if isinstance(value, str) and value and "\x00" not in value:
                    named.append((resolve(value, cwd), key != "file_path"))
    except ValueError:  # a name no file can have; the call itself fails for it
        return []
    folders: list[str] = []
    for path, itself in named:
        for folder in instructions.folders_between(path, roots, itself=itself):
            if folder not in folders:
                folders.append(folder)
    return sorted(folders, key=lambda folder: folder.count(os.sep))


def folder_element(file: InstructionFile, roots: Sequence[str]) -> str:
    """A folder's file as the model gets it, in a message of its own."""
    folder = file.folder or ""
    where = instructions.display(folder, roots)
    head = f'<{FOLDER_TAG} path="{file.path}" applies-to="{folder} and below">'
    if file.skipped is not None:
        return (
            f"{head}\nThe folder `{where}` has instructions in `{file.path}`, not included here: "
            f"{file.skipped}. Read the file before working there.\n</{FOLDER_TAG}>"
        )
    lead = (
        f"You are working in `{where}`, which has its own instructions ({file.name}). Follow them for work "
        "in that folder and below it; there they win over the project's."
    )
    return f"{head}\n{lead}\n\n{file.text}\n</{FOLDER_TAG}>"


def _loaded_line(file: InstructionFile) -> str:
    line = f"`{file.path}`"
    if file.scope == "user":
        line += " (yours, for every project)"
    elif file.alternative:
        line += f" (no AGENTS.md there, so its {file.name} is used)"
    if file.skipped is not None:
        return line + f": not read, {file.skipped}"
    if file.truncated:
        line += f": cut to its first {instructions.MAX_FILE_BYTES // 1024} KiB of {file.size:,} bytes"
    return line


async def add_folder_instructions(
    execution: ToolExecution, result: ToolExecutionResult, next_: PostNext
) -> PostToolDecision:
    """The registry's post-execute listener (see the module's docstring): adds the instructions of the
    folders the call worked in to its result's contexts."""
    decision = await next_()
    agent = execution.agent
    context = agent.services.get(INSTRUCTIONS_SERVICE) if agent is not None else None
    if not isinstance(context, SessionContext):
        return decision
    try:
        extra = await context.folder_instructions(execution.name, execution.arguments)
    except Exception:  # never fail a call for its context
        log.exception("session %s: reading folder instructions failed", context.host.id)
        return decision
    if not extra:
        return decision
    return dataclasses.replace(decision, additional_contexts=decision.additional_contexts + extra)
