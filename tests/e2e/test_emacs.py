"""The Emacs recipes of docs/editors/emacs.md in Emacs 29+ (Debian's; bookworm's backports for 30.1:
scripts/editor-clients.sh), each read from the page at its marker, the checkout's `acp-bridge` on the
scripted model, through the scenario of tests/e2e/editor_clients.py (a read, an approved edit, a
rejected edit, a `bash` with output, the reply); then Emacs quits and no bridge may be left.

eglot (built into Emacs 29+) runs the LSP recipe: tests/clients/eglot_harness.el visits a text file,
`M-x eglot`, `M-x acp-bridge-prompt`, answers the minibuffer questions and reports what the user saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import editor_clients as ec

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAGE = ec.REPO / "docs" / "editors" / "emacs.md"
EGLOT_MARKER = "<!-- recipe: eglot"
MODEL_IN_RECIPE = '"openai:deepseek-chat"'


def run_emacs(scene: ec.Scene, init: str, harness: str, **env: str) -> dict[str, Any]:
    emacs = ec.emacs_29()
    (scene.root / "init.el").write_text(init, encoding="utf-8")
    report = ec.run_editor(
        [str(emacs), "-Q", "--batch", "-l", str(scene.root / "init.el"), "-l", str(ec.CLIENTS / harness)],
        scene,
        ec.editor_env(scene, **env),
    )
    scene.assert_no_bridge_left()
    assert report["ok"] is True, f"{report['error']}\n{report['messages']}\n{report['stderr'][-3000:]}"
    return report


def test_the_eglot_recipe_in_emacs(tmp_path: Path) -> None:
    scene = ec.new_scene(tmp_path)
    (scene.workspace / "AGENT.txt").write_text("Notes for the agent.\n", encoding="utf-8")
    recipe = ec.page_block(PAGE, EGLOT_MARKER, "elisp")
    assert recipe.count(MODEL_IN_RECIPE) == 1
    report = run_emacs(
        scene,
        recipe.replace(MODEL_IN_RECIPE, json.dumps(scene.model)),
        "eglot_harness.el",
        ACP_TEST_FILE="AGENT.txt",
    )
    assert int(report["version"].split(".")[0]) >= 29, report["version"]
    # The reply, in *acp-bridge*.
    reply = report["reply"]
    assert f"> {ec.PROMPT}" in reply and f"{ec.REPLY}\n(end_turn)" in reply, reply
    # The minibuffer questions: the bridge's three (the second edit rejected), and eglot's own confirmation
    # of the edit it applies (app.py is visited: the agent's read and edit opened it).
    questions = report["questions"]
    asked = [(q["answer"], q["prompt"]) for q in questions]
    assert [answer for answer, _ in asked] == ["Allow once", "y", "Reject", "Allow once"], asked
    assert "acp-bridge wants to `edit`:\nedit app.py (+1 −1 lines)" in asked[0][1], asked
    assert "Server wants to edit:" in asked[1][1] and "app.py (1 change)" in asked[1][1], asked
    assert "edit notes.md" in asked[2][1] and f"$ {ec.BASH_COMMAND}" in asked[3][1], asked
    assert questions[0]["choices"] == ["Allow once", "Always allow", "Reject", "Always reject"], questions
    # The approved edit is in app.py's buffer (unsaved: the file on disk is as it was), the rejected one
    # nowhere.
    assert report["app"] == ec.APP_EDITED, report["app"]
    assert (scene.workspace / ec.APPROVED_FILE).read_text(encoding="utf-8") == ec.APP
    assert report["notes"] in (None, ec.NOTES) and "REJECTED" not in json.dumps(report)
    # The mode line's progress: each call's title, the command's output, the rejection.
    progress = report["progress"]
    begun = [p["title"] for p in progress if p["kind"] == "begin"]
    assert begun == ["Read notes.md", "Edit app.py", "Edit notes.md", ec.BASH_COMMAND], progress
    assert any(p["message"] == ec.BASH_OUTPUT for p in progress), progress
    assert any(p["kind"] == "end" and "rejected" in str(p["message"]) for p in progress), progress
