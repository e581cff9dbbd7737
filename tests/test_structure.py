"""The template's shape: its knowledge package has no import cycle, it generates a project on a
machine with only Cookiecutter installed (the README's first command): it reads grpo-kit's
tasks and defaults from this checkout without math-verify, jsonschema, trl or torch, and every
generated Python file uses only grpo-kit's declared API (`grpo_kit.api`)."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import grpo_kit
from conftest import ROOT
from grpo_kit.api import PUBLIC_MODULES
from grpo_kit.imports import cycles, import_graph, names_used

TASKS = ("math", "code", "json", "classification", "custom", "tools", "procedural", "judge")

BARE_BAKE = """
import sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"math_verify", "jsonschema", "trl", "transformers", "torch",
                                  "datasets", "peft", "accelerate", "sympy", "bm25s",
                                  "reasoning_gym"}:
            raise ModuleNotFoundError(f"No module named {name!r} (absent in this check)")
        return None

sys.meta_path.insert(0, Absent())
from cookiecutter.main import cookiecutter

for task in ("math", "code", "json", "classification", "custom", "tools", "procedural", "judge"):
    cookiecutter(sys.argv[1], no_input=True, output_dir=sys.argv[2] + "/" + task,
                 extra_context={"task_type": task})
print("baked")
"""


def test_no_import_cycles_in_the_template_package():
    graph = import_graph(ROOT / "grpo_template")
    assert len(graph) > 15
    assert cycles(graph) == []


def kit_api_problems(path: Path, kit_modules: set[str]) -> list[str]:
    """What a generated file uses of grpo_kit beyond the declared API."""
    problems = []
    used = names_used(path.read_text(encoding="utf-8"), "grpo_kit", kit_modules)
    for module, name in sorted(used, key=str):
        if module == "grpo_kit" and name is None:
            continue
        if module not in PUBLIC_MODULES:
            problems.append(f"{path.name}: {module} is not a public module")
        elif name is not None and name not in importlib.import_module(module).__all__:
            problems.append(f"{path.name}: {module}.{name} is not in its __all__")
    return problems


def test_the_template_generates_every_task_with_only_cookiecutter(tmp_path: Path):
    """The hooks run in their own processes; this checks the rendering, where the knowledge
    package reads the kit's starters (the hooks import the same modules). Every task's
    generated Python (src/ and tests/) uses only grpo-kit's declared API."""
    result = subprocess.run(
        [sys.executable, "-c", BARE_BAKE, str(ROOT), str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    kit_modules = set(import_graph(Path(grpo_kit.__file__).resolve().parent))
    for task in TASKS:
        project = tmp_path / task / "my-grpo-project"
        assert (project / "src/my_grpo_project/task.py").is_file()
        files = sorted([*project.glob("src/**/*.py"), *project.glob("tests/**/*.py")])
        assert len(files) >= 5, files
        for path in files:
            assert kit_api_problems(path, kit_modules) == [], (task, path)


def test_the_api_check_of_generated_files_can_fail(tmp_path: Path):
    kit_modules = set(import_graph(Path(grpo_kit.__file__).resolve().parent))
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from grpo_kit import recipe, training\n"
        "from grpo_kit.rewards import resolve, _private\n"
        "training.split_rows(None)\n",
        encoding="utf-8",
    )
    assert kit_api_problems(bad, kit_modules) == [
        "bad.py: grpo_kit.recipe is not a public module",
        "bad.py: grpo_kit.rewards._private is not in its __all__",
        "bad.py: grpo_kit.training.split_rows is not in its __all__",
    ]


def kit_imports(path: Path) -> set[str]:
    """The grpo_kit modules (and names) a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {name for name in found if name.split(".")[0] == "grpo_kit"}


def test_the_template_reads_the_kits_library_not_its_commands():
    """The template's knowledge comes from the kit's library modules; a command module (argument
    parsing, a flow) is no place for a fact the template writes out."""
    found = {
        f"{path.name}: {name}"
        for path in sorted((ROOT / "grpo_template").glob("*.py"))
        for name in kit_imports(path)
        if name.startswith("grpo_kit.commands")
    }
    assert found == set()
    assert kit_imports(ROOT / "grpo_template" / "stages_recipe.py")  # the check sees imports
