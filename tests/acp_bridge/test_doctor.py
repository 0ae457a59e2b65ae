"""`acp-bridge doctor` and `acp-bridge --version` as real subprocesses, each in an environment the test
controls completely: a PATH of one temporary folder (holding only the programs a test puts there), a fake
HOME and XDG directories, no API key unless a test sets one. The key check talks to the local
OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_bridge import __version__
from acp_bridge.common.credentials import store_key
from tests.support.bridge_harness import REPO
from tests.support.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.slow

SECRET = "sk-doctor-secret-0123456789"
DEEPSEEK = "https://api.deepseek.com"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    return home


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": str(home / "bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "PYTHONPATH": str(REPO),
        **extra,
    }


def _doctor(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_bridge", "doctor", *args],
        env=_env(home, **env),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _rows(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    assert done.stdout.strip(), done.stderr
    return {row["item"]: row for row in json.loads(done.stdout)["checks"]}


def _link(home: Path, program: str) -> None:
    found = shutil.which(program)
    if found is None:
        pytest.skip(f"{program} is not installed here (scripts/system-deps.sh installs it)")
    (home / "bin" / program).symlink_to(found)


def test_version_prints_the_bridge_and_python_versions() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "--version"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    python = ".".join(map(str, sys.version_info[:3]))
    assert done.stdout.strip() == f"acp-bridge {__version__} (Python {python})"


def test_with_everything_there_the_table_lists_each_item_and_exit_is_0(home: Path) -> None:
    _link(home, "rg")
    done = _doctor(home)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"acp-bridge {__version__}")
    for item in ("Python", "ripgrep (rg)", "Deno (Code Mode)", "model", "API key", "state directory"):
        row = next(line for line in lines if line.startswith(item + " "))
        assert row.split()[len(item.split())] == "ok", row
    assert f"{home / 'state' / 'acp-bridge'} (created on first use)" in done.stdout
    assert lines[-1] == "Everything the bridge needs is here."


def test_without_ripgrep_on_path_it_warns_with_the_fix_and_still_exits_0(home: Path) -> None:
    done = _doctor(home)
    assert done.returncode == 0, done.stdout + done.stderr
    row = done.stdout.split("ripgrep (rg)", 1)[1].splitlines()
    assert row[0].split()[0] == "warning"
    assert "Python search" in row[0]
    assert row[1].strip().startswith("fix: install ripgrep")
    assert _rows(_doctor(home, "--json"))["ripgrep (rg)"]["status"] == "warning"


def test_an_openai_model_without_any_key_is_missing_with_the_login_fix(home: Path) -> None:
    done = _doctor(home, "--model", "openai:deepseek-chat")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "API key             MISSING  none found" in done.stdout
    assert f"fix: run `acp-bridge login --base-url {DEEPSEEK}` once" in done.stdout
    assert "ACP_BRIDGE_API_KEY, DEEPSEEK_API_KEY, OPENAI_API_KEY" in done.stdout
    assert "1 required item(s) missing: API key." in done.stdout


def test_a_key_from_the_environment_is_named_by_its_variable_and_never_printed(home: Path) -> None:
    done = _doctor(home, "--model", "openai:deepseek-chat", DEEPSEEK_API_KEY=SECRET)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "from $DEEPSEEK_API_KEY" in done.stdout
    as_json = _doctor(home, "--model", "openai:deepseek-chat", "--json", DEEPSEEK_API_KEY=SECRET)
    assert _rows(as_json)["API key"]["status"] == "ok"
    for output in (done, as_json):
        assert SECRET not in output.stdout + output.stderr
        assert SECRET[-6:] not in output.stdout + output.stderr


def test_a_stored_key_is_named_with_its_file_and_never_printed(home: Path) -> None:
    path = store_key(DEEPSEEK, SECRET, path=home / "config" / "acp-bridge" / "credentials.json")
    done = _doctor(home, "--model", "openai:deepseek-chat")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"stored by `acp-bridge login` in {path}" in done.stdout
    assert SECRET not in done.stdout + done.stderr


@pytest.fixture
def endpoint() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(models=[{"id": "fake-model"}], accepted_keys=[SECRET]) as server:
        yield server


def test_check_key_asks_the_endpoint_and_a_refused_key_is_missing(
    home: Path, endpoint: FakeOpenAIServer
) -> None:
    args = ("--model", "openai:fake-model", "--base-url", endpoint.base_url, "--check-key")
    accepted = _doctor(home, *args, ACP_BRIDGE_API_KEY=SECRET)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "from $ACP_BRIDGE_API_KEY: the endpoint accepted the key" in accepted.stdout
    refused = _doctor(home, *args, ACP_BRIDGE_API_KEY="sk-wrong-key-000")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "the endpoint refused the key (HTTP 401)" in refused.stdout
    assert [r.headers.get("authorization") for r in endpoint.model_requests] == [
        f"Bearer {SECRET}",
        "Bearer sk-wrong-key-000",
    ]


def test_a_state_directory_that_cannot_be_created_is_missing(home: Path) -> None:
    blocker = home / "a-file"
    blocker.write_text("not a folder\n")
    done = _doctor(home, "--state-dir", str(blocker / "state"))
    assert done.returncode == 1, done.stdout + done.stderr
    row = _rows(_doctor(home, "--state-dir", str(blocker / "state"), "--json"))["state directory"]
    assert row["status"] == "missing"
    assert "cannot be created" in str(row["found"])
    assert "--state-dir DIR" in str(row["fix"])


def test_each_configured_mcp_server_is_looked_up_with_the_fix_for_a_missing_one(home: Path) -> None:
    tool = home / "bin" / "present-mcp-server"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    config = home / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "here": {"command": "present-mcp-server", "args": ["--stdio"]},
                    "gone": {"command": "absent-mcp-server"},
                    "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
                    "odd": {"type": "carrier-pigeon"},
                }
            }
        )
    )
    done = _doctor(home, "--mcp-config", str(config), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = _rows(done)
    assert rows["MCP server here"]["status"] == "ok"
    assert str(tool) in str(rows["MCP server here"]["found"])
    assert rows["MCP server gone"]["status"] == "missing"
    assert "install absent-mcp-server" in str(rows["MCP server gone"]["fix"])
    assert rows["MCP server docs"]["status"] == "ok"
    assert "not contacted" in str(rows["MCP server docs"]["found"])
    assert rows["MCP server odd"]["status"] == "missing"
    assert not json.loads(done.stdout)["ok"]


def test_an_unreadable_mcp_config_is_missing(home: Path) -> None:
    done = _doctor(home, "--mcp-config", str(home / "nowhere.json"), "--json")
    assert done.returncode == 1
    assert _rows(done)["MCP servers"]["status"] == "missing"
