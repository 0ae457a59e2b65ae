"""The agentic.nvim recipe of docs/editors/neovim.md, run for real: Neovim 0.11 (PyPI) with agentic.nvim at
its pinned commit (tests/clients/plugins.txt, fetched by scripts/client-plugins.sh), the recipe read from the
page at its marker, the checkout's `acp-bridge serve` on the scripted model. tests/clients/agentic_harness.lua
opens the chat, sends the prompt with <C-s>, answers the permission buttons with their number keys and
reports the chat buffer. The scenario (tests/e2e/editor_clients.py): a read, an approved edit, a rejected
edit, a `bash` with output, the reply; then Neovim quits and no bridge may be left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import editor_clients as ec

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAGE = ec.REPO / "docs" / "editors" / "neovim.md"
MARKER = "<!-- recipe: agentic.nvim"
COMMAND_IN_RECIPE = 'command = "uvx",'
ARGS_IN_RECIPE = 'args = { "acp-bridge-agent==0.1.0", "serve", "--model", "openai:deepseek-chat" },'


def test_agentic_nvim_recipe_shows_the_turn(tmp_path: Path) -> None:
    nvim = ec.neovim_011()
    agentic = ec.plugin("agentic.nvim")
    scene = ec.new_scene(tmp_path)
    recipe = ec.page_block(PAGE, MARKER, "lua")
    assert recipe.count(COMMAND_IN_RECIPE) == 1 and recipe.count(ARGS_IN_RECIPE) == 1
    args = "args = { " + ", ".join(json.dumps(a) for a in ("serve", "--model", scene.model)) + " },"
    recipe = recipe.replace(COMMAND_IN_RECIPE, 'command = "acp-bridge",').replace(ARGS_IN_RECIPE, args)
    init = tmp_path / "init.lua"
    init.write_text(f"vim.opt.rtp:prepend({json.dumps(str(agentic))})\n" + recipe, encoding="utf-8")
    report = ec.run_editor(
        [str(nvim), "--headless", "-n", "-i", "NONE", "--noplugin", "-u", str(init),
         "-c", f"luafile {ec.CLIENTS / 'agentic_harness.lua'}"],
        scene,
        ec.editor_env(scene),
    )  # fmt: skip
    scene.assert_no_bridge_left()
    chat = report["chat"]
    assert report["ok"], f"{report['error']}\n{chat}\n{report['messages']}\n{report['stderr'][-2000:]}"
    assert ec.PROMPT in chat, chat
    # Each streamed chunk of the reply is a paragraph of its own at this commit: the words are all there.
    assert " ".join(ec.REPLY.split()) in " ".join(chat.split()), chat
    answers = report["answers"]
    assert [a["reject"] for a in answers] == [False, True, False], answers
    assert answers[0]["question"].startswith("edit(Edit app.py)"), answers
    assert answers[1]["question"].startswith("edit(Edit notes.md)"), answers
    assert answers[2]["question"].startswith(f"execute({ec.BASH_COMMAND})"), answers
    # A tool call is a block: its kind and title, what it returned, its status.
    assert "read(Read notes.md)" in chat and "hello from the notes file" in chat, chat
    assert "edit(Edit notes.md)\nThe user rejected this `edit` call.\nfailed" in chat, chat
    # The command's output, in a console block under the command.
    assert f"$ {ec.BASH_COMMAND}\n{ec.BASH_OUTPUT}\n```\ncompleted" in chat, chat
    assert (scene.workspace / ec.APPROVED_FILE).read_text(encoding="utf-8") == ec.APP_EDITED
    assert (scene.workspace / ec.REJECTED_FILE).read_text(encoding="utf-8") == ec.NOTES
