"""The import graph of a package, read from its source (no import runs), and its cycles: how
the kit's suite checks that its own imports point one way (and the template's suite the
template's), and how a project can check its own."""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(package_dir: Path, path: Path) -> str:
    parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports, anywhere in its body (inside functions
    too: a lazy import closes a cycle as surely as a top-level one)."""
    modules = {module_name(package_dir, p): p for p in package_dir.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    origin = node.module or ""
                # `from pkg import sub` imports the submodule when one exists
                subs = [f"{origin}.{alias.name}" for alias in node.names]
                found = [s for s in subs if s in modules]
                targets = found if found and len(found) == len(subs) else [origin, *found]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
