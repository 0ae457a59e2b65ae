"""Invariants of the package layering, checked on the source (docs/architecture.md):

- the session core (sessions, turn loop, permissions, replay, live output, editor file access, store, the
  mapping, the model backends) imports no transport, no face and no ACP SDK, so the ACP face and the LSP
  face share it unchanged; and only the demo (a client) uses the SDK;
- `registry_core` imports nothing from `presenters` or `acp_bridge`; `presenters` nothing from `acp_bridge`;
- `acp_bridge.mapping` is pure: no asyncio, no I/O, no process or network module.

Relative imports are resolved against the importing module's package, and `from X import name` also
counts as an import of `X.name` (it may be a module), so `from . import connection` is caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "acp_bridge"
CORE = [
    "channel",
    "sessions",
    "turn",
    "replay",
    "session_log",
    "presentable",
    "prompt_blocks",
    "system_prompt",
    "permissions",
    "permission_log",
    "live_output",
    "client_fs",
    "store",
    "session_index",
    "rules_store",
    "questions",
    "state_dir",
    "errors",
    "settings",
    "mapping",
    "models",
]
FORBIDDEN_IN_CORE = (
    "acp",
    "acp_bridge.jsonrpc",
    "acp_bridge.connection",
    "acp_bridge.lsp",
    "acp_bridge.cli",
    "acp_bridge.demo",
    "acp_bridge.demo_render",
    "pygls",
    "lsprotocol",
)
# What would make the mapping impure: an event loop, files, processes, sockets, HTTP, threads.
IMPURE = (
    "asyncio",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "glob",
    "subprocess",
    "multiprocessing",
    "threading",
    "concurrent",
    "socket",
    "selectors",
    "select",
    "ssl",
    "http",
    "urllib.request",
    "httpx",
    "signal",
    "sqlite3",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, source: str | None = None) -> set[str]:
    """Every module `path` imports, as absolute dotted names (relative ones resolved)."""
    tree = ast.parse(source if source is not None else path.read_text())
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def _sources(target: str) -> list[Path]:
    path = REPO / (target.replace(".", "/"))
    if path.is_dir():
        return sorted(path.rglob("*.py"))
    return [path.with_suffix(".py")]


def _violations(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    for path in paths:
        names = sorted(
            name for name in imports_of(path) for f in forbidden if name == f or name.startswith(f + ".")
        )
        if names:
            bad[str(path.relative_to(REPO))] = names
    return bad


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_no_transport_face_or_sdk(module: str) -> None:
    bad = _violations(_sources(f"acp_bridge.{module}"), FORBIDDEN_IN_CORE)
    assert not bad, bad


def test_only_the_demo_client_imports_the_acp_sdk() -> None:
    users = {
        path.stem
        for path in PACKAGE.rglob("*.py")
        if any(name == "acp" or name.startswith("acp.") for name in imports_of(path))
    }
    assert users <= {"demo"}, users


def test_the_registry_imports_neither_the_tools_nor_the_bridge() -> None:
    bad = _violations(_sources("registry_core"), ("presenters", "acp_bridge"))
    assert not bad, bad


def test_the_tools_import_nothing_from_the_bridge() -> None:
    bad = _violations(_sources("presenters"), ("acp_bridge",))
    assert not bad, bad


def test_the_mapping_is_pure() -> None:
    bad = _violations(_sources("acp_bridge.mapping"), IMPURE)
    assert not bad, bad
    # Of the tools it may use the pure path rules only.
    tools = _violations(_sources("acp_bridge.mapping"), ("presenters",))
    allowed = {
        "presenters.paths",
        *(f"presenters.paths.{n}" for n in ("display_path", "relative_inside", "resolve")),
    }
    assert {name for names in tools.values() for name in names} <= allowed, tools


def _cycles(modules: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles among `modules` (module → what it imports): Tarjan's strongly connected
    components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in modules[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_the_core_has_no_import_cycle() -> None:
    """Not even through imports made only for type checking: a module that needs another's type the other
    way round gets a `Protocol` instead (e.g. `turn.TurnHost`, which `sessions.Session` satisfies)."""
    paths = [path for module in CORE for path in _sources(f"acp_bridge.{module}")]
    names = {_module_name(path) for path in paths}
    graph = {_module_name(path): imports_of(path) & names for path in paths}
    assert _cycles(graph) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("where", "source", "forbidden"),
    [
        ("acp_bridge/turn.py", "from . import connection\n", FORBIDDEN_IN_CORE),
        ("acp_bridge/mapping/calls.py", "from .. import jsonrpc\n", FORBIDDEN_IN_CORE),
        ("acp_bridge/mapping/calls.py", "from ..lsp.channel import LspChannel\n", FORBIDDEN_IN_CORE),
        ("acp_bridge/mapping/text.py", "import asyncio\n", IMPURE),
        ("acp_bridge/mapping/text.py", "from urllib.request import urlopen\n", IMPURE),
        ("registry_core/pipeline.py", "from presenters import paths\n", ("presenters", "acp_bridge")),
        (
            "registry_core/pipeline.py",
            "from acp_bridge.mapping import Update\n",
            ("presenters", "acp_bridge"),
        ),
        ("presenters/read.py", "import acp_bridge.mapping\n", ("acp_bridge",)),
    ],
)
def test_each_check_sees_a_violation(where: str, source: str, forbidden: tuple[str, ...]) -> None:
    """The checks above would fail on these imports (so none of them passes vacuously)."""
    names = imports_of(REPO / where, source)
    assert any(name == f or name.startswith(f + ".") for name in names for f in forbidden), names
