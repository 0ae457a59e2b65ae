"""The ACP Registry entry (`packaging/acp-registry/`), checked the way the registry's CI checks an entry
(`.github/workflows/build_registry.py` and `verify_agents.py --auth-check` in
`agentclientprotocol/registry`): the manifest against the registry's schema, the icon's size and colours,
and the command the manifest names, started with the locally built wheel in place of the PyPI package
(its dependencies from the wheelhouse, no package index), answering the registry's own `initialize`
request with valid `authMethods`."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from acp_bridge import __version__
from acp_bridge.auth.auth_methods import (
    AGENT_METHOD_ID,
    LEGACY_TERMINAL_METHOD_ID,
    TERMINAL_ARGS,
    TERMINAL_METHOD_ID,
)

from .conftest import (
    REPO,
    WHEEL_PYTHONS,
    clean_env,
    no_index_args,
    no_index_env,
    python_executable,
    uvx_executable,
)

ENTRY = REPO / "packaging" / "acp-registry"
ANSWER_TIMEOUT_S = 120
# What the registry's auth check passes to the agent (client.py, AGENT_ENV_PASSTHROUGH), besides a fresh
# HOME (uv's cache is this user's, so a run reuses uv's downloads). This suite's guard against reaching
# a package index (conftest.no_index_env) goes along.
PASSTHROUGH = ("CI", "PATH", "SSL_CERT_DIR", "SSL_CERT_FILE", "TMPDIR", "UV_COMPILE_BYTECODE")
# The distribution names and registry ids unrelated projects already hold.
TAKEN = {"acp-bridge"}
# The registry CI's `initialize` params (client.py, run_auth_check).
REGISTRY_INITIALIZE = {
    "protocolVersion": 1,
    "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
    "clientCapabilities": {
        "terminal": True,
        "fs": {"readTextFile": True, "writeTextFile": True},
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
}


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))
    return data


def test_the_manifest_is_valid_against_the_registry_schema() -> None:
    schema = json.loads((ENTRY / "agent.schema.json").read_text(encoding="utf-8"))
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(_manifest())]
    assert errors == []


def test_the_manifest_names_this_version_of_the_package() -> None:
    manifest = _manifest()
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert manifest["version"] == project["version"] == __version__
    assert manifest["distribution"]["uvx"]["package"] == f"{project['name']}=={__version__}"
    assert set(manifest["distribution"]) == {"uvx"}


def test_the_registry_id_and_the_package_are_not_names_taken_by_other_projects() -> None:
    manifest = _manifest()
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert manifest["id"] == project["name"] == "acp-bridge-agent"
    assert not {manifest["id"], project["name"]} & TAKEN
    # `uvx <package>==VERSION` runs the command named like the package: the same entry point as acp-bridge.
    assert project["scripts"][project["name"]] == project["scripts"]["acp-bridge"]


def test_the_icon_is_16_by_16_and_drawn_in_current_color_only() -> None:
    svg = ET.parse(ENTRY / "icon.svg").getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    assert (svg.get("width"), svg.get("height"), svg.get("viewBox")) == ("16", "16", "0 0 16 16")
    painted = 0
    for element in svg.iter():
        assert "style" not in element.attrib, "colours must be attributes the registry can check"
        for attribute in ("fill", "stroke", "color", "stop-color"):
            value = element.get(attribute)
            if value is not None:
                assert value in ("currentColor", "none", "inherit"), (element.tag, attribute, value)
                painted += value == "currentColor"
    assert painted, "nothing is drawn in currentColor"
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgb\(", (ENTRY / "icon.svg").read_text(encoding="utf-8"))


def _initialize(argv: list[str], home: Path, params: dict[str, Any], uv_cache: str) -> dict[str, Any]:
    """Start `argv` as the registry CI does (its environment, a fresh HOME), send `initialize`, return
    the answer's `result`."""
    guard = no_index_env()
    env = {name: value for name, value in clean_env().items() if name in PASSTHROUGH or name in guard}
    env.update(HOME=str(home), TERM="dumb", UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=uv_cache)
    proc = subprocess.Popen(
        argv, cwd=home, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        line = b""
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no answer to initialize in {ANSWER_TIMEOUT_S} s"
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"the agent exited: {proc.stderr.read().decode()[-2000:]}"
            line += chunk
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Every line on stdout must be a JSON-RPC message (the registry rejects anything else).
    answer: dict[str, Any] = json.loads(line)
    assert answer.get("id") == 1 and "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def _manifest_command(wheel: Path, wheelhouse: Path, uv: str) -> list[str]:
    """The manifest's `uvx <package> <args>`, with the local wheel in place of the PyPI package, its
    dependencies from the wheelhouse, on a Python the wheelhouse has wheels for."""
    python = next(filter(None, map(python_executable, WHEEL_PYTHONS)), None)
    if python is None:
        pytest.skip(f"none of python{', python'.join(WHEEL_PYTHONS)} is installed here")
    uvx = _manifest()["distribution"]["uvx"]
    name = uvx["package"].split("==", 1)[0]
    options = [*no_index_args(wheelhouse), "--python", python, "--from", str(wheel)]
    return [uvx_executable(uv), *options, name, *uvx.get("args", [])]


@pytest.mark.e2e
@pytest.mark.slow
def test_the_manifest_command_offers_the_auth_methods_the_registry_requires(
    wheel: Path, wheelhouse: Path, uv: str, uv_cache: str, tmp_path: Path
) -> None:
    argv = _manifest_command(wheel, wheelhouse, uv)
    result = _initialize(argv, tmp_path, REGISTRY_INITIALIZE, uv_cache)
    methods = result["authMethods"]
    # The registry's rule: at least one method of type agent (no `type` means agent) or terminal. Its check
    # signals terminal login the older way (`_meta["terminal-auth"]`), which gets a runnable login too.
    assert [(m.get("type", "agent"), m["id"]) for m in methods] == [
        ("agent", AGENT_METHOD_ID),
        ("agent", LEGACY_TERMINAL_METHOD_ID),
    ]
    assert all(m["name"] for m in methods)
    legacy = methods[1]["_meta"]["terminal-auth"]
    assert legacy["args"][-len(TERMINAL_ARGS) :] == list(TERMINAL_ARGS)
    assert result["agentCapabilities"]["auth"] == {"logout": {}}
    # A client that can run a terminal login gets it too: the same command plus its args.
    terminal_client = {**REGISTRY_INITIALIZE, "clientCapabilities": {"auth": {"terminal": True}}}
    methods = _initialize(argv, tmp_path, terminal_client, uv_cache)["authMethods"]
    assert [(m.get("type", "agent"), m["id"]) for m in methods] == [
        ("agent", AGENT_METHOD_ID),
        ("terminal", TERMINAL_METHOD_ID),
    ]
    assert methods[1]["args"] == list(TERMINAL_ARGS)
