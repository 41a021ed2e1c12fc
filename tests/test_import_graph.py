"""The back ends' modules import one another without a cycle: the printer
sits on top of its helpers, which know it only through the narrow context
they are given. Every import counts, at any depth in a module (a function's
lazy import, an ``if TYPE_CHECKING`` one) as a reader sees it."""
from __future__ import annotations

import ast
from pathlib import Path

import mytriton

PACKAGE = Path(mytriton.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports anywhere in its text."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


def import_graph(folder: Path) -> dict[str, set[str]]:
    paths = {module_name(p): p for p in folder.rglob("*.py")}
    known = set(paths)
    return {name: imports_of(path, known) - {name} for name, path in paths.items()}


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the modules along it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_one():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_back_ends():
    graph = import_graph(PACKAGE / "backends")
    assert graph["mytriton.backends.cuda.emitter"], "the graph reads the back ends' imports"
    assert cycle_in(graph) is None
