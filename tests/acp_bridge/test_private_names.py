"""No module of `acp_bridge` imports another module's private (`_name`) names: what modules share is public
in the module that owns it (docs/architecture.md, `mapping/`)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "acp_bridge"


def private_imports(source: str) -> list[str]:
    """`module:name` for each private name imported from the project's own modules."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        own = node.level > 0 or (node.module or "").split(".")[0] in (
            "acp_bridge",
            "presenters",
            "registry_core",
        )
        if not own:
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not (alias.name.startswith("__") and alias.name.endswith("__")):
                found.append(f"{'.' * node.level}{node.module or ''}:{alias.name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    bad = {
        str(path.relative_to(REPO)): names
        for path in sorted(PACKAGE.rglob("*.py"))
        if (names := private_imports(path.read_text()))
    }
    assert not bad, bad


def test_the_check_sees_a_private_import() -> None:
    assert private_imports("from .text import _fence, tail\n") == [".text:_fence"]
    assert private_imports("from acp_bridge.mapping.budget import _fit\n") == [
        "acp_bridge.mapping.budget:_fit"
    ]
    assert private_imports("from . import __version__\nfrom os import _exit\n") == []
