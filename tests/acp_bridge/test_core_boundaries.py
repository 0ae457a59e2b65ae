"""Invariants of the core/face split, checked on the source: the session core (sessions, turn loop,
permissions, replay, live output, editor file access, store) imports no transport, no face and no ACP
SDK, so the ACP face and the LSP face share it unchanged; and only the demo (a client) uses the SDK."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "acp_bridge"
CORE = ["channel", "sessions", "turn", "replay", "permissions", "live_output", "client_fs", "store", "errors"]
FORBIDDEN_IN_CORE = (
    "acp",
    "acp_bridge.jsonrpc",
    "acp_bridge.connection",
    "acp_bridge.lsp",
    "pygls",
    "lsprotocol",
)


def _imports(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "acp_bridge." + (node.module or "") if node.level else (node.module or "")
            found.add(base.rstrip("."))
    return found


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_no_transport_face_or_sdk(module: str) -> None:
    bad = {
        name for name in _imports(module) for f in FORBIDDEN_IN_CORE if name == f or name.startswith(f + ".")
    }
    assert not bad, f"acp_bridge/{module}.py imports {sorted(bad)}"


def test_only_the_demo_client_imports_the_acp_sdk() -> None:
    users = {
        path.stem
        for path in PACKAGE.glob("*.py")
        if any(name == "acp" or name.startswith("acp.") for name in _imports(path.stem))
    }
    assert users <= {"demo"}, users
