"""The LSP face claims stdio before it sets up tools and models: output printed while setting up goes to
stderr, and the first bytes on stdout are an LSP frame header."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_output_while_setting_up_never_reaches_the_lsp_stream(tmp_path: Path) -> None:
    requests = (
        frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"capabilities": {}, "rootUri": tmp_path.as_uri()},
            }
        )
        + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        + frame({"jsonrpc": "2.0", "method": "exit"})
    )
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "lsp", "--extra-tools", "tests.support.noisy_tools:tools"],
        input=requests,
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.startswith(b"Content-Length: "), done.stdout[:200]
    assert b"noisy_tools" not in done.stdout
    stderr = done.stderr.decode()
    for noise in ("print at import", "raw write to fd 1 at import", "print from tools()"):
        assert f"noisy_tools: {noise}" in stderr
    # Every frame on stdout parses: header, blank line, JSON body.
    rest = done.stdout
    bodies = []
    while rest:
        header, _, rest = rest.partition(b"\r\n\r\n")
        fields = dict(line.split(b": ", 1) for line in header.split(b"\r\n"))
        length = int(fields[b"Content-Length"])
        bodies.append(json.loads(rest[:length]))
        rest = rest[length:]
    assert any(b.get("id") == 1 and "capabilities" in b.get("result", {}) for b in bodies)
