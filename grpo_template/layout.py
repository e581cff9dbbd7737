"""Which files of the project template belong to which answer; the rest are pruned after baking.

The template folder holds every variant (cookiecutter-data-science style); `prune` deletes the
files of the options not chosen, so a project contains only code it uses.
"""

from __future__ import annotations

from pathlib import Path

from . import catalog, memory, tuning
from .answers import Answers


# (question, answer) -> files (relative to the project root; {pkg} = package name) kept only
# when that answer was given.
def _task_files(task: str, *extra: str) -> tuple[str, ...]:
    return (
        f"src/{{pkg}}/tasks/{task}_task.py",
        f"src/{{pkg}}/rewards/{task}_rewards.py",
        f"data/sample_{task}.jsonl",
        f"tests/test_{task}_rewards.py",
        *extra,
    )


MULTI_GPU = ("multi-gpu", "multi-node")
# The offline tiny model's chat template where TRL ships none: the checkpoint's own (vendored),
# or a stand-in ChatML template for a custom model, whose template is unknown when baking.
CHAT_TEMPLATE_FILE = "src/{{pkg}}/tools/chat_templates/{name}.jinja"
STAND_IN_TEMPLATE = "stand_in"


def _chat_template_variants() -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]:
    def models(name: str) -> tuple[str, ...]:
        return tuple(h for h, m in catalog.CATALOG.items() if m.chat_template == name)

    return (
        *(
            ("model", models(name), (CHAT_TEMPLATE_FILE.format(name=name),))
            for name in catalog.VENDORED_TEMPLATES
        ),
        ("model", (catalog.CUSTOM,), (CHAT_TEMPLATE_FILE.format(name=STAND_IN_TEMPLATE),)),
    )


# One accelerate config per distribution strategy the tuning plans (tuning.accelerate_config), and
# FSDP2 for users who prefer it.
ACCELERATE = (
    *(tuning.accelerate_config(strategy) for strategy in memory.SHARDED),
    "configs/accelerate/fsdp2.yaml",
)

# (question, answers that keep the files, files relative to the project root; {pkg} = package).
VARIANTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("task_type", ("math",), _task_files("math")),
    ("task_type", ("code",), _task_files("code", "tests/test_code_pythons.py")),
    # The code sandbox: the code task's tests and the tools task's run_python run in it.
    (
        "task_type",
        ("code", "tools"),
        (
            "src/{pkg}/sandbox/__init__.py",
            "src/{pkg}/sandbox/arguments.py",
            "src/{pkg}/sandbox/harness.py",
            "src/{pkg}/sandbox/isolation.py",
            "tests/test_sandbox.py",
        ),
    ),
    ("task_type", ("json",), _task_files("json")),
    ("task_type", ("classification",), _task_files("classification")),
    ("task_type", ("custom",), _task_files("custom")),
    (
        "task_type",
        ("tools",),
        _task_files(
            "tools",
            "src/{pkg}/environments/__init__.py",
            "src/{pkg}/environments/base.py",
            "src/{pkg}/environments/episodes.py",
            "src/{pkg}/environments/python_env.py",
            "src/{pkg}/environments/lookup_env.py",
            "data/sample_corpus.jsonl",
            "tests/test_environments.py",
            "tests/test_agent_learning.py",
        ),
    ),
    # The tools task's Python environment reads final answers as the math task does.
    ("task_type", ("math", "tools"), ("src/{pkg}/rewards/math_rewards.py",)),
    ("gpu_tier", MULTI_GPU, (*ACCELERATE, "src/{pkg}/training/launch.py", "tests/test_launch.py")),
    ("gpu_tier", ("multi-node",), ("scripts/multinode.sbatch",)),
    ("backend", ("unsloth",), ("src/{pkg}/modeling_unsloth.py", "tests/test_unsloth.py")),
    *_chat_template_variants(),
)

# (question, answer, from, to): a variant file that replaces the default one when chosen.
RENAMES = (("backend", "unsloth", "src/{pkg}/modeling_unsloth.py", "src/{pkg}/modeling.py"),)


def variant_paths(answers: Answers) -> tuple[set[str], set[str]]:
    """(files to keep, files to delete) among the variant files."""
    keep, drop = set(), set()
    for question, values, paths in VARIANTS:
        chosen = getattr(answers, question) in values
        for path in paths:
            (keep if chosen else drop).add(path.format(pkg=answers.package_name))
    return keep, drop - keep


def prune(project_dir: Path, answers: Answers) -> list[str]:
    """Delete the files of options not chosen (and folders left empty); returns what went."""
    _, drop = variant_paths(answers)
    removed = []
    for relative in sorted(drop):
        path = project_dir / relative
        if path.exists():
            path.unlink()
            removed.append(relative)
    for folder in sorted({(project_dir / r).parent for r in removed}, reverse=True):
        if folder != project_dir and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    for question, value, source, target in RENAMES:
        if getattr(answers, question) == value:
            pkg = answers.package_name
            (project_dir / source.format(pkg=pkg)).replace(project_dir / target.format(pkg=pkg))
            removed.append(target.format(pkg=pkg))
    return removed
