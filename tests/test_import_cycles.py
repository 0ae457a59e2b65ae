"""No import cycle between the project's modules (registry_core, presenters, acp_bridge).

Every import counts: module level, under `if TYPE_CHECKING:`, and inside a function. A type-only or late
import hides a circle from the interpreter, not from a reader: the two modules still cannot be understood,
tested or changed apart. A `Protocol` owned by the lower module is how such a circle is broken.

The graph is read from the source with `ast`. `from X import n` is an edge to `X.n` when that is a module
of ours, otherwise to `X` itself. Importing a submodule does not add an edge to its parent package (the
interpreter runs the package's `__init__` first, but that is not a dependency the code chose).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("registry_core", "presenters", "acp_bridge")

Edge = tuple[str, str]

# Edges inside cycles that exist today outside registry_core: none (the last knot, cli.py and
# lsp/command.py reaching into each other, was untied by `boot`). Each one is a known knot to untie; the
# list only ever shrinks (an edge that no longer exists fails `test_the_known_cycles_list_only_real_edges`).
# registry_core may never appear here.
KNOWN_CYCLE_EDGES: frozenset[Edge] = frozenset()


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


def imported_modules(module: str, is_package: bool, source: str, known: Collection[str]) -> set[str]:
    """The modules among `known` that `source` imports, anywhere in the file (relative ones resolved)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                # `from X import n` depends on the submodule X.n when there is one, otherwise on X.
                submodule = f"{base}.{alias.name}"
                target = submodule if submodule in known else base
                if target in known:
                    found.add(target)
    found.discard(module)
    return found


def import_graph(sources: Mapping[str, tuple[bool, str]]) -> dict[str, set[str]]:
    """module → the project modules it imports. `sources`: module → (is a package, its source)."""
    return {
        module: imported_modules(module, is_package, source, sources)
        for module, (is_package, source) in sources.items()
    }


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        # Iterative, so a deep graph cannot hit the recursion limit.
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _project_sources() -> dict[str, tuple[bool, str]]:
    return {m: (p.name == "__init__.py", p.read_text()) for m, p in project_modules().items()}


def _without(graph: Mapping[str, set[str]], edges: frozenset[Edge]) -> dict[str, set[str]]:
    return {m: {t for t in targets if (m, t) not in edges} for m, targets in graph.items()}


def test_the_project_has_no_import_cycle_beyond_the_known_ones() -> None:
    graph = import_graph(_project_sources())
    assert cycles(_without(graph, KNOWN_CYCLE_EDGES)) == []


def test_registry_core_has_no_import_cycle_at_all() -> None:
    assert not [edge for edge in KNOWN_CYCLE_EDGES if any(m.startswith("registry_core") for m in edge)]
    sources = {m: s for m, s in _project_sources().items() if m.split(".")[0] == "registry_core"}
    assert cycles(import_graph(sources)) == []


def test_the_known_cycles_list_only_real_edges() -> None:
    """When a knot is untied, its edges leave the list (so the list cannot hide a new cycle later)."""
    graph = import_graph(_project_sources())
    gone = sorted(edge for edge in KNOWN_CYCLE_EDGES if edge[1] not in graph.get(edge[0], set()))
    assert gone == []


@pytest.mark.parametrize(
    "late_import",
    [
        "from .pipeline import run_pipeline\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .pipeline import run_pipeline\n",
        "def f():\n    from . import pipeline\n",
        "def f():\n    import registry_core.pipeline\n",
        "def f():\n    from registry_core import run_step\n",
    ],
)
def test_a_cycle_through_any_kind_of_import_is_found(late_import: str) -> None:
    """The check is not vacuous: json_values importing the pipeline back (the pipeline needs it) closes a
    circle, whether the import is at module level, type-only or inside a function."""
    sources = {m: s for m, s in _project_sources().items() if m.split(".")[0] == "registry_core"}
    is_package, source = sources["registry_core.json_values"]
    sources["registry_core.json_values"] = (is_package, source + late_import)
    found = cycles(import_graph(sources))
    assert any("registry_core.json_values" in component for component in found), found


def test_importing_a_submodule_by_name_is_an_edge_to_it_alone() -> None:
    sources = {
        "pkg": (True, "from .a import thing\n"),
        "pkg.a": (False, "from pkg import b\n"),
        "pkg.b": (False, "x = 1\n"),
    }
    assert import_graph(sources) == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}
