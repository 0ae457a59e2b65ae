"""The offline scripted model: replays model steps from a JSON script (docs/models.md states the format).

A script is `{"turns": [{"steps": [{"thought"?, "text"?, "tool_calls"?: [{"id", "name", "arguments"}]}]}]}`.
It is parsed and validated once, at load time; a bad script is a `ModelError(kind="config")` that names
the JSON path at fault (`turns[0].steps[1].tool_calls[0].arguments: ...`). `stream_step` then replays the
step at `request.turn_index` / `request.step_index`: the loop owns that per-session cursor, so one backend
serves any number of sessions without them sharing state.

Optional fields (a script without them replays exactly as before), so tests and the demo can show usage
and compaction offline:
- `"context_window": N` (top level): the window the scripted model reports as its metadata (the model
  picker's `GET /models` counterpart), so usage gauges and the compaction threshold work;
- `"usage": "estimate"` (top level): every response reports token usage, estimated from what it was sent
  and what it answered (`base.estimate_tokens`: four characters a token);
- `"usage": {"input_tokens": N, "output_tokens": M, "cached_input_tokens"?: K}` (on a step): the usage that
  step reports, as a real endpoint would (it wins over the estimate);
- `"summaries": ["...", ...]` (top level): the answer to a compaction's summary request
  (`StepRequest.purpose == "summary"`): a session's first compaction gets the first, and so on, the last
  one repeating; without it a summary request gets a short generic summary. Summary requests never use
  up a turn of the script.
- `"subagents": {"<key>": {"steps": [...]}}` (top level): the steps a subagent (a `task` call's child
  loop, `StepRequest.subagent`) replays, by its own step index, from the entry whose key is the task's
  `description`, else its `prompt`; a child with no entry answers that it has none. A child's requests
  never use up a turn of the script, so concurrent children each replay their own entry.

Must not: keep a cursor, execute tools, read files after loading, or write to stdout.

The built-in demo (`DEMO_SCRIPT`, used by `scripted` with no PATH and by `acp-bridge demo`) expects the
workspace that `demo_workspace_files()` returns, at the session cwd:
- `notes.md`: project notes with a `TODO:` line asking for a friendlier greeting;
- `app.py`: a line `GREETING = "hello"` (the demo edits it to `GREETING = "hello, editor"`); running
  `python3 app.py` prints the greeting three times, 0.2 s apart, so live terminal output is visible.
Its second turn is one Code Mode program (`run_code`): it reads both files and, the greeting being fixed,
edits the TODO line of `notes.md` into a "Done:" line.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, StrictInt, StrictStr, ValidationError

from acp_bridge.models.base import (
    AssistantMessage,
    Message,
    ModelError,
    StepComplete,
    StepEvent,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
    estimate_tokens,
    parse_tool_arguments,
)
from acp_bridge.models.images import describe_image, images_of
from registry_core.json_values import copy_json

__all__ = [
    "DEMO_CHUNK_DELAY",
    "DEMO_SCRIPT",
    "Script",
    "ScriptStep",
    "ScriptToolCall",
    "ScriptTurn",
    "ScriptUsage",
    "ScriptedBackend",
    "demo_workspace_files",
    "load_script",
    "parse_script",
    "split_text",
]

# --- the script schema ---------------------------------------------------------------------------


def _check_arguments(value: object) -> dict[str, Any] | str:
    # A plain validator (not a `dict | str` union) so a wrong type gives one clear error at the field's
    # path instead of one error per union member.
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        # A string standing for a JSON object is that object; any other string stays raw, so the
        # registry fails the call with INVALID_ARGS exactly as it would for a live model's bad output.
        parsed = parse_tool_arguments(value)
        return dict(parsed) if isinstance(parsed, Mapping) else parsed
    raise ValueError(f"must be a JSON object or a string, not {_json_type_name(value)}")


class _Strict(BaseModel):
    # Unknown fields are rejected so a typo (`tool_call`, `argument`) fails loudly at load time instead of
    # silently producing a step that ends the turn.
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptToolCall(_Strict):
    id: Annotated[StrictStr, Field(min_length=1)]
    name: Annotated[StrictStr, Field(min_length=1)]
    arguments: Annotated[dict[str, Any] | str, PlainValidator(_check_arguments)]


_Count = Annotated[StrictInt, Field(ge=0)]


class ScriptUsage(_Strict):
    input_tokens: _Count
    output_tokens: _Count = 0
    cached_input_tokens: _Count = 0


class ScriptStep(_Strict):
    thought: StrictStr | None = None
    text: StrictStr | None = None
    tool_calls: tuple[ScriptToolCall, ...] = ()
    usage: ScriptUsage | None = None
    # Append a line describing every image the model was given so far (the prompt's and the tools'),
    # so a test sees what reached the model.
    describe_images: bool = False


class ScriptTurn(_Strict):
    steps: tuple[ScriptStep, ...]


class Script(_Strict):
    turns: tuple[ScriptTurn, ...]
    context_window: Annotated[StrictInt, Field(ge=1)] | None = None
    usage: Literal["estimate"] | None = None
    summaries: tuple[StrictStr, ...] = ()
    # A subagent's steps (the `task` tool's child), keyed by the task's description, or else its prompt.
    subagents: dict[StrictStr, ScriptTurn] = Field(default_factory=dict)


# How many validation problems one error message lists; the rest are counted.
_MAX_REPORTED_ERRORS: Final = 5


def parse_script(data: object, *, source: str = "<script>") -> Script:
    """Validate already-decoded JSON as a script.

    Returns the script. Raises `ModelError(kind="config")` whose message names `source` and the JSON path
    of each problem (at most five listed), including a tool-call id used twice: ids must be unique within
    a session, and every session replays the whole script.
    """
    try:
        script = Script.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_format_loc(err['loc'])}: {_describe(err)}" for err in exc.errors()]
        raise _script_error(source, problems) from None
    duplicates = _duplicate_ids(script.turns, "turns")
    for key, turn in script.subagents.items():
        duplicates += _duplicate_ids((turn,), f"subagents[{key!r}]")
    if duplicates:
        raise _script_error(source, duplicates)
    return script


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script file.

    Raises `ModelError(kind="config")` when the file is missing, unreadable, not UTF-8, not JSON (with
    line and column) or not a valid script (with the JSON path at fault).
    """
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelError(f"scripted model file not found: {file}", kind="config") from None
    except IsADirectoryError:
        raise ModelError(f"scripted model path is a directory, not a file: {file}", kind="config") from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"scripted model file {file} is not UTF-8: {exc}", kind="config") from None
    except OSError as exc:
        raise ModelError(f"cannot read scripted model file {file}: {exc.strerror}", kind="config") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(
            f"scripted model file {file} is not valid JSON: {exc.msg} "
            f"at line {exc.lineno} column {exc.colno}",
            kind="config",
            details={"path": str(file)},
        ) from None
    return parse_script(data, source=str(file))


def _script_error(source: str, problems: list[str]) -> ModelError:
    shown = "; ".join(problems[:_MAX_REPORTED_ERRORS])
    more = len(problems) - _MAX_REPORTED_ERRORS
    if more > 0:
        shown += f"; and {more} more"
    return ModelError(
        f"invalid scripted model script {source}: {shown} (format: docs/models.md, 'The scripted model')",
        kind="config",
        details={"source": source, "problems": problems},
    )


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


def _describe(err: Any) -> str:
    kind = err["type"]
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "string_type":
        return f"must be a string, not {_json_type_name(err['input'])}"
    if kind in ("tuple_type", "list_type"):
        return f"must be a list, not {_json_type_name(err['input'])}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a JSON object, not {_json_type_name(err['input'])}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":
        return str(err["ctx"]["error"])
    return str(err["msg"])


def _json_type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _duplicate_ids(turns: tuple[ScriptTurn, ...], name: str) -> list[str]:
    """Tool-call ids used twice in `turns` (the script's, or one subagent's: a child's calls are shown
    under ids of their own, so its ids need only be unique within its entry)."""
    first_seen: dict[str, str] = {}
    problems: list[str] = []
    for t, turn in enumerate(turns):
        for s, step in enumerate(turn.steps):
            for c, call in enumerate(step.tool_calls):
                turn_path = f"{name}[{t}]" if name == "turns" else name
                where = f"{turn_path}.steps[{s}].tool_calls[{c}].id"
                if call.id in first_seen:
                    problems.append(
                        f"{where}: duplicate id {call.id!r} (first at {first_seen[call.id]}); "
                        "ids must be unique within a session"
                    )
                else:
                    first_seen[call.id] = where
    return problems


# --- streaming -----------------------------------------------------------------------------------

# Text is cut into chunks of roughly this many characters, at word boundaries, so a client renders it as
# a stream rather than one block.
_CHUNK_MIN: Final = 16
_CHUNK_MAX: Final = 32
_PIECES = re.compile(r"\S+\s*|\s+")


def split_text(text: str) -> list[str]:
    """Cut `text` into chunks of at most 32 characters, mostly 16 or more, breaking after whitespace.

    Returns chunks whose concatenation is exactly `text` (no chunk is empty; `""` gives `[]`). A word
    longer than 32 characters is cut inside the word.
    """
    chunks: list[str] = []
    current = ""
    for match in _PIECES.finditer(text):
        piece = match.group()
        while len(piece) > _CHUNK_MAX:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(piece[:_CHUNK_MAX])
            piece = piece[_CHUNK_MAX:]
        if current and len(current) + len(piece) > _CHUNK_MAX:
            chunks.append(current)
            current = ""
        current += piece
        if len(current) >= _CHUNK_MIN:
            chunks.append(current)
            current = ""
    if current:
        chunks.append(current)
    return chunks


class ScriptedBackend:
    """Replays a validated `Script`. Stateless: the step comes from the request's indices."""

    def __init__(self, script: Script, *, name: str = "scripted", chunk_delay: float = 0.0) -> None:
        """`chunk_delay` (seconds) is slept between text chunks; 0 streams as fast as the loop consumes."""
        self._script = script
        self._name = name
        self._chunk_delay = chunk_delay

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptedBackend:
        """Load a script file (see `load_script` for the errors raised); named `scripted:PATH`."""
        return cls(load_script(path), name=f"scripted:{os.fspath(path)}")

    @classmethod
    def demo(cls) -> ScriptedBackend:
        """The built-in demo script, paced by `DEMO_CHUNK_DELAY` so a person sees the text stream."""
        return cls(
            parse_script(DEMO_SCRIPT, source="<demo>"), name="scripted:demo", chunk_delay=DEMO_CHUNK_DELAY
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def script(self) -> Script:
        return self._script

    @property
    def model(self) -> str:
        """The one model a script offers: itself."""
        return self._name

    async def list_models(self) -> list[Mapping[str, Any]]:
        """The script as the only model, with its `context_window` when the script gives one."""
        window = self._script.context_window
        return [{"id": self._name, **({"context_window": window} if window is not None else {})}]

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        """Yield the scripted step at (turn_index, step_index), ending with one `StepComplete`.

        Three cases: the step exists (thought chunks, text chunks, then its calls); the turn has no step
        left (a bare `StepComplete`, so the turn ends); the script has no turn left (one `TextDelta` saying
        so, then `StepComplete(script_exhausted=True)`). Raises `ModelError` for negative indices.
        """
        if request.purpose == "summary":
            async for event in self._summary(request):
                yield event
            return
        if request.subagent is not None:
            async for event in self._subagent_step(request):
                yield event
            return
        if request.turn_index < 0 or request.step_index < 0:
            raise ModelError(
                f"scripted model asked for turn {request.turn_index}, step {request.step_index}: "
                "indices start at 0"
            )
        turns = self._script.turns
        if request.turn_index >= len(turns):
            count = len(turns)
            yield TextDelta(
                f"The scripted model has no more turns (script has {count} turn{'' if count == 1 else 's'})."
            )
            yield StepComplete(script_exhausted=True)
            return
        steps = turns[request.turn_index].steps
        if request.step_index >= len(steps):
            yield StepComplete()
            return
        async for event in self._play(steps[request.step_index], request):
            yield event

    async def _subagent_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        """A subagent's step: from its entry in `subagents` (by description, else by its prompt, the first
        message it was sent), at its own step index."""
        entries = self._script.subagents
        entry = entries.get(request.subagent or "")
        if entry is None and request.messages:
            first = request.messages[0]
            entry = entries.get(first.text) if isinstance(first, UserMessage) else None
        if entry is None:
            yield TextDelta(f"The scripted model has no script for the subagent {request.subagent!r}.")
            yield StepComplete(finish_reason="stop")
            return
        if request.step_index >= len(entry.steps):
            yield StepComplete()
            return
        async for event in self._play(entry.steps[request.step_index], request):
            yield event

    async def _play(self, step: ScriptStep, request: StepRequest) -> AsyncIterator[StepEvent]:
        """One scripted step: its thought and text in chunks, then its calls and usage."""
        first = True
        for chunk in split_text(step.thought or ""):
            if not first:
                await self._pause()
            first = False
            yield ThoughtDelta(chunk)
        text = step.text or ""
        if step.describe_images:
            text += _images_line(request)
        for chunk in split_text(text):
            if not first:
                await self._pause()
            first = False
            yield TextDelta(chunk)
        calls = tuple(
            # A deep copy: the script is shared by every session, so no consumer may alias its dicts.
            ToolCallRequest(
                id=call.id,
                name=call.name,
                arguments=call.arguments if isinstance(call.arguments, str) else copy_json(call.arguments),
            )
            for call in step.tool_calls
        )
        yield StepComplete(
            tool_calls=calls,
            finish_reason="tool_calls" if step.tool_calls else "stop",
            usage=self._usage(request, lambda: _answer_text(step, calls), step.usage),
        )

    async def _summary(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        """A compaction's summary: the scripted one for this compaction (the last one repeating), else a
        generic one."""
        summaries = self._script.summaries
        if summaries:
            text = summaries[min(max(request.summary_index, 0), len(summaries) - 1)]
        else:
            sent = sum(len(_message_text(m)) for m in request.messages)
            text = f"(Scripted summary of {sent} characters of earlier conversation.)"
        for index, chunk in enumerate(split_text(text)):
            if index:
                await self._pause()
            yield TextDelta(chunk)
        yield StepComplete(finish_reason="stop", usage=self._usage(request, lambda: text, None))

    def _usage(
        self, request: StepRequest, answer: Callable[[], str], scripted: ScriptUsage | None
    ) -> Usage | None:
        """The step's scripted usage, else the estimate when the script asks for one, else none. `answer`
        builds the step's text only for an estimate: nobody measures it otherwise."""
        if scripted is not None:
            return Usage(
                input_tokens=scripted.input_tokens,
                output_tokens=scripted.output_tokens,
                total_tokens=scripted.input_tokens + scripted.output_tokens,
                cached_input_tokens=min(scripted.cached_input_tokens, scripted.input_tokens),
            )
        if self._script.usage != "estimate":
            return None
        sent = (request.system_prompt or "") + "".join(_message_text(m) for m in request.messages)
        sent += "".join(
            tool.name + tool.description + json.dumps(dict(tool.parameters)) for tool in request.tools
        )
        input_tokens, output_tokens = estimate_tokens(sent), estimate_tokens(answer())
        return Usage(
            input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
        )

    async def _pause(self) -> None:
        if self._chunk_delay > 0:
            await asyncio.sleep(self._chunk_delay)

    async def aclose(self) -> None:
        """Nothing to release: the script lives in memory."""


def _message_text(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        calls = "".join(call.name + str(call.arguments) for call in message.tool_calls)
        return (message.reasoning or "") + message.text + calls
    if isinstance(message, ToolResultMessage):
        return message.content
    return message.text


def _images_line(request: StepRequest) -> str:
    images = images_of(request.messages)
    if not images:
        return "\nI was given no images."
    return f"\nI was given {len(images)} image(s): " + "; ".join(describe_image(i) for i in images) + "."


# --- the built-in demo ---------------------------------------------------------------------------

# Seconds between streamed chunks in the demo: fast enough not to bore, slow enough to read as a stream.
DEMO_CHUNK_DELAY: Final = 0.02

_DEMO_NOTES = """\
# Project notes

- The app prints a greeting; run it with `python3 app.py`.
- TODO: make the greeting friendlier: it should say "hello, editor".
"""

_DEMO_APP = """\
\"\"\"A tiny app for the acp-bridge demo: prints its greeting a few times, slowly.\"\"\"

import time

GREETING = "hello"


def main() -> None:
    for step in range(1, 4):
        print(f"[{step}/3] {GREETING}", flush=True)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
"""


# The second turn's program (TypeScript, run by `run_code`): two reads at once, then one edit.
_DEMO_PROGRAM = """\
const [app, notes] = await Promise.all([
  read({ file_path: "app.py" }),
  read({ file_path: "notes.md" }),
]);
if (!app.lines.some((line) => line.includes('"hello, editor"'))) {
  return "app.py does not greet the editor yet: notes.md stays as it is";
}
const todo = notes.lines.find((line) => line.startsWith("- TODO:"));
if (todo === undefined) return "notes.md has no TODO left";
const done = '- Done: the greeting says "hello, editor".';
await edit({ file_path: "notes.md", old_string: todo, new_string: done });
return { done: todo };"""


def demo_workspace_files() -> dict[str, str]:
    """The demo workspace `DEMO_SCRIPT` expects: relative path → exact file content (a fresh dict)."""
    return {"notes.md": _DEMO_NOTES, "app.py": _DEMO_APP}


# The demo script in the public JSON format (it doubles as an example of that format).
DEMO_SCRIPT: Final[dict[str, Any]] = {
    "turns": [
        {
            "steps": [
                {
                    "thought": "The user wants the open items in this project handled. "
                    "The notes are the place to start.",
                    "text": "I'll start by reading the project notes.",
                    "tool_calls": [
                        {"id": "demo_read_notes", "name": "read", "arguments": {"file_path": "notes.md"}}
                    ],
                },
                {
                    "thought": "There is a TODO about the greeting. I should find every TODO and see which "
                    "Python files exist before changing anything.",
                    "text": "The notes have a TODO. Let me search for TODOs and list the Python files "
                    "at once.",
                    "tool_calls": [
                        {"id": "demo_grep_todo", "name": "grep", "arguments": {"pattern": "TODO"}},
                        {"id": "demo_glob_py", "name": "glob", "arguments": {"pattern": "**/*.py"}},
                    ],
                },
                {
                    "text": "The greeting lives in app.py. I'll make it friendlier.",
                    "tool_calls": [
                        {
                            "id": "demo_edit_app",
                            "name": "edit",
                            "arguments": {
                                "file_path": "app.py",
                                "old_string": 'GREETING = "hello"',
                                "new_string": 'GREETING = "hello, editor"',
                            },
                        }
                    ],
                },
                {
                    "text": "Now let me run the app to check the new greeting.",
                    "tool_calls": [
                        {
                            "id": "demo_run_app",
                            "name": "bash",
                            "arguments": {
                                "command": "python3 app.py",
                                "description": "Run the app and print its greeting",
                            },
                        }
                    ],
                },
                {
                    "text": "It prints the new greeting. I'll record where things stand.",
                    "tool_calls": [
                        {
                            "id": "demo_plan",
                            "name": "todo_write",
                            "arguments": {
                                "todos": [
                                    {
                                        "content": "Make the greeting in app.py friendlier",
                                        "status": "completed",
                                        "priority": "high",
                                    },
                                    {
                                        "content": "Run app.py to check the new greeting",
                                        "status": "completed",
                                        "priority": "medium",
                                    },
                                    {
                                        "content": "Remove the TODO from notes.md",
                                        "status": "pending",
                                        "priority": "low",
                                    },
                                ]
                            },
                        }
                    ],
                },
                {
                    "text": 'Done. app.py now greets with "hello, editor", and running it prints the new '
                    "greeting. One item is left on the plan: removing the TODO from notes.md.",
                },
            ]
        },
        {
            "steps": [
                {
                    "text": "One program can do that: it reads app.py and notes.md, and marks the TODO "
                    "done only if the greeting really changed. Each of its calls shows up on its own.",
                    "tool_calls": [
                        {
                            "id": "demo_tidy_notes",
                            "name": "run_code",
                            "arguments": {
                                "description": "Check app.py, then tidy notes.md",
                                "code": _DEMO_PROGRAM,
                            },
                        }
                    ],
                },
                {"text": "The TODO in notes.md is marked done; nothing is left on the plan."},
            ]
        },
    ]
}


def _answer_text(step: ScriptStep, calls: tuple[ToolCallRequest, ...]) -> str:
    """What a step answers, as the token estimate counts it."""
    return (step.thought or "") + (step.text or "") + "".join(c.name + str(c.arguments) for c in calls)
