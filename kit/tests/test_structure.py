"""The kit's shape: no import cycle (lazy imports and imports by a written name included),
imports that point one way (the commands sit on the library, the library never reaches up into
them), the declared API (`grpo_kit.api`) that starters and ejectable scripts keep to, and the
modules a template or a project's task imports load no machine-learning library (Unsloth must
come first)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import grpo_kit
import pytest
from grpo_kit.api import PUBLIC_MODULES
from grpo_kit.imports import cycles, import_graph, names_used

PACKAGE = Path(grpo_kit.__file__).resolve().parent
# Modules that run things: they may import the library; the library imports none of them.
TOP = ("grpo_kit.cli", "grpo_kit.__main__", "grpo_kit.commands", "grpo_kit.testing")
STARTERS = "grpo_kit.starters"


def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE)


def is_top(module: str) -> bool:
    return any(module == t or module.startswith(t + ".") for t in TOP)


def test_no_import_cycles():
    found = graph()
    assert len(found) > 40
    assert cycles(found) == []


def test_the_library_never_imports_the_commands_the_cli_or_the_starters():
    for module, targets in graph().items():
        if is_top(module) or module.startswith(STARTERS):
            continue
        upward = sorted(t for t in targets if is_top(t) or t.startswith(STARTERS))
        assert not upward, (module, upward)


def test_the_starters_import_only_the_public_library():
    """A project's task, rewards and scripts are copies of the starters: they may use the kit's
    library, never its commands (which they are run by)."""
    for module, targets in graph().items():
        if module.startswith(STARTERS):
            outside = {t for t in targets if not t.startswith(STARTERS)}
            assert not any(is_top(t) for t in outside), (module, outside)


LIGHT = """
import json, sys
heavy = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "math_verify",
         "jsonschema", "unsloth", "sympy", "bm25s")
import grpo_kit.project, grpo_kit.recipe, grpo_kit.task, grpo_kit.rewards, grpo_kit.backends
import grpo_kit.sandbox, grpo_kit.environments, grpo_kit.cli
for task in ("math", "code", "json", "classification", "custom", "tools"):
    __import__(f"grpo_kit.starters.{task}.task")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def test_reading_a_task_or_a_recipe_loads_no_ml_library():
    """The template reads the starters without these installed, and with the Unsloth backend
    `import unsloth` must precede trl and transformers: nothing here may import them early."""
    result = subprocess.run([sys.executable, "-c", LIGHT], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


# --- the declared API --------------------------------------------------------------------------


def source_of(module: str) -> Path:
    relative = Path(*module.split(".")[1:])
    package = PACKAGE / relative / "__init__.py"
    return package if package.is_file() else PACKAGE / relative.with_suffix(".py")


def declared_names(module: str) -> tuple[list[str], set[str]]:
    """(the module's `__all__`, the names it defines at top level), read from its source (the
    Unsloth backend cannot be imported without unsloth)."""
    tree = ast.parse(source_of(module).read_text(encoding="utf-8"))
    declared, defined = None, set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                defined |= {n.id for n in names if isinstance(n, ast.Name)}
                if isinstance(target, ast.Name) and target.id == "__all__":
                    declared = ast.literal_eval(node.value)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
    assert declared is not None, f"{module} declares no __all__"
    return declared, defined


def public_api() -> dict[str, set[str]]:
    return {module: set(declared_names(module)[0]) for module in PUBLIC_MODULES}


def api_problems(path: Path, source: str | None = None) -> list[str]:
    """What a file uses of grpo_kit outside the declared API (module not public, or a name not
    in its `__all__`)."""
    api, modules = public_api(), set(graph())
    text = source if source is not None else path.read_text(encoding="utf-8")
    problems = []
    for module, name in sorted(names_used(text, "grpo_kit", modules), key=str):
        if module == "grpo_kit" and name is None:
            continue
        if module not in api:
            problems.append(f"{path.name}: {module}" + (f".{name}" if name else ""))
        elif name is not None and name not in api[module]:
            problems.append(f"{path.name}: {module}.{name} (not in its __all__)")
    return problems


def test_the_api_page_names_every_public_module():
    docs = Path(__file__).resolve().parents[1] / "src" / "grpo_kit" / "docs"
    page = (docs / "api.md").read_text(encoding="utf-8")
    for module in PUBLIC_MODULES:
        short = module.rsplit(".", 1)[1] if module.startswith("grpo_kit.backends.") else module
        assert f"`{short}`" in page or f"`.{short}`" in page, module


def test_every_public_module_declares_what_it_exports():
    assert len(PUBLIC_MODULES) == len(set(PUBLIC_MODULES))
    for module in PUBLIC_MODULES:
        assert module in graph(), module
        declared, defined = declared_names(module)
        assert declared and len(declared) == len(set(declared)), module
        assert set(declared) <= defined, (module, sorted(set(declared) - defined))


RELEASED = Path(__file__).resolve().parent / "data" / "release-0.2.0"  # the previous release's
STARTER_FILES = sorted((PACKAGE / "starters").rglob("*.py")) + sorted(RELEASED.rglob("*.py"))


def shown(path: Path) -> str:
    base = PACKAGE if path.is_relative_to(PACKAGE) else RELEASED.parent
    return str(path.relative_to(base))


@pytest.mark.parametrize("path", STARTER_FILES, ids=shown)
def test_the_starters_and_the_ejectable_scripts_use_only_the_declared_api(path):
    """Every task's task.py and rewards.py, the train/merge/infer scripts `grpo eject` copies,
    and the previous release's project files (its scripts and tests: the names it used stay
    declared) import only public modules, and of them only names in their `__all__`."""
    assert api_problems(path) == []


def test_the_api_check_sees_a_private_name_and_a_private_module():
    """The check above can fail: an internal name through a public module, a name missing from
    `__all__`, a private module, and one imported by a written name."""
    source = (
        "import importlib\n"
        "from grpo_kit import training\n"
        "from grpo_kit.recipe import parse_recipe\n"
        "from grpo_kit.verify.math import _unbox\n"
        "training.split_rows(None)\n"
        "importlib.import_module('grpo_kit.callbacks.health')\n"
    )
    assert api_problems(Path("bad.py"), source) == [
        "bad.py: grpo_kit.callbacks.health",
        "bad.py: grpo_kit.recipe.parse_recipe",
        "bad.py: grpo_kit.training.split_rows (not in its __all__)",
        "bad.py: grpo_kit.verify.math._unbox (not in its __all__)",
    ]


def test_the_ejectable_scripts_read_on_one_screen():
    """train.py, merge.py and infer.py read top to bottom (lightning-hydra's train.py)."""
    for path in sorted((PACKAGE / "starters" / "scripts").glob("[!_]*.py")):
        assert len(path.read_text(encoding="utf-8").splitlines()) < 80, path.name


def test_imports_by_a_written_name_are_edges_of_the_graph(tmp_path):
    """`importlib.import_module("pkg.b")` imports pkg.b, and `import_module(f"pkg.sub.{x}")`
    every module under pkg.sub: the structure tests see run-time imports (the kit's library
    once imported the starters this way, unseen)."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__", "a", "b", "sub/__init__", "sub/c", "sub/d"):
        (package / f"{name}.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text(
        "import importlib\n"
        "def load(name):\n"
        "    importlib.import_module('pkg.b')\n"
        "    return importlib.import_module(f'pkg.sub.{name}')\n",
        encoding="utf-8",
    )
    assert import_graph(package)["pkg.a"] == {"pkg", "pkg.b", "pkg.sub.c", "pkg.sub.d"}
