"""No import circle inside `framework/`: an independent check beside import-linter's contracts.

Every import counts, function-level ones included (they still tie the modules together); only
imports under `if TYPE_CHECKING:` are left out, because they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import framework

ROOT = Path(framework.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(tree: ast.AST, known: set[str]) -> set[str]:
    """The framework modules a tree imports at run time (`from pkg import mod` names `pkg.mod`)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if name in known}


def import_graph() -> dict[str, set[str]]:
    paths = [p for p in ROOT.rglob("*.py") if "template" not in p.relative_to(ROOT).parts]
    trees = {module_name(p): ast.parse(p.read_text(), str(p)) for p in paths}
    known = set(trees)
    return {name: imported_modules(tree, known) - {name} for name, tree in trees.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path `a, b, ..., a`, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := walk(start)):
            return cycle
    return None


def test_the_checker_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x.a\n"
        "def f():\n    from x import b\n"
    )
    assert imported_modules(tree, {"x.a", "x.b"}) == {"x.b"}


def test_framework_has_no_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 30, sorted(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)
