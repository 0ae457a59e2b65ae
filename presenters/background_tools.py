"""`bash_output` and `kill_bash`: what the model does with a command `bash` started in the background.

- `bash_output(bash_id)`: the command's output not returned by an earlier `bash_output` (at most
  `background.READ_LIMIT` bytes of it: its start and end, with how much was left out and the file holding
  it all), whether it still runs, and how it ended (exit code, signal, who stopped it). Once it reported
  an end, the model is not told of that end again.
- `kill_bash(bash_id)`: stops the command, every process of it (SIGTERM, then SIGKILL), and waits until it
  ended; a command that already ended is reported as it ended.

Both act on the session's own background commands only (`agent.services["background"]`), so approving
them approves nothing new: `bash_output` only reads, `kill_bash` only stops what the session started.

presentation_meta (both): {"bash_id", "command", "running", "exit_code", "signal", "stopped_by"}; and for
`bash_output` also {"output", "omitted", "lost", "full_output_path"}.

Must not: reach another session's commands, or return unbounded output.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from registry_core import (
    ContentText,
    GenericCallView,
    GenericResultView,
    Output,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolRunContext,
    define_tool,
)

from .background import BackgroundCommand, BackgroundCommands, background_of, short_command
from .cards import failure_card, meta_field
from .output_capture import OutputRead

TITLE_COMMAND_CHARS = 60


class BashIdArgs(BaseModel):
    bash_id: str = Field(min_length=1, description="The id of the bash call that started the command.")


class BackgroundValue(BaseModel):
    bash_id: str
    command: str
    running: bool
    exit_code: int | None
    signal: str | None
    stopped_by: str | None


class OutputValue(BackgroundValue):
    output: str = Field(description="The new output (its start and end, when long).")
    omitted: int = Field(description="Bytes of the new output left out between its start and end.")
    lost: int = Field(description="Bytes of the new output no longer kept anywhere.")
    full_output_path: str | None


def _registry(ctx: ToolRunContext) -> BackgroundCommands:
    background = background_of(ctx.agent)
    if background is None:
        raise ToolError("This session keeps no background commands.", code="UNAVAILABLE")
    return background


def _fields(command: BackgroundCommand) -> dict[str, Any]:
    return {
        "bash_id": command.bash_id,
        "command": command.command,
        "running": command.running,
        "exit_code": command.exit_code,
        "signal": command.signal,
        "stopped_by": command.stopped_by,
    }


def _status(value: BackgroundValue) -> str:
    if value.running:
        return "Status: running."
    if value.stopped_by is not None:
        return f"Status: stopped by {value.stopped_by}" + (
            f" (signal {value.signal})." if value.signal else "."
        )
    if value.signal is not None:
        return f"Status: killed by signal {value.signal}."
    return f"Status: exited with code {value.exit_code}."


def _output_text(chunk: OutputRead, path: str | None) -> str:
    text = chunk.text
    if chunk.omitted:
        where = f"the full output is in {path}" if path is not None else "it is not kept"
        text += f"\n\n[... {chunk.omitted} bytes omitted; {where} ...]\n\n{chunk.rest}"
    if chunk.lost:
        text = f"[{chunk.lost} bytes of output could not be kept (the disk refused them)]\n{text}"
    return text


def _render_output(_args: BashIdArgs, value: OutputValue) -> str:
    output = value.output or "(no new output)"
    return f"{output}{'' if output.endswith(chr(10)) else chr(10)}{_status(value)}"


def _render_kill(_args: BashIdArgs, value: BackgroundValue) -> str:
    if value.stopped_by == "kill_bash":
        return f"Stopped background command {value.bash_id} (`{short_command(value.command)}`)."
    return f"Background command {value.bash_id} had already ended. {_status(value)}"


def _title(verb: str, result: ToolResult, bash_id: str) -> str:
    command = meta_field(result.meta, "command", str)
    return f"{verb} `{short_command(command, TITLE_COMMAND_CHARS)}`" if command else f"{verb} {bash_id}"


def bash_output_tool() -> ToolDefinition:
    """The `bash_output` tool."""

    async def execute(args: BashIdArgs, ctx: ToolRunContext) -> OutputValue:
        command, chunk = _registry(ctx).read(args.bash_id)
        path = command.capture.spill_path
        return OutputValue(
            **_fields(command),
            output=_output_text(chunk, path),
            omitted=chunk.omitted,
            lost=chunk.lost,
            full_output_path=path,
        )

    def present_call(args: BashIdArgs) -> GenericCallView:
        return GenericCallView(title=f"Output of {args.bash_id}", kind="read")

    def present_result(args: BashIdArgs, result: ToolResult) -> GenericResultView:
        if result.is_error:
            return failure_card(f"Output of {args.bash_id}", result)
        output = meta_field(result.meta, "output", str) or "(no new output)"
        value = BackgroundValue.model_validate(result.meta)
        text = f"```console\n{output.rstrip(chr(10))}\n```\n{_status(value)}"
        return GenericResultView(
            title=_title("Output of", result, args.bash_id), content=(ContentText(text=text),)
        )

    return define_tool(
        name="bash_output",
        description=(
            "Read the new output of a command started with bash run_in_background: what it printed since "
            "the last bash_output for it (its start and end when long, with the file holding all of it), "
            "and whether it still runs or how it ended (exit code). Returns at once."
        ),
        parameters=BashIdArgs,
        output=Output(
            type=OutputValue, render=_render_output, presentation_meta=lambda _a, v: v.model_dump()
        ),
        execute=execute,
        concurrency_safe=True,
        present_call=present_call,
        present_result=present_result,
    )


def kill_bash_tool() -> ToolDefinition:
    """The `kill_bash` tool."""

    async def execute(args: BashIdArgs, ctx: ToolRunContext) -> BackgroundValue:
        command = await _registry(ctx).kill(args.bash_id, "kill_bash")
        command.told = True  # the model asked for its end: no note about it
        return BackgroundValue(**_fields(command))

    def present_call(args: BashIdArgs) -> GenericCallView:
        return GenericCallView(title=f"Stop {args.bash_id}", kind="execute")

    def present_result(args: BashIdArgs, result: ToolResult) -> GenericResultView:
        if result.is_error:
            return failure_card(f"Stop {args.bash_id}", result)
        value = BackgroundValue.model_validate(result.meta)
        return GenericResultView(
            title=_title("Stop", result, args.bash_id),
            content=(ContentText(text=_render_kill(args, value)),),
        )

    return define_tool(
        name="kill_bash",
        description=(
            "Stop a command started with bash run_in_background, and every process it started. Use "
            "bash_output first if you still need its last output."
        ),
        parameters=BashIdArgs,
        output=Output(
            type=BackgroundValue, render=_render_kill, presentation_meta=lambda _a, v: v.model_dump()
        ),
        execute=execute,
        concurrency_safe=False,
        present_call=present_call,
        present_result=present_result,
    )
