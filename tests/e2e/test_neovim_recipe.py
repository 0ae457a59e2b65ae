"""The Neovim 0.7–0.9 recipe of docs/editors/neovim.md, run for real: Neovim (Debian's 0.7.2 here) starts
headless with the recipe as its init file, read from that page at its marker so the two cannot drift apart;
a file of a temporary workspace is opened, which starts the bridge's LSP face (the checkout's `acp-bridge`,
on a scripted model); `:Agent <prompt>` is sent, and the reply must reach the user: the floating window and
the message history; once Neovim quits, no bridge is left. The only change to the recipe is the model: the
script instead of `openai:deepseek-chat`, so the test needs no network and no key.

The Neovim 0.10+ recipe runs below in Neovim 0.11, through the whole scenario of
tests/e2e/editor_clients.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from . import editor_clients
from .conftest import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAGE = REPO / "docs" / "editors" / "neovim.md"
MARKER = "<!-- recipe: neovim-0.7"
MODEL_IN_RECIPE = '"openai:deepseek-chat"'
REPLY = "The notes say hello from the notes file."
NVIM_TIMEOUT_S = 120

# Test-side driver, run after the recipe: open a file (the recipe's BufEnter starts the bridge), wait for the
# client, send `:Agent`, wait for the reply window, then write what the user can see to $ACP_TEST_OUT.
HARNESS = r"""
local function floats()
  local texts = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
      table.insert(texts, table.concat(lines, "\n"))
    end
  end
  return texts
end
local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.ACP_TEST_FILE))
  assert(vim.wait(60000, function() return #vim.lsp.get_active_clients() > 0 end, 20),
         "the bridge's LSP client never initialized")
  vim.cmd("Agent " .. vim.env.ACP_TEST_PROMPT)
  assert(vim.wait(60000, function() return #floats() > 0 end, 20), "no reply window appeared")
end)
local report = { ok = ok, error = (not ok) and tostring(err) or vim.NIL,
                 messages = vim.fn.execute("messages"), floats = floats(),
                 version = vim.version() }
local out = io.open(vim.env.ACP_TEST_OUT, "w")
out:write(vim.fn.json_encode(report))
out:close()
vim.cmd("qall!")
"""


def page_recipe() -> str:
    page = PAGE.read_text(encoding="utf-8")
    at = page.index(MARKER)
    match = re.compile(r"```lua\n(.*?)\n```", re.DOTALL).search(page, at)
    assert match is not None, "no lua block after the recipe marker"
    return match.group(1)


def test_the_recipe_uses_only_apis_neovim_0_7_has() -> None:
    recipe = page_recipe()
    assert "vim.lsp.start_client(" in recipe and "vim.lsp.buf_attach_client(" in recipe
    # 0.8+ and 0.10+ additions that 0.7 lacks (vim.fs, vim.lsp.start, get_clients, client:method).
    for newer in ("vim.fs.", "vim.lsp.start(", "vim.lsp.get_clients", "client:request", "vim.lsp.status"):
        assert newer not in recipe, newer
    assert recipe.count(MODEL_IN_RECIPE) == 1


def test_the_neovim_recipe_shows_the_agents_reply_to_the_user(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("Neovim is not installed (scripts/system-deps.sh installs Debian's neovim)")
    bridge = Path(sys.executable).parent / "acp-bridge"
    if not bridge.exists():
        pytest.skip(f"no acp-bridge command beside {sys.executable} (`make setup` installs it)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("# Notes\n\nhello from the notes file\n", encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {
                        "steps": [
                            {
                                "tool_calls": [
                                    {"id": "r1", "name": "read", "arguments": {"file_path": "notes.md"}}
                                ]
                            },
                            {"text": REPLY},
                        ]
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    recipe = page_recipe().replace(MODEL_IN_RECIPE, json.dumps(f"scripted:{script}"))
    (tmp_path / "init.lua").write_text(recipe, encoding="utf-8")
    (tmp_path / "harness.lua").write_text(HARNESS, encoding="utf-8")
    report_path = tmp_path / "report.json"
    env = {
        **os.environ,
        "PATH": os.pathsep.join((str(bridge.parent), os.environ.get("PATH", ""))),
        "PYTHONPATH": str(REPO),
        # Nothing of the user's Neovim set-up (plugins, shada, logs) takes part.
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "ACP_TEST_FILE": str(workspace / "notes.md"),
        "ACP_TEST_PROMPT": "what do the notes say?",
        "ACP_TEST_OUT": str(report_path),
    }
    done = subprocess.run(
        [nvim, "--headless", "-n", "-i", "NONE", "--noplugin", "-u", str(tmp_path / "init.lua"),
         "-c", f"luafile {tmp_path / 'harness.lua'}"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=NVIM_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    # Neovim has quit: the bridge it started (its command line names the script) must be gone too.
    editor_clients.Scene(root=tmp_path, workspace=workspace, script=script).assert_no_bridge_left()
    assert report_path.exists(), f"Neovim wrote no report (exit {done.returncode}): {done.stderr[-2000:]}"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["ok"], f"{report['error']}\n{report['messages']}\n{done.stderr[-2000:]}"
    assert any(REPLY in text for text in report["floats"]), report["floats"]
    assert f"acp-bridge: {REPLY} [end_turn]" in report["messages"], report["messages"]
    assert "acp-bridge: Read notes.md" in report["messages"], report["messages"]


# The Neovim 0.10+ recipe of the same page, run in Neovim 0.11 (from PyPI: scripts/editor-clients.sh) through
# the whole scenario of tests/e2e/editor_clients.py: a read, an approved edit, a rejected edit, a command
# with output, the reply; the approvals answered as a vim.ui.select plugin answers them
# (tests/clients/nvim_lsp_harness.lua).
MARKER_010 = "<!-- recipe: neovim-0.10"


def test_the_neovim_0_10_recipe_uses_what_neovim_0_10_has() -> None:
    recipe = editor_clients.page_block(PAGE, MARKER_010, "lua")
    assert "vim.lsp.start(" in recipe and "vim.lsp.get_clients(" in recipe
    assert "vim.lsp.start_client(" not in recipe  # deprecated in 0.11
    assert recipe.count(MODEL_IN_RECIPE) == 1


def test_the_neovim_0_10_recipe_in_neovim_0_11(tmp_path: Path) -> None:
    nvim = editor_clients.neovim_011()
    scene = editor_clients.new_scene(tmp_path)
    recipe = editor_clients.page_block(PAGE, MARKER_010, "lua").replace(
        MODEL_IN_RECIPE, json.dumps(scene.model)
    )
    (tmp_path / "init.lua").write_text(recipe, encoding="utf-8")
    env = editor_clients.editor_env(scene, ACP_TEST_FILE=editor_clients.APPROVED_FILE)
    harness = editor_clients.CLIENTS / "nvim_lsp_harness.lua"
    report = editor_clients.run_editor(
        [str(nvim), "--headless", "-n", "-i", "NONE", "--noplugin", "-u", str(tmp_path / "init.lua"),
         "-c", f"luafile {harness}"],
        scene,
        env,
    )  # fmt: skip
    scene.assert_no_bridge_left()
    assert report["ok"], f"{report['error']}\n{report['messages']}\n{report['stderr'][-2000:]}"
    assert str(report["version"]).startswith("0.11."), report["version"]
    # The reply, in the float.
    assert any(editor_clients.REPLY in text and "_end_turn_" in text for text in report["floats"]), report
    # Asked twice for edits (the rejected one names its file) and once for the command.
    prompts = report["prompts"]
    assert [p["answer"] for p in prompts] == ["Allow once", "Reject", "Allow once"], prompts
    assert editor_clients.APPROVED_FILE in prompts[0]["prompt"], prompts
    assert editor_clients.REJECTED_FILE in prompts[1]["prompt"], prompts
    assert "printf" in prompts[2]["prompt"], prompts
    assert {"Allow once", "Always allow", "Reject", "Always reject"} <= set(prompts[0]["choices"]), prompts
    # The approved edit is in the buffer (the editor's, unsaved); the rejected one is nowhere.
    assert report["buffers"][editor_clients.APPROVED_FILE] + "\n" == editor_clients.APP_EDITED, report[
        "buffers"
    ]
    assert "REJECTED" not in report["buffers"].get(editor_clients.REJECTED_FILE, ""), report["buffers"]
    assert (scene.workspace / editor_clients.REJECTED_FILE).read_text() == editor_clients.NOTES
    # Each tool call was a progress (the statusline's text): the command's output among them.
    progress = report["progress"]
    titles = [p.get("title") or "" for p in progress if p["kind"] == "begin"]
    assert any("notes.md" in t for t in titles) and any("printf" in t for t in titles), progress
    assert any(editor_clients.BASH_OUTPUT in (p.get("message") or "") for p in progress), progress
    assert any(p["kind"] == "end" and "rejected" in (p.get("message") or "") for p in progress), progress
