"""Background commands under the permission policy: `bash` with `run_in_background` is decided exactly as the
same command in the foreground (same scope, same rules, same questions), and `bash_output` / `kill_bash`,
which only read or stop the session's own commands, run without asking, plan mode included."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge.permissions.policy import ModeId, PolicyConfig, SessionPermissions


def _perms(tmp_path: Path, mode: ModeId = "default") -> SessionPermissions:
    return SessionPermissions(PolicyConfig(mode=mode), str(tmp_path), (str(tmp_path),))


def test_a_background_command_has_the_foreground_command_s_scope_and_rules(tmp_path: Path) -> None:
    perms = _perms(tmp_path)
    foreground = {"command": "npm test"}
    background = {"command": "npm test", "run_in_background": True}
    assert perms.scope_for("bash", background) == perms.scope_for("bash", foreground)
    assert perms.decide("bash", background).kind == "ask"

    perms.remember(perms.scope_for("bash", foreground), allow=True)
    assert perms.decide("bash", background).kind == "allow"  # the same command runs
    assert perms.decide("bash", {"command": "npm install x", "run_in_background": True}).kind == "ask"
    outside = {"command": "make", "workdir": "/etc", "run_in_background": True}
    assert perms.decide("bash", outside).kind == "ask"


@pytest.mark.parametrize("mode", ["default", "plan"])
@pytest.mark.parametrize("tool", ["bash_output", "kill_bash"])
def test_reading_and_stopping_the_session_s_own_commands_asks_nothing(
    tmp_path: Path, mode: ModeId, tool: str
) -> None:
    assert _perms(tmp_path, mode).decide(tool, {"bash_id": "b1"}).kind == "allow"


def test_plan_mode_starts_no_background_command(tmp_path: Path) -> None:
    decision = _perms(tmp_path, "plan").decide("bash", {"command": "make", "run_in_background": True})
    assert decision.kind == "deny"
