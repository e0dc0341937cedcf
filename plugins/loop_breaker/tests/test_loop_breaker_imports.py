"""The plugin's modules import one way: no circle, not even through `TYPE_CHECKING` imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "loop_breaker"


def imports_of(package: Path) -> dict[str, set[str]]:
    """Each module of `package` and the modules of it that it imports, anywhere in its text."""
    graph: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        home = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = home.split(".")[: len(home.split(".")) - node.level + 1]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module and node.module.split(".")[0] == package.name:
                found.add(node.module)
        graph[module] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                found.append([*path[path.index(target) :], target])
            elif target in graph:
                visit(target, [*path, target])

    for module in sorted(graph):
        visit(module, [module])
    return found


def test_no_import_circle_in_the_plugin() -> None:
    assert circles(imports_of(PACKAGE)) == []


def test_a_circle_through_a_type_checking_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n"
    )
    assert circles(imports_of(package))[0] == ["pkg.a", "pkg.b", "pkg.a"]


@pytest.mark.parametrize("module", ["core.types", "core.normalize", "core.fingerprint"])
def test_the_value_types_sit_below_what_builds_them(module: str) -> None:
    graph = imports_of(PACKAGE)
    below = {"loop_breaker.core.normalize", "loop_breaker.core.result_text"}
    if module != "core.types":
        assert "loop_breaker.core.types" not in graph[f"loop_breaker.{module}"]
    else:
        assert graph["loop_breaker.core.types"] <= below | {"loop_breaker.core.fingerprint"}
