"""The kit's shape: no import cycle (lazy imports included), imports that point one way (the
commands sit on the library, the library never reaches up into them), and the modules a template
or a project's task imports load no machine-learning library (Unsloth must come first)."""

import json
import subprocess
import sys
from pathlib import Path

import grpo_kit
from grpo_kit.imports import cycles, import_graph

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
