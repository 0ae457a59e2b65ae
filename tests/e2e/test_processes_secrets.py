"""The bridge's API keys never reach a tool: a bridge started with all three key variables set runs `env`
and reads `/proc/$PPID/environ` (its own initial environment) through `bash`, and no key value shows up,
while the model still gets the key it was started with."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import REPO
from tests.support.fake_openai_server import FakeOpenAIServer, chat

pytestmark = pytest.mark.slow

SNOOP = 'echo "PPID=$PPID"; env; echo ---; tr "\\0" "\\n" < /proc/$PPID/environ'


async def test_no_tool_sees_the_keys_in_its_environment_or_the_bridges(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    keys = {
        name: f"sk-{name.lower()}-{uuid.uuid4().hex}"
        for name in ("ACP_BRIDGE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")
    }
    call = {"id": "call_1", "name": "bash", "arguments": {"command": SNOOP}}
    server.enqueue(chat(tool_calls=[call]), chat(text="Seen."))
    bridge = await bridges(
        "--base-url", server.base_url, "--allow-tool", "bash", model="openai:fake-model", env=keys
    )
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "look around") == "end_turn"

    final = bridge.call_updates("call_1")[-1]
    assert final["status"] == "completed"
    output = final["rawOutput"]["output"]
    environment, _, initial = output.partition("---\n")
    assert f"PPID={bridge.proc.pid}\n" in environment  # the block read is the bridge's own
    assert "PATH=" in environment and "PATH=" in initial  # both dumps really happened
    for name, value in keys.items():
        assert value not in output, f"{name} leaked to the command"
        assert name not in output
    seen_from_outside = psutil.Process(bridge.proc.pid).environ()  # /proc/<pid>/environ, parsed
    assert not set(keys) & set(seen_from_outside)
    assert not set(keys.values()) & set(seen_from_outside.values())
    # Read once at start-up, the key still authenticates every request.
    auth = [request.headers["authorization"] for request in server.requests]
    assert auth == [f"Bearer {keys['ACP_BRIDGE_API_KEY']}"] * 2


_CLAIM = """
import json, os
from acp_bridge.common.credentials import api_key_from_environment, claim_secrets
claim_secrets()
with open("/proc/self/environ", "rb") as f:
    initial = dict(e.split(b"=", 1) for e in f.read().split(b"\\0") if b"=" in e)
print(json.dumps({
    "initial": {k.decode(): v.decode() for k, v in initial.items()},
    "environ": dict(os.environ),
    "key": api_key_from_environment(),
}))
"""


def test_claiming_blanks_exactly_the_secret_entries_of_the_initial_environment(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(REPO),
        "BEFORE": "kept-1",
        "DEEPSEEK_API_KEY": "sk-deep",
        "MIDDLE": "kept-2",
        "OPENAI_API_KEY": "sk-open",
        "NOT_A_DEEPSEEK_API_KEY": "kept-3",  # a longer name containing a secret's name
        "ACP_BRIDGE_API_KEY": "",  # empty counts as unset, and is taken out all the same
        "AFTER": "kept-4",
    }
    done = subprocess.run(
        [sys.executable, "-c", _CLAIM], env=env, capture_output=True, cwd=tmp_path, timeout=30, check=True
    )
    seen = json.loads(done.stdout)
    kept = {"BEFORE": "kept-1", "MIDDLE": "kept-2", "NOT_A_DEEPSEEK_API_KEY": "kept-3", "AFTER": "kept-4"}
    for where in ("initial", "environ"):
        assert kept.items() <= seen[where].items(), where
        assert not {"DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ACP_BRIDGE_API_KEY"} & set(seen[where]), where
    assert seen["key"] == ["sk-deep", "DEEPSEEK_API_KEY"]  # the order of precedence survives
