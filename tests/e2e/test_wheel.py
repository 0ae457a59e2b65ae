"""The wheel on its own, as a user installs it: `uvx --from <wheel> acp-bridge ...` and `pip install <wheel>`
into a fresh virtual environment, each on the oldest and the newest supported Python (3.11 and 3.13),
run in a folder outside the checkout with no PYTHONPATH. In each: `--version` (under both command names),
`demo` to its summary, `serve` answering ACP `initialize` over real pipes, `lsp` answering LSP
`initialize`, and the packages imported from that environment. Anything the package reads from the
repository instead of from itself (a prelude, a JSON file, the demo's workspace) fails here.

The dependencies come from the wheelhouse, with no package index (conftest.no_index_env)."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from acp_bridge import __version__

from .conftest import (
    PROXY_VARIABLES,
    REPO,
    WHEELHOUSE,
    build_wheel,
    clean_env,
    no_index_args,
    python_executable,
    uvx_executable,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INSTALL_TIMEOUT_S = 600
RUN_TIMEOUT_S = 120
ANSWER_TIMEOUT_S = 60


@dataclass(frozen=True, slots=True)
class Installed:
    """How to run the installed `acp-bridge` (and its environment's `python`)."""

    how: str
    bridge: tuple[str, ...]
    # The same command under the distribution's name, as the ACP Registry's `uvx <package>` runs it.
    alias: tuple[str, ...]
    python: tuple[str, ...]
    cwd: Path


@pytest.fixture(
    scope="module",
    params=[("uvx", "3.11"), ("uvx", "3.13"), ("pip", "3.11"), ("pip", "3.13")],
    ids=lambda p: f"{p[0]}-py{p[1]}",
)
def installed(
    request: pytest.FixtureRequest,
    wheel: Path,
    wheelhouse: Path,
    uv: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Installed:
    how, version = request.param
    python = python_executable(version)
    if python is None:
        pytest.skip(f"python{version} is not installed here (pyenv or the system's package manager has it)")
    cwd = tmp_path_factory.mktemp(f"{how}-{version}-cwd")
    if how == "uvx":
        uvx = [
            uvx_executable(uv),
            "--isolated",
            *no_index_args(wheelhouse),
            "--python",
            python,
            "--from",
            str(wheel),
        ]
        return Installed(how, (*uvx, "acp-bridge"), (*uvx, "acp-bridge-agent"), (*uvx, "python"), cwd)
    venv = tmp_path_factory.mktemp(f"venv-{version}")
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=INSTALL_TIMEOUT_S)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input", str(wheel)],
        env=clean_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    bin_dir = venv / "bin"
    return Installed(
        how,
        (str(bin_dir / "acp-bridge"),),
        (str(bin_dir / "acp-bridge-agent"),),
        (str(bin_dir / "python"),),
        cwd,
    )


def test_the_install_environment_has_no_way_to_a_package_index() -> None:
    env = clean_env()
    assert env["PIP_NO_INDEX"] == env["UV_OFFLINE"] == "1"
    assert env["PIP_FIND_LINKS"] == env["UV_FIND_LINKS"] == str(WHEELHOUSE)
    for name in PROXY_VARIABLES:
        proxy = urlsplit(env[name])
        assert proxy.hostname == "127.0.0.1", (name, env[name])
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((proxy.hostname, proxy.port or 80), timeout=5).close()
    assert set(env["NO_PROXY"].split(",")) == {"127.0.0.1", "localhost", "::1"}


def test_a_missing_wheelhouse_fails_naming_the_make_target(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "wheelhouse.py"), "--check", "--dir", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "is missing; run `make wheelhouse`" in done.stderr, done.stderr


def test_the_wheel_is_the_acp_bridge_agent_distribution_with_both_commands(wheel: Path) -> None:
    # `acp-bridge` on PyPI is an unrelated project: the distribution is `acp-bridge-agent`.
    assert wheel.name == f"acp_bridge_agent-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        info = f"acp_bridge_agent-{__version__}.dist-info"
        metadata = archive.read(f"{info}/METADATA").decode()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        shipped = set(archive.namelist())
    assert "\nName: acp-bridge-agent\n" in metadata
    assert "acp_bridge/session/system_prompt.md" in shipped  # the system prompt's template, read at run time
    assert "acp-bridge = acp_bridge.cli:main" in entry_points
    assert "acp-bridge-agent = acp_bridge.cli:main" in entry_points


def test_building_the_wheel_again_gives_the_same_bytes(
    wheel: Path, uv: str, wheel_source: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    again = build_wheel(uv, wheel_source, tmp_path, wheelhouse)
    assert again.name == wheel.name
    assert again.read_bytes() == wheel.read_bytes()


def _run(installed: Installed, *args: str, command: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(command or installed.bridge), *args],
        env=clean_env(),
        cwd=installed.cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_version_names_the_wheel_version(installed: Installed) -> None:
    done = _run(installed, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"acp-bridge {__version__} (Python "), done.stdout


def test_the_command_named_like_the_distribution_is_the_same_bridge(installed: Installed) -> None:
    done = _run(installed, "--version", command=installed.alias)
    assert done.returncode == 0, done.stderr
    assert done.stdout == _run(installed, "--version").stdout


def test_the_packages_come_from_the_environment_not_the_checkout(installed: Installed) -> None:
    probe = (
        "import json, acp_bridge, presenters, registry_core, presenters.deno_sandbox as sandbox\n"
        "print(json.dumps([acp_bridge.__file__, presenters.__file__, registry_core.__file__,"
        " sandbox.prelude_path()]))\n"
    )
    done = subprocess.run(
        [*installed.python, "-c", probe],
        env=clean_env(),
        cwd=installed.cwd,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for path in json.loads(done.stdout):
        assert not Path(path).resolve().is_relative_to(REPO), path
        assert Path(path).is_file(), path


def test_demo_runs_offline_to_its_summary(installed: Installed) -> None:
    done = _run(installed, "demo", "--no-color")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.rsplit("\nsummary\n", 1)
    assert len(summary) == 2, done.stdout[-3000:]
    assert "turn ended: end_turn" in summary[1]
    assert "0 failed" in summary[1]
    assert "notes.md: changed" in summary[1]


def _read_line(stream: Any, deadline: float) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no complete line in time; got {line!r}"
        ready, _, _ = select.select([stream], [], [], left)
        if ready:
            chunk = os.read(stream.fileno(), 1)
            assert chunk, f"the stream closed; got {line!r}"
            line += chunk
    return line


def test_serve_answers_initialize_over_pipes(installed: Installed) -> None:
    proc = subprocess.Popen(
        [*installed.bridge, "serve"],
        env=clean_env(),
        cwd=installed.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(_read_line(proc.stdout, time.monotonic() + ANSWER_TIMEOUT_S))
        proc.stdin.close()
        assert proc.wait(timeout=ANSWER_TIMEOUT_S) == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert answer["id"] == 1, answer
    assert answer["result"]["protocolVersion"] == 1
    assert answer["result"]["agentInfo"]["version"] == __version__


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_lsp_answers_initialize(installed: Installed) -> None:
    requests = (
        _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"processId": None, "rootUri": installed.cwd.as_uri(), "capabilities": {}}})
        + _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        + _frame({"jsonrpc": "2.0", "method": "exit"})
    )  # fmt: skip
    done = subprocess.run(
        [*installed.bridge, "lsp"],
        input=requests,
        env=clean_env(),
        cwd=installed.cwd,
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    bodies = []
    rest = done.stdout
    while rest:
        header, _, rest = rest.partition(b"\r\n\r\n")
        length = int(dict(line.split(b": ", 1) for line in header.split(b"\r\n"))[b"Content-Length"])
        bodies.append(json.loads(rest[:length]))
        rest = rest[length:]
    initialized = next(b for b in bodies if b.get("id") == 1)
    assert initialized["result"]["serverInfo"] == {"name": "acp-bridge", "version": __version__}
    assert "acpBridge.prompt" in initialized["result"]["capabilities"]["executeCommandProvider"]["commands"]
