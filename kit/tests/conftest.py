"""Fixtures of the kit's suite: projects made from the kit's own starters (no template, no bake).

`make_project(task, ...)` writes a project folder the way grpo-template lays one out: a
pyproject.toml with `[tool.grpo]` (its package is the kit's starter package for the task, so the
starter task and rewards are what run, with the kit's own train, merge and infer; or, with
`package=`, a copy of them in src/<package>/ as a generated project has), the sample data, and a
small CPU recipe in configs/grpo.yaml. The `project_root` fixture is the math project; every test
runs from it unless it changes folder itself (monkeypatch.chdir).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Offline before anything imports huggingface_hub (it reads these once, on import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import grpo_kit  # noqa: E402
from grpo_kit.testing import share_cores_among_test_workers  # noqa: E402

share_cores_among_test_workers()  # before anything imports torch

# Test data: a released project's files among them (test_previous_release.py runs its tests).
collect_ignore = ["data"]

KIT = Path(grpo_kit.__file__).resolve().parent
STARTERS = KIT / "starters"
TASKS = ("math", "code", "json", "classification", "custom", "tools", "procedural", "judge")
# The tasks whose correctness is a program's verdict: the judge task's is a model's opinion,
# asked of a server (its guarantees: test_judge.py, test_judge_server.py; the starter's checks
# and smoke against a real local server: test_judge_starter.py), so the tests that train the
# tiny model and assert what its correctness reward makes of it leave it out.
VERIFIED_TASKS = tuple(task for task in TASKS if task != "judge")
RECIPE = "configs/grpo.yaml"

# A CPU recipe like the cpu tier's, small: LoRA on every linear layer, 2 steps of 4 completions.
CPU_RECIPE = """\
model_name_or_path: kit/test-model
use_cpu: true
dtype: float32
bf16: false
use_peft: true
lora_r: 8
lora_alpha: 16
lora_dropout: 0.0
lora_target_modules: all-linear
output_dir: outputs/run
learning_rate: 1.0e-05
warmup_steps: 0
max_steps: 2
per_device_train_batch_size: 4
gradient_accumulation_steps: 1
num_generations: 4
max_completion_length: 64
max_prompt_tokens: 1024
logging_steps: 1
save_strategy: "no"
report_to: none
optim: adamw_torch
seed: 42
"""
TOOLS_RECIPE = "max_tool_calling_iterations: 3\n"
IGNORED = shutil.ignore_patterns("__pycache__")


def make_project(
    root: Path,
    task: str = "math",
    *,
    backend: str = "transformers",
    tiny_arch: str = "qwen2",
    chat_template: str = "qwen2_5",
    tier: str = 'name = "cpu"',
    recipe: str | None = None,
    extra: str = "",
    package: str | None = None,
) -> Path:
    """A project folder in `root` for the kit's `task` starter; returns `root`. `package`: the
    project's own package in src/ (a copy of the starter's task.py and rewards.py), as
    grpo-template generates it; the name must be new to the session (imports are cached)."""
    root.mkdir(parents=True, exist_ok=True)
    if package is not None:
        shutil.copytree(STARTERS / task, root / "src" / package, ignore=IGNORED)
    else:
        package = f"grpo_kit.starters.{task}"
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "kit-test-{task}"\nversion = "0"\ndependencies = []\n\n'
        f'[tool.grpo]\npackage = "{package}"\nbackend = "{backend}"\n'
        f'model = "kit/test-model"\ntiny_arch = "{tiny_arch}"\nchat_template = "{chat_template}"\n'
        f'reward_tiny_arch = "{tiny_arch}"\nreward_chat_template = "{chat_template}"\n{extra}\n'
        f"[tool.grpo.tier]\n{tier}\n",
        encoding="utf-8",
    )
    shutil.copytree(STARTERS / "data", root / "data", dirs_exist_ok=True)
    (root / "configs").mkdir(exist_ok=True)
    body = recipe if recipe is not None else CPU_RECIPE + (TOOLS_RECIPE if task == "tools" else "")
    (root / RECIPE).write_text(body, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def projects(tmp_path_factory):
    """`projects(task)`: a project of that task (made once per session)."""
    made: dict[str, Path] = {}

    def get(task: str = "math") -> Path:
        if task not in made:
            made[task] = make_project(tmp_path_factory.mktemp(f"project-{task}"), task)
        return made[task]

    return get


@pytest.fixture(scope="session")
def project_root(projects) -> Path:
    return projects("math")


@pytest.fixture(scope="session", autouse=True)
def in_project_root(project_root):
    """Recipe paths (configs/, data/, outputs/) are relative to the project root: the session
    runs from the math project (a test elsewhere uses monkeypatch.chdir, undone after it)."""
    previous = Path.cwd()
    os.chdir(project_root)
    yield project_root
    os.chdir(previous)


@pytest.fixture(autouse=True)
def kit_logs_reach_caplog():
    """A command run earlier in the worker (runner.show_progress_logs) gives the kit's logger its
    own handler and stops it propagating; tests read warnings through caplog, on the root."""
    import logging

    logger = logging.getLogger("grpo_kit")
    before = logger.propagate
    logger.propagate = True
    yield
    logger.propagate = before


def chdir(path: Path):
    """A context manager: run the block in `path` (session fixtures cannot use monkeypatch)."""
    import contextlib

    @contextlib.contextmanager
    def inside():
        previous = Path.cwd()
        os.chdir(path)
        try:
            yield path
        finally:
            os.chdir(previous)

    return inside()


def load(root: Path):
    from grpo_kit.project import load as load_project

    return load_project(root)


def sample_recipe(root: Path):
    """The project's recipe on its sample data (read-only: a GPU recipe parses here too)."""
    from grpo_kit.recipe import Layer, parse_recipe, sample_data_values

    project = load(root)
    with chdir(root):
        sample = Layer(project.task.data.sample, sample_data_values(project))
        return parse_recipe(["--config", RECIPE], extra=sample, read_only=True, project=project)


def rows_of(recipe):
    """The sample data as training rows: chat `prompt`, gold `answer`, the task's columns."""
    from grpo_kit import data

    task = recipe.project.task
    with chdir(recipe.project.root):
        rows = data.load_training_rows(recipe.script, recipe.task, task)
        return data.to_conversations(rows, recipe.script, recipe.task, task)


def training_rows_of(recipe):
    """The rows the training commands use (evaluate's held-out rows left out), as `rows_of`."""
    from grpo_kit import data, heldout

    task = recipe.project.task
    with chdir(recipe.project.root):
        rows = heldout.training_rows(recipe.script, recipe.task, task)
        return data.to_conversations(rows, recipe.script, recipe.task, task)


@pytest.fixture(scope="session")
def project(project_root):
    return load(project_root)


@pytest.fixture(scope="session")
def recipe(project_root):
    return sample_recipe(project_root)


@pytest.fixture(scope="session")
def sample_rows(recipe):
    return rows_of(recipe)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, recipe) -> Path:
    from grpo_kit.offline.tiny_model import project_tiny_model

    with chdir(recipe.project.root):
        return project_tiny_model(tmp_path_factory.mktemp("tiny") / "model", recipe.project)


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def smoke_train(tiny_model_dir, output_dir, *extra, root: Path | None = None):
    """Train the recipe offline (--smoke) on the tiny model into `output_dir`; returns the
    trainer. `root`: the project (default: the current folder's)."""
    from grpo_kit import training

    argv = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir),
            "--output_dir", str(output_dir), *extra]  # fmt: skip
    with chdir(root or Path.cwd()):
        return training.run(None, argv, project=load(Path.cwd()))


@pytest.fixture(scope="session")
def logged_run(tiny_model_dir, tmp_path_factory, project_root) -> Path:
    """A 4-step smoke run that logs every step and its completions (for report, evaluate and
    the run record), with adaptive reward weights on."""
    run_dir = tmp_path_factory.mktemp("logged") / "run"
    smoke_train(
        tiny_model_dir, run_dir, "--max_steps", "4", "--log_completions", "true",
        "--adaptive_reward_weights", "true", root=project_root,
    )  # fmt: skip
    return run_dir
