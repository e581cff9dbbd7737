"""The template's shape: its knowledge package has no import cycle, and it generates a project
on a machine with only Cookiecutter installed (the README's first command): it reads grpo-kit's
tasks and defaults from this checkout without math-verify, jsonschema, trl or torch."""

import ast
import subprocess
import sys
from pathlib import Path

from conftest import ROOT
from grpo_kit.imports import cycles, import_graph

BARE_BAKE = """
import sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"math_verify", "jsonschema", "trl", "transformers", "torch",
                                  "datasets", "peft", "accelerate", "sympy", "bm25s"}:
            raise ModuleNotFoundError(f"No module named {name!r} (absent in this check)")
        return None

sys.meta_path.insert(0, Absent())
from cookiecutter.main import cookiecutter

for task in ("math", "code", "json", "classification", "custom", "tools"):
    cookiecutter(sys.argv[1], no_input=True, output_dir=sys.argv[2] + "/" + task,
                 extra_context={"task_type": task})
print("baked")
"""


def test_no_import_cycles_in_the_template_package():
    graph = import_graph(ROOT / "grpo_template")
    assert len(graph) > 15
    assert cycles(graph) == []


def test_the_template_generates_every_task_with_only_cookiecutter(tmp_path: Path):
    """The hooks run in their own processes; this checks the rendering, where the knowledge
    package reads the kit's starters (the hooks import the same modules)."""
    result = subprocess.run(
        [sys.executable, "-c", BARE_BAKE, str(ROOT), str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for task in ("math", "code", "json", "classification", "custom", "tools"):
        assert (tmp_path / task / "my-grpo-project" / "src/my_grpo_project/task.py").is_file()


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
