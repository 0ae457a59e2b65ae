"""The LSP face's undo: `acpBridge.checkpoints` lists the current session's turns, `acpBridge.rewind` puts
the files of a turn back, `acpBridge.revertFile` one file of one call, as the ACP face's extension
methods do (a real `acp-bridge lsp` over pipes, a real bash command in the workspace)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.lsp_editor import call, editor


async def test_checkpoints_rewind_and_revert_file_over_lsp(tmp_path: Path) -> None:
    change = call("s1", "bash", command="sed -i 's/one/ONE/' a.txt && echo x > new.txt")
    turns = [{"steps": [{"tool_calls": [change]}, {"text": "done"}]}]
    async with editor(tmp_path, turns, args=("--allow-tool", "bash")) as ed:
        (ed.workspace / "a.txt").write_text("one\n")
        await ed.prompt("change things")
        diffs = [c for c in ed.final("s1").get("content") or [] if c.get("type") == "diff"]
        assert [d["path"] for d in diffs] == [str(ed.workspace / "a.txt"), str(ed.workspace / "new.txt")]
        listed = await ed.command("acpBridge.checkpoints")
        assert [(t["turn"], t["prompt"], t["files"]) for t in listed["turns"]] == [(1, "change things", 2)]

        reverted = await ed.command("acpBridge.revertFile", "s1", str(ed.workspace / "a.txt"))
        assert reverted["restored"] == [{"path": str(ed.workspace / "a.txt"), "action": "restored"}]
        assert (ed.workspace / "a.txt").read_text() == "one\n"
        assert (ed.workspace / "new.txt").exists()

        rewound = await ed.command("acpBridge.rewind", 1)
        assert rewound["status"] == "restored"
        assert rewound["restored"] == [{"path": str(ed.workspace / "new.txt"), "action": "removed"}]
        assert sorted(p.name for p in ed.workspace.iterdir()) == ["a.txt"]

        with pytest.raises(JsonRpcException) as bad:
            await ed.command("acpBridge.rewind", 0)
        assert bad.value.code == -32602
