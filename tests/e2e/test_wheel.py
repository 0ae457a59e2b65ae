"""The wheel on its own, as a user installs it: `uvx --from <wheel> acp-bridge ...` and `pip install <wheel>`
into a fresh virtual environment, each on the oldest and the newest supported Python (3.11 and 3.13),
run in a folder outside the checkout with no PYTHONPATH. In each: `--version`, `demo` to its summary,
`serve` answering ACP `initialize` over real pipes, `lsp` answering LSP `initialize`, and the packages
imported from that environment. Anything the package reads from the repository instead of from itself
(a prelude, a JSON file, the demo's workspace) fails here."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_bridge import __version__

from .conftest import REPO, build_wheel, clean_env, python_executable, uvx_executable

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INSTALL_TIMEOUT_S = 600
RUN_TIMEOUT_S = 120
ANSWER_TIMEOUT_S = 60


@dataclass(frozen=True, slots=True)
class Installed:
    """How to run the installed `acp-bridge` (and its environment's `python`)."""

    how: str
    bridge: tuple[str, ...]
    python: tuple[str, ...]
    cwd: Path


@pytest.fixture(
    scope="module",
    params=[("uvx", "3.11"), ("uvx", "3.13"), ("pip", "3.11"), ("pip", "3.13")],
    ids=lambda p: f"{p[0]}-py{p[1]}",
)
def installed(
    request: pytest.FixtureRequest, wheel: Path, uv: str, tmp_path_factory: pytest.TempPathFactory
) -> Installed:
    how, version = request.param
    python = python_executable(version)
    if python is None:
        pytest.skip(f"python{version} is not installed here (pyenv or the system's package manager has it)")
    cwd = tmp_path_factory.mktemp(f"{how}-{version}-cwd")
    if how == "uvx":
        uvx = [uvx_executable(uv), "--isolated", "--python", python, "--from", str(wheel)]
        return Installed(how, (*uvx, "acp-bridge"), (*uvx, "python"), cwd)
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
    return Installed(how, (str(venv / "bin" / "acp-bridge"),), (str(venv / "bin" / "python"),), cwd)


def test_building_the_wheel_again_gives_the_same_bytes(
    wheel: Path, uv: str, wheel_source: Path, tmp_path: Path
) -> None:
    again = build_wheel(uv, wheel_source, tmp_path)
    assert again.name == wheel.name
    assert again.read_bytes() == wheel.read_bytes()


def _run(installed: Installed, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*installed.bridge, *args],
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
