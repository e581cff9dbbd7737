"""Which files a generated project holds: the template's own (pruned to the answers) and the
starters copied from grpo-kit.

The template folder holds every variant (cookiecutter-data-science style); `prune` deletes the
files of the options not chosen. The project's own Python (its task and rewards) and its sample
data are the kit's starters (`grpo_kit/starters/`), tested in the kit and copied in by
`copy_starters`, so each exists once in this repository and a project starts from the very files
the kit's suite checks. After generation they are the user's. The train, merge and infer scripts
are not copied: the kit runs its own flow, and `grpo eject train|merge|infer` gives a project
the starter script that does the same, declared in its pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import kit, memory, tuning
from .answers import Answers

MULTI_GPU = ("multi-gpu", "multi-node")

# One accelerate config per distribution strategy the tuning plans (tuning.accelerate_config), and
# FSDP2 for users who prefer it.
ACCELERATE = (
    *(tuning.accelerate_config(strategy) for strategy in memory.SHARDED),
    *tuning.DEEPSPEED_CONFIGS,
    "configs/accelerate/fsdp2.yaml",
)
TASKS = ("math", "code", "json", "classification", "custom", "tools", "procedural", "judge")

# (question, answers that keep the files, files relative to the project root; {pkg} = package).
VARIANTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    *(("task_type", (task,), (f"tests/test_{task}_rewards.py",)) for task in TASKS),
    ("gpu_tier", MULTI_GPU, ACCELERATE),
    ("gpu_tier", ("multi-node",), ("scripts/multinode.sbatch",)),
)
# (question, answer, from, to): a variant file that takes a general name when chosen.
RENAMES = tuple(
    ("task_type", task, f"tests/test_{task}_rewards.py", "tests/test_rewards.py") for task in TASKS
)

# The kit's starters a project is generated with: (source under grpo_kit/starters, target).
PACKAGE_FILES = ("task", "rewards")
SHARED_DATA = ("sample_preferences.jsonl",)  # every task's project: the reward-model pairs
TASK_DATA = {"tools": ("sample_corpus.jsonl",)}  # beside the task's sample file


def starter_files(answers: Answers) -> dict[str, Path]:
    """{path in the project: the kit starter it is copied from} for these answers."""
    task = answers.task_type
    pkg = answers.package_name
    source = kit.STARTERS_DIR
    files = {f"src/{pkg}/{name}.py": source / task / f"{name}.py" for name in PACKAGE_FILES}
    sample = Path(answers.task.sample_data)
    labelled = (Path(answers.task.labelled).name,) if answers.task.labelled else ()
    data = (sample.name, *SHARED_DATA, *TASK_DATA.get(task, ()), *labelled)
    files |= {f"data/{name}": source / "data" / name for name in data}
    return files


def copy_starters(project_dir: Path, answers: Answers) -> list[str]:
    """Copy the kit's starters into the project, byte for byte; returns what was written."""
    written = []
    for relative, source in starter_files(answers).items():
        target = project_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(relative)
    return written


def variant_paths(answers: Answers) -> tuple[set[str], set[str]]:
    """(files to keep, files to delete) among the variant files."""
    keep, drop = set(), set()
    for question, values, paths in VARIANTS:
        chosen = getattr(answers, question) in values
        for path in paths:
            (keep if chosen else drop).add(path.format(pkg=answers.package_name))
    return keep, drop - keep


def prune(project_dir: Path, answers: Answers) -> list[str]:
    """Delete the files of options not chosen (and folders left empty), give the chosen variants
    their general names, then copy the kit's starters in; returns what was removed."""
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
            (project_dir / source).replace(project_dir / target)
    copy_starters(project_dir, answers)
    return removed
