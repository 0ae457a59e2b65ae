"""The LSP face's config options: `acpBridge.setConfigOption` lists and changes the current session's
options (mode, model, thinking effort) for LSP-only editors, and the change is announced as a
`config_option_update` in `acpBridge/sessionUpdate`, as on the ACP face."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.lsp_editor import editor


async def test_set_config_option_lists_and_changes_the_sessions_options(tmp_path: Path) -> None:
    async with editor(tmp_path, [{"steps": [{"text": "ok"}]}]) as ed:
        listed = await ed.command("acpBridge.setConfigOption")
        assert [o["id"] for o in listed["configOptions"]] == ["mode", "model"]
        changed = await ed.command("acpBridge.setConfigOption", "mode", "plan")
        assert changed["sessionId"] == listed["sessionId"]
        mode = next(o for o in changed["configOptions"] if o["id"] == "mode")
        assert mode["currentValue"] == "plan"

        def announced() -> list[str]:
            return [
                next(o["currentValue"] for o in p["update"]["configOptions"] if o["id"] == "mode")
                for p in ed.updates
                if p["update"]["sessionUpdate"] == "config_option_update"
            ]

        await ed.wait_for(lambda: announced() == ["plan"], "the config_option_update")
        with pytest.raises(JsonRpcException) as caught:
            await ed.command("acpBridge.setConfigOption", "model", "not-offered")
        assert caught.value.code == -32602
