"""The Unsloth backend in its own environment: unsloth 2026.10.9 caps trl, transformers and
datasets below the Transformers backend's pins, so its projects install into a separate virtual
environment (`.venvs/unsloth`, built once by an Unsloth project's own `make install` plus every
task's extra packages, under a file lock so that parallel workers share it, and reused while the
pins are unchanged; the tests only read it). There, on CPU:

* the pins hold and `import unsloth` works (torchvision removed by `make install`);
* every Unsloth recipe the template can bake parses with an Unsloth project's parser;
* a project per task (the shared data, rewards and task code on this stack) passes its whole
  `make test` (the learning test included) and `make smoke`; a project per single-GPU tier
  passes `make test` without the slow tests and `make smoke` (its recipe, smoke-overridden).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, assert_ok, bake_ok, run_in
from matrix import VALID

from grpo_template import recipe, stack, tasks
from grpo_template.answers import Answers
from grpo_template.bake import recipe_header

pytestmark = pytest.mark.slow

VENV = ROOT / ".venvs" / "unsloth"
STAMP = VENV / "grpo-template-stack.json"
TASKS = ("math", "code", "json", "classification", "custom")
GPU_TIERS = ("16GB", "24GB", "48GB", "80GB", "141GB")
# Every task on the cpu tier, and the default task on every single-GPU tier.
PROJECTS = {f"{task}-cpu": {"task_type": task, "gpu_tier": "cpu"} for task in TASKS} | {
    f"math-{tier}": {"task_type": "math", "gpu_tier": tier} for tier in GPU_TIERS
}


def venv_env() -> dict:
    return {"PATH": f"{VENV / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(VENV)}


def make(project: Path, *targets: str, extra=()):
    python = str(VENV / "bin" / "python")
    command = ["make", *targets, f"PYTHON={python}", *extra]
    return run_in(project, *command, timeout=1800, env=venv_env())


def fresh_venv() -> None:
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)


def task_extras() -> list[str]:
    return sorted({r for task in tasks.TASKS.values() for r in task.extra_dependencies})


@pytest.fixture(scope="session")
def unsloth_python(cookies_session) -> str:
    """The Unsloth environment: an Unsloth project's `make install`, then every task's extras."""
    from filelock import FileLock

    python = str(VENV / "bin" / "python")
    wanted = json.dumps([*stack.dependencies("unsloth", "none"), *task_extras()])
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(VENV) + ".lock"):
        if STAMP.is_file() and STAMP.read_text() == wanted:
            return python
        project = bake_ok(cookies_session, backend="unsloth", gpu_tier="cpu", project_slug="u-env")
        fresh_venv()
        assert_ok(make(project, "install"))
        extras = run_in(project, python, "-m", "pip", "install", *task_extras(), timeout=900)
        assert_ok(extras)
        STAMP.write_text(wanted)
    return python


CHECK_PINS = """
import json, sys
from importlib import metadata
from packaging.requirements import Requirement
import unsloth  # fails if torchvision (a CUDA build) is still installed
bad = []
for line in json.loads(sys.argv[1]):
    req = Requirement(line)
    if not req.specifier.contains(metadata.version(req.name), prereleases=True):
        bad.append(f"{req.name} {metadata.version(req.name)} not in {req.specifier}")
print(json.dumps(bad))
"""


def test_unsloth_environment_holds_the_pins(unsloth_python):
    pins = json.dumps([*stack.UNSLOTH_STACK, *stack.COMMON])
    result = subprocess.run(
        [unsloth_python, "-c", CHECK_PINS, pins], capture_output=True, text=True, timeout=600
    )
    assert_ok(result)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


PARSE_ALL = """
import json, sys
from {pkg}.config import parse_recipe
failures = []
for path in sys.argv[1:]:
    try:
        recipe = parse_recipe(["--config", path, "--use_cpu", "true"])
        assert recipe.backend.max_lora_rank >= recipe.model.lora_r
    except BaseException as err:  # SystemExit included: report every failing recipe
        failures.append(f"{{path}}: {{type(err).__name__}}: {{err}}")
print(json.dumps(failures))
"""


@pytest.mark.parametrize("task", TASKS)
def test_unsloth_recipes_load_into_the_unsloth_stack(
    unsloth_python, cookies_session, task, tmp_path
):
    """Every Unsloth recipe of this task (all models and single-GPU tiers) parses with the
    installed trl 1.15 / transformers 5.17 and the project's own dataclasses."""
    slug = f"u-parse-{task}"
    project = bake_ok(cookies_session, backend="unsloth", task_type=task, project_slug=slug)
    combos = [c for c in VALID if c["backend"] == "unsloth" and c["task_type"] == task]
    paths = []
    for number, combo in enumerate(combos):
        answers = Answers.from_context(combo)
        path = tmp_path / f"recipe-{number}.yaml"
        path.write_text(recipe.render(answers.plan, answers.tracker, recipe_header(answers)))
        paths.append(str(path))
    script = PARSE_ALL.format(pkg=slug.replace("-", "_"))
    result = run_in(project, unsloth_python, "-c", script, *paths, env=venv_env(), timeout=900)
    assert_ok(result)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
    assert len(paths) >= 10


@pytest.mark.parametrize("variant", list(PROJECTS))
def test_unsloth_project_passes_make_test_and_make_smoke(unsloth_python, cookies, variant):
    project = bake_ok(cookies, backend="unsloth", **PROJECTS[variant])
    assert (project / "tests" / "test_unsloth.py").is_file()
    # Unsloth projects train in one process: the 2-process DDP test is not theirs to run. Each
    # task's cpu project runs every other test (learning, kill-and-resume included); a GPU
    # tier changes only the recipe, so its project skips the slow tests.
    if PROJECTS[variant]["gpu_tier"] == "cpu":
        args = 'ARGS=-m "not distributed" -p no:cacheprovider'
    else:
        args = 'ARGS=-m "not distributed and not slow" -p no:cacheprovider'
    assert_ok(make(project, "test", extra=[args]))
    result = make(project, "smoke")
    assert_ok(result)
    assert "merge check passed" in result.stdout
    merged = project / "outputs" / "smoke" / "merged"
    assert (merged / "config.json").is_file()
    assert result.stdout.split("### completion", 1)[1].strip()


# Architectures whose LoRA targets differ: a regex over the language model of a multimodal
# model (a regex wrapped in a list matched nothing once), and fused attention/MLP projections.
FAMILIES = {
    "gemma3-multimodal": {"model": "google/gemma-3-4b-it", "gpu_tier": "48GB"},
    "phi3-fused-projections": {"model": "microsoft/Phi-4-mini-instruct", "gpu_tier": "80GB"},
    "llama": {"model": "meta-llama/Llama-3.2-1B-Instruct", "gpu_tier": "24GB"},
}


@pytest.mark.parametrize("variant", list(FAMILIES))
def test_unsloth_smoke_pipeline_for_other_architectures(unsloth_python, cookies, variant):
    project = bake_ok(cookies, backend="unsloth", **FAMILIES[variant])
    result = make(project, "smoke")
    assert_ok(result)
    assert "merge check passed" in result.stdout
