"""The CodeCompanion recipe of docs/editors/neovim.md, run for real: Neovim 0.11 (PyPI, via
scripts/editor-clients.sh) with CodeCompanion and plenary.nvim at their pinned commits
(tests/clients/plugins.txt, fetched by scripts/client-plugins.sh), the recipe read from the page at its
marker, the checkout's `acp-bridge serve` on the scripted model. tests/clients/codecompanion_harness.lua opens
the chat, sends the prompt, answers the approvals with the chat's own keys and reports what the chat buffer
shows. The scenario (tests/e2e/editor_clients.py): a read, an approved edit, a rejected edit, a `bash`
with output, the reply; then Neovim quits and no bridge may be left.

The recipe's only changes are the ones its page tells a user with the command installed (`acp-bridge` for
`uvx acp-bridge-agent==VERSION`) and the model (the script instead of `openai:deepseek-chat`). With
`verbose_output` off (the adapter's default) the same run shows what CodeCompanion hides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import editor_clients as ec

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAGE = ec.REPO / "docs" / "editors" / "neovim.md"
MARKER = "<!-- recipe: codecompanion"
COMMAND_IN_RECIPE = '{ "uvx", "acp-bridge-agent==0.1.0", "serve", "--model", "openai:deepseek-chat" }'
VERBOSE_IN_RECIPE = "opts = { verbose_output = true },"
SUCCESS, FAILURE = "CodeCompanionChatToolSuccessIcon", "CodeCompanionChatToolFailureIcon"


def recipe(model: str, *, verbose: bool) -> str:
    block = ec.page_block(PAGE, MARKER, "lua")
    assert block.count(COMMAND_IN_RECIPE) == 1 and block.count(VERBOSE_IN_RECIPE) == 1
    command = "{ " + ", ".join(json.dumps(arg) for arg in ("acp-bridge", "serve", "--model", model)) + " }"
    block = block.replace(COMMAND_IN_RECIPE, command)
    return block if verbose else block.replace(VERBOSE_IN_RECIPE, "")


def run_codecompanion(tmp_path: Path, *, verbose: bool) -> tuple[ec.Scene, dict[str, Any]]:
    nvim = ec.neovim_011()
    codecompanion, plenary = ec.plugin("codecompanion.nvim"), ec.plugin("plenary.nvim")
    scene = ec.new_scene(tmp_path)
    init = tmp_path / "init.lua"
    init.write_text(
        f"vim.opt.rtp:prepend({json.dumps(str(plenary))})\n"
        f"vim.opt.rtp:prepend({json.dumps(str(codecompanion))})\n" + recipe(scene.model, verbose=verbose),
        encoding="utf-8",
    )
    report = ec.run_editor(
        [str(nvim), "--headless", "-n", "-i", "NONE", "--noplugin", "-u", str(init),
         "-c", f"luafile {ec.CLIENTS / 'codecompanion_harness.lua'}"],
        scene,
        ec.editor_env(scene),
    )  # fmt: skip
    scene.assert_no_bridge_left()
    assert report["ok"], (
        f"{report['error']}\n{report['chat']}\n{report['messages']}\n{report['stderr'][-2000:]}"
    )
    return scene, report


def status_of(report: dict[str, Any], line_start: str) -> list[str]:
    """The status icons drawn beside the chat lines that start with `line_start`."""
    return [mark["highlight"] for mark in report["marks"] if mark["line"].startswith(line_start)]


def assert_the_common_view(scene: ec.Scene, report: dict[str, Any]) -> str:
    chat: str = report["chat"]
    assert str(report["version"]).startswith("0.11."), report["version"]
    assert ec.PROMPT in chat and ec.REPLY in chat and "Reading the notes first." in chat, chat
    # The read, as one line with a success icon.
    assert status_of(report, "Read: notes.md") == [SUCCESS], report["marks"]
    # Two edits asked with their diff in the chat, the first accepted, the second rejected; a command asked.
    answers = report["answers"]
    assert [a["key"] for a in answers] == ["g2", "g3", "g2"], answers
    assert (
        "Proposed edits for `app.py`" in answers[0]["question"] and "+    return 42" in answers[0]["question"]
    )
    assert "Proposed edits for `notes.md`" in answers[1]["question"] and "+REJECTED" in answers[1]["question"]
    assert f"Execute: {ec.BASH_COMMAND}" in answers[2]["question"], answers[2]
    assert chat.count("You selected: Accept") == 2 and chat.count("You selected: Reject") == 1, chat
    # The rejected edit is marked failed; the files: the accepted edit on disk, the rejected one nowhere.
    assert FAILURE in status_of(report, "Edit: notes.md"), report["marks"]
    # app.py is open in a buffer: CodeCompanion writes the new text into the buffer and saves it, and its
    # split of the text ending in a newline leaves an empty last line, saved as one more blank line (the
    # page says so; a file not open in a buffer is written as sent).
    assert (scene.workspace / ec.APPROVED_FILE).read_text(encoding="utf-8") == ec.APP_EDITED + "\n"
    assert (scene.workspace / ec.REJECTED_FILE).read_text(encoding="utf-8") == ec.NOTES
    assert SUCCESS in status_of(report, f"Execute: {ec.BASH_COMMAND}"), report["marks"]
    return chat


def test_codecompanion_recipe_shows_the_turn_and_command_output(tmp_path: Path) -> None:
    scene, report = run_codecompanion(tmp_path, verbose=True)
    chat = assert_the_common_view(scene, report)
    # verbose_output: the read's text, the edit's size and the command's output on the tool lines.
    assert "Read: notes.md — " in chat and "hello from the notes file" in chat, chat
    assert "Edited app.py" in chat, chat
    command_lines = [line for line in chat.splitlines() if line.startswith(f"Execute: {ec.BASH_COMMAND} — ")]
    assert command_lines and ec.BASH_OUTPUT in command_lines[-1], chat


def test_without_verbose_output_codecompanion_hides_command_output(tmp_path: Path) -> None:
    scene, report = run_codecompanion(tmp_path, verbose=False)
    chat = assert_the_common_view(scene, report)
    # One line a call, nothing of what it returned: no output, no file text.
    assert ec.BASH_OUTPUT not in chat, chat
    assert "Edit: app.py" in chat and "Edited app.py" not in chat, chat
