"""The import graph of a package, read from its source (no import runs), and its cycles: how
the kit's suite checks that its own imports point one way (and the template's suite the
template's), and how a project can check its own. An import by name counts as an import when
the name is written in the source: `importlib.import_module("pkg.mod")` (or `__import__`), and
`import_module(f"pkg.sub.{name}")` as an import of every module under `pkg.sub`.

`names_used` reads which names of a package a file uses (`from pkg.mod import name`,
`mod.name` through an imported module): how the kit's suite checks that the starters and every
generated file use only the kit's declared API (`grpo_kit.api`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

__all__ = ["cycles", "import_graph", "imported_by_name", "module_name", "names_used"]

IMPORT_FUNCTIONS = ("import_module", "__import__")


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
            elif isinstance(node, ast.Call):
                targets = imported_by_name(node, modules)
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def imported_by_name(call: ast.Call, modules: Iterable[str]) -> list[str]:
    """The modules a call imports by a name written in the source: `import_module("a.b")` or
    `__import__("a.b")` (a, a.b), and `import_module(f"a.b.{x}")` (every module under a.b)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in IMPORT_FUNCTIONS or not call.args:
        return []
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        parts = first.value.split(".")
        return [".".join(parts[: i + 1]) for i in range(len(parts))]
    if isinstance(first, ast.JoinedStr) and first.values:
        head = first.values[0]
        if isinstance(head, ast.Constant) and str(head.value).endswith("."):
            prefix = str(head.value)
            return sorted(m for m in modules if m.startswith(prefix))
    return []


def names_used(source: str, package: str, modules: Iterable[str]) -> set[tuple[str, str | None]]:
    """What a file uses of `package` (whose modules are `modules`): (module, name) for a name
    imported from a module or read as an attribute of an imported module, (module, None) for a
    module imported as such. Relative imports (the file's own package) are not counted."""
    modules = set(modules)
    used: set[tuple[str, str | None]] = set()
    aliases: dict[str, str] = {}  # local name -> module of `package`

    def ours(name: str) -> bool:
        return name == package or name.startswith(package + ".")

    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and ours(node.module or ""):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:
                    used.add((sub, None))
                    aliases[alias.asname or alias.name] = sub
                else:
                    used.add((node.module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if ours(alias.name):
                    used.add((alias.name, None))
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.Call):
            named = imported_by_name(node, modules)  # a written name: its parents come first
            first = node.args[0] if named else None
            if isinstance(first, ast.Constant):
                named = named[-1:]
            used |= {(m, None) for m in named if ours(m)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        chain, inner = [node.attr], node.value
        while isinstance(inner, ast.Attribute):
            chain.insert(0, inner.attr)
            inner = inner.value
        if not isinstance(inner, ast.Name) or inner.id not in aliases:
            continue
        module = aliases[inner.id]
        for attr in chain:
            if f"{module}.{attr}" in modules:
                module = f"{module}.{attr}"
                used.add((module, None))
                continue
            used.add((module, attr))
            break
    return used


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
