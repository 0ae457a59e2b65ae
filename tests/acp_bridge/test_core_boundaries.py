"""Invariants of the package layering, checked on the source (docs/architecture.md):

- the folders of `acp_bridge` form layers (`LAYERS`): every import points down, never up nor across the
  two faces, so a new module is checked by the folder it lands in; the core folders (up to `session`)
  import no transport, no face and no ACP SDK, so the ACP face and the LSP face share them unchanged; only
  the demo (a client) uses the SDK;
- `registry_core` imports nothing from `presenters` or `acp_bridge`; `presenters` nothing from `acp_bridge`;
- `acp_bridge.mapping` is pure: no asyncio, no I/O, no process or network module;
- the faces' process shell: what both faces start with (`runtime/`: `stdio`, `boot`) imports no face; the
  LSP face imports neither the ACP face nor the command table; the ACP agent (`connection`) touches no
  stdio and no signal; the command table (`cli`) imports only the standard library at module level; the ACP
  handshake (`handshake`, what answers `initialize` while the core loads) imports none of the core.

Relative imports are resolved against the importing module's package, and `from X import name` also
counts as an import of `X.name` (it may be a module), so `from ..acp import connection` is caught.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.support.source_imports import REPO, imports_of, module_name

PACKAGE = REPO / "acp_bridge"
# The folders of `acp_bridge`, lowest first: a module imports only from its own folder and the folders
# before it (and `acp_bridge` itself for `__version__`). The loose modules at the top (`cli`, `doctor`,
# `version`, `__main__`) may import any folder; no folder imports them. Faces come after the core: the
# core folders (up to `session`) never import a face, because a face is never before them.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("common",),  # the shared leaves: errors, the JSON encoder, credentials, modes, the state folder
    ("mapping",),  # cards <-> ACP updates, pure
    ("models",),  # model backends
    ("client",),  # the seam: what the core may ask of an editor
    ("history",),  # session logs on disk, the session index
    ("permissions",),  # modes, scopes, rules, the gate
    ("mcp",),  # the user's MCP servers
    ("checkpoints",),  # snapshots of the roots outside them, the files a call changed, undo
    ("turn",),  # the agent loop of one prompt
    ("session",),  # sessions and their manager
    ("auth",),  # login and the auth methods
    ("runtime",),  # the process shell both faces share: stdio, boot
    ("acp", "lsp"),  # the two faces, side by side: neither imports the other
    ("demo",),  # a terminal client of the ACP face
)
FOLDERS = [folder for layer in LAYERS for folder in layer]
CORE_FOLDERS = FOLDERS[: FOLDERS.index("session") + 1]
CORE = CORE_FOLDERS
FORBIDDEN_IN_CORE = (
    "acp",
    *(f"acp_bridge.{folder}" for folder in FOLDERS[len(CORE_FOLDERS) :]),
    "acp_bridge.cli",
    "acp_bridge.doctor",
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


def _folder_of(module: str) -> str | None:
    """The folder of an `acp_bridge` module, `""` for a loose one, None outside the package."""
    parts = module.split(".")
    if parts[0] != "acp_bridge":
        return None
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return ""


def _layer_violations(paths: list[Path], source: str | None = None) -> list[str]:
    rank = {folder: i for i, layer in enumerate(LAYERS) for folder in layer}
    bad: list[str] = []
    for path in paths:
        mine = _folder_of(module_name(path))
        assert mine is not None
        for name in sorted(imports_of(path, source if source is not None else None)):
            theirs = _folder_of(name)
            if theirs is None or theirs == mine or name in ("acp_bridge", "acp_bridge.__version__"):
                continue
            if mine == "":  # a loose module at the top may import any folder
                if theirs == "" and module_name(path) != "acp_bridge.__main__":
                    bad.append(f"{module_name(path)} -> {name}")
                continue
            if theirs == "" or rank[theirs] >= rank[mine]:
                bad.append(f"{module_name(path)} -> {name}")
    return bad


def test_every_folder_is_placed_in_the_layers() -> None:
    folders = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert folders == set(FOLDERS)


def test_the_loose_modules_are_few() -> None:
    loose = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "cli.py", "doctor.py", "version.py"]


def test_every_import_points_down_the_layers() -> None:
    """A folder imports only its own modules and the folders below it; faces never import each other."""
    assert _layer_violations(sorted(PACKAGE.rglob("*.py"))) == []


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("acp_bridge/common/errors.py", "from acp_bridge.models import ModelError\n"),
        ("acp_bridge/turn/loop.py", "def f():\n    from ..session.manager import Session\n"),
        ("acp_bridge/lsp/server.py", "from ..acp.connection import AcpAgent\n"),
        ("acp_bridge/acp/serve.py", "from acp_bridge.lsp import server\n"),
        ("acp_bridge/session/manager.py", "from acp_bridge import doctor\n"),
    ],
)
def test_the_layer_check_sees_an_upward_import(where: str, source: str) -> None:
    assert _layer_violations([REPO / where], source) != []


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_no_transport_face_or_sdk(module: str) -> None:
    bad = _violations(_sources(f"acp_bridge.{module}"), FORBIDDEN_IN_CORE)
    assert not bad, bad


def test_only_the_demo_client_imports_the_acp_sdk() -> None:
    users = {
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        if any(name == "acp" or name.startswith("acp.") for name in imports_of(path))
    }
    assert {_folder_of(user) for user in users} <= {"demo"}, users


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
    names = {module_name(path) for path in paths}
    graph = {module_name(path): imports_of(path) & names for path in paths}
    assert _cycles(graph) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("where", "source", "forbidden"),
    [
        ("acp_bridge/turn/loop.py", "from ..acp import connection\n", FORBIDDEN_IN_CORE),
        ("acp_bridge/mapping/calls.py", "from ..acp import jsonrpc\n", FORBIDDEN_IN_CORE),
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


# --- the faces' process shell ---------------------------------------------------------------------------

# Every face (and what only a face uses): what both faces start with must import none of them.
FACES = (
    "acp_bridge.acp",
    "acp_bridge.lsp",
    "acp_bridge.cli",
    "acp_bridge.demo",
    "acp",
    "pygls",
    "lsprotocol",
)
# The ACP face (its agent, its JSON-RPC peer, its serve loop) and the command table above both faces.
ACP_FACE_AND_TABLE = ("acp_bridge.acp", "acp_bridge.cli")
# All the handshake may import of the project: light modules of the standard library's kind.
HANDSHAKE_MAY_IMPORT = {
    "acp_bridge",
    "acp_bridge.__version__",
    "acp_bridge.auth.auth_methods",
    "acp_bridge.common.client_capabilities",
    "acp_bridge.common.errors",
    "acp_bridge.acp.jsonrpc",
}
PROJECT = ("acp_bridge", "registry_core", "presenters")
# What the ACP agent leaves to the process shell (`serve`, `stdio`, `boot`).
PROCESS_SHELL = ("acp_bridge.runtime.stdio", "acp_bridge.runtime.boot", "acp_bridge.acp.serve", "signal")


class _WithoutFunctionBodies(ast.NodeTransformer):
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.stmt:
        return ast.Pass()

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.stmt:
        return ast.Pass()


def module_level_imports(path: Path, source: str | None = None) -> set[str]:
    """`imports_of`, counting only what runs when the module is imported (not what a function imports)."""
    tree = ast.parse(source if source is not None else path.read_text())
    return imports_of(path, ast.unparse(_WithoutFunctionBodies().visit(tree)))


def _outside_the_standard_library(names: set[str]) -> list[str]:
    return sorted(name for name in names if name.split(".")[0] not in sys.stdlib_module_names)


def test_the_lsp_face_imports_neither_the_acp_face_nor_the_command_table() -> None:
    bad = _violations(_sources("acp_bridge.lsp"), ACP_FACE_AND_TABLE)
    assert not bad, bad


def test_what_both_faces_start_with_imports_no_face() -> None:
    bad = _violations(_sources("acp_bridge.runtime"), FACES)
    assert not bad, bad


def test_the_stdio_transport_imports_nothing_of_the_project_but_its_encoder() -> None:
    assert (
        _project_imports_beyond(REPO / "acp_bridge/runtime/stdio.py", {"acp_bridge.common.json_bytes"}) == []
    )
    bad = _violations(_sources("acp_bridge.common.json_bytes"), PROJECT)
    assert not bad, bad


def test_the_acp_agent_touches_no_stdio_and_no_signal() -> None:
    bad = _violations(_sources("acp_bridge.acp.connection"), PROCESS_SHELL)
    assert not bad, bad


def test_only_the_entry_point_imports_the_command_table() -> None:
    users = {
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        if path != PACKAGE / "cli.py" and _violations([path], ("acp_bridge.cli",))
    }
    assert users <= {"acp_bridge.__main__"}, users


def _project_imports_beyond(path: Path, allowed: set[str], source: str | None = None) -> list[str]:
    """The project's names `path` imports that are not in `allowed`, nor names from an allowed module."""
    modules = {name for name in allowed if "." in name}  # not a whole package: its every module
    project = [n for n in imports_of(path, source) if n.split(".")[0] in PROJECT]
    return sorted(n for n in project if n not in allowed and n.rpartition(".")[0] not in modules)


def test_the_handshake_imports_none_of_the_core() -> None:
    """`initialize` is answered while the core loads: by a module that needs none of it (the loaded
    modules are checked in a fresh interpreter by `test_cli.py`)."""
    assert _project_imports_beyond(PACKAGE / "acp/handshake.py", HANDSHAKE_MAY_IMPORT) == []


def test_the_handshake_check_sees_a_core_import() -> None:
    source = "from ..session.manager import SessionManager\nfrom ..common.errors import InvalidParams\n"
    assert _project_imports_beyond(PACKAGE / "acp/handshake.py", HANDSHAKE_MAY_IMPORT, source) == [
        "acp_bridge.session.manager",
        "acp_bridge.session.manager.SessionManager",
    ]


def test_the_command_table_imports_only_the_standard_library_at_module_level() -> None:
    """A subcommand's modules load when it is chosen, so building the parser and `--help` stay cheap."""
    path = PACKAGE / "cli.py"
    assert _outside_the_standard_library(module_level_imports(path)) == []


@pytest.mark.parametrize(
    ("where", "source", "forbidden"),
    [
        ("acp_bridge/lsp/server.py", "from ..acp.connection import AcpAgent\n", ACP_FACE_AND_TABLE),
        ("acp_bridge/lsp/server.py", "from ..acp.jsonrpc import FrameWriter\n", ACP_FACE_AND_TABLE),
        ("acp_bridge/lsp/command.py", "def f():\n    from ..cli import core_setup\n", ACP_FACE_AND_TABLE),
        ("acp_bridge/runtime/boot.py", "def f():\n    from ..lsp.command import run\n", FACES),
        ("acp_bridge/runtime/stdio.py", "from .errors import ConnectionClosed\n", PROJECT),
        ("acp_bridge/acp/connection.py", "from ..runtime.stdio import claim_stdio\n", PROCESS_SHELL),
        ("acp_bridge/acp/connection.py", "import signal\n", PROCESS_SHELL),
    ],
)
def test_each_shell_check_sees_a_violation(where: str, source: str, forbidden: tuple[str, ...]) -> None:
    names = imports_of(REPO / where, source)
    assert any(name == f or name.startswith(f + ".") for name in names for f in forbidden), names


def test_the_module_level_check_sees_a_module_level_import_and_skips_a_late_one() -> None:
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .session.manager import SessionManager\n"
        "def run():\n    from .acp.serve import run\n"
    )
    names = module_level_imports(PACKAGE / "cli.py", source)
    assert _outside_the_standard_library(names) == [
        "acp_bridge.session.manager",
        "acp_bridge.session.manager.SessionManager",
    ]
