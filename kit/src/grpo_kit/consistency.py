"""Does the project agree with itself on its task? What `grpo check` (and `make update`, after
`cruft update`) reports: a regeneration that half-applied leaves a task.py of one task beside a
rewards.py of another, `*.rej` files with the hunks it could not place, or a configs/local.yaml
written for the task the project had before.

Everything here reads the project's files as text (Python's `ast`, YAML, JSON): a half-applied
project often cannot even import its task (`task.py` names a reward its `rewards.py` lacks), and
the check must still say what is wrong.

- task.py's `TASK` names its rewards as `rewards.<name>`: each must be defined (or imported) in
  rewards.py; a bare reward name in the recipe (configs/grpo.yaml, configs/local.yaml) likewise.
- task.py's task name (`Task(name=...)`) is `.cruft.json`'s `task_type`, when it is one of the
  template's tasks (a custom task renamed is yours).
- `*.rej` files anywhere in the project (outside `.git` and virtual environments) are named.
- configs/local.yaml is left over from another task (`leftover_local`) when it sets another
  task's own fields (`labels` is classification's), names another task's default data, or (in a
  git repository) its data keys were last committed while `.cruft.json` named another task.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

PYPROJECT = "pyproject.toml"
# recipe.DATA_FIELDS (a test holds them equal): not imported, so that project and recipe, which
# call this module, are not imported by it (no import cycle).
DATA_FIELDS = (
    "dataset_name",
    "dataset_config",
    "dataset_train_split",
    "dataset_test_split",
    "prompt_column",
    "answer_column",
)

LOCAL = Path("configs/local.yaml")
RECIPES = (Path("configs/grpo.yaml"), LOCAL)
STARTERS = Path(__file__).resolve().parent / "starters"
SKIPPED_FOLDERS = {".git", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox"}


@dataclass(frozen=True)
class Leftover:
    task: str  # the task configs/local.yaml was written for
    why: str  # how that shows
    fields: bool = True  # shown by its fields or data (else by git history alone)

    def message(self, current: str) -> str:
        return (
            f"configs/local.yaml is left over from the {self.task} task ({self.why}); the "
            f"project's task is now {current}: move it aside (`mv configs/local.yaml "
            f"configs/local.{self.task}.yaml`) and name your {current} data in a new one "
            "(the manual: `grpo docs data`)"
            + (
                ""
                if self.fields
                else f", or, if it fits the {current} task, edit it (a comment "
                "will do) and commit it"
            )
        )


def _tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def task_name(task_py: Path) -> str | None:
    """The `name=` of the `Task(...)` call in a task.py, read as text."""
    tree = _tree(task_py)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Task":
            for keyword in node.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
    return None


def reward_references(task_py: Path) -> list[str]:
    """The `rewards.<name>` a task.py uses, in order, once each."""
    tree = _tree(task_py)
    found: list[str] = []
    for node in ast.walk(tree) if tree else ():
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "rewards"
            and node.attr not in found
        ):
            found.append(node.attr)
    return found


def defined_names(module_py: Path) -> set[str] | None:
    """The names a module binds at its top level (functions, classes, assignments, imports);
    None when it cannot be read or binds names it does not spell (`import *`)."""
    tree = _tree(module_py)
    if tree is None:
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _task_fields(task_py: Path) -> set[str]:
    """The fields `TaskArguments` declares in a task.py's own class body."""
    tree = _tree(task_py)
    for node in tree.body if tree else ():
        if isinstance(node, ast.ClassDef) and node.name == "TaskArguments":
            return {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    return set()


def _default_data(task_py: Path) -> set[str]:
    """The dataset names a task.py's `DataDefaults` points at (its Hub dataset, its sample)."""
    tree = _tree(task_py)
    found: set[str] = set()
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "DataDefaults":
            for keyword in node.keywords:
                if keyword.arg in ("dataset_name", "sample") and isinstance(
                    keyword.value, ast.Constant
                ):
                    found.add(str(keyword.value.value))
    return found


def template_tasks() -> list[str]:
    """The template's tasks: grpo-kit's starters with a task.py."""
    return sorted(p.parent.name for p in STARTERS.glob("*/task.py"))


def _yaml(path: Path) -> dict:
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return values if isinstance(values, dict) else {}


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def cruft_task(root: Path, text: str | None = None) -> str | None:
    """`task_type` in `.cruft.json` (or in `text`, that file's content at some commit)."""
    try:
        record = json.loads(text if text is not None else (root / ".cruft.json").read_text())
        return str(record["context"]["cookiecutter"]["task_type"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def leftover_local(root: Path, current: str) -> Leftover | None:
    """configs/local.yaml written for another task than `current` (the module docstring)."""
    values = _yaml(root / LOCAL)
    if not values:
        return None
    tasks = [t for t in template_tasks() if t != current]
    own = _task_fields(STARTERS / current / "task.py") if current in template_tasks() else set()
    package = _package(root)  # the project's own fields too (a custom task's added `labels`)
    own |= _task_fields(root / "src" / package / "task.py") if package else set()
    for task in tasks:
        foreign = sorted(set(values) & (_task_fields(STARTERS / task / "task.py") - own))
        if foreign:
            return Leftover(task, f"it sets {', '.join(foreign)}, the {task} task's")
    dataset = str(values.get("dataset_name", ""))
    for task in tasks:
        if dataset and dataset in _default_data(STARTERS / task / "task.py"):
            return Leftover(task, f"its dataset_name {dataset} is the {task} task's")
    data_keys = set(DATA_FIELDS) | {f for t in template_tasks() for f in _task_fields(
        STARTERS / t / "task.py")}  # fmt: skip
    if not data_keys & set(values):
        return None  # settings only (max_steps, learning_rate): they fit any task
    return _leftover_by_history(root, current)


def _leftover_by_history(root: Path, current: str) -> Leftover | None:
    """In git: the task `.cruft.json` named when configs/local.yaml was last committed, if the
    file is unchanged since and that task is not `current`."""
    if _git(root, "diff", "--quiet", "HEAD", "--", str(LOCAL)) is None:
        return None  # changed since (being written for the new task), or no git, or no commit
    commit = (_git(root, "log", "-1", "--format=%H", "--", str(LOCAL)) or "").strip()
    if not commit:
        return None
    then = cruft_task(root, _git(root, "show", f"{commit}:.cruft.json") or "")
    if then and then != current:
        why = f"committed in {commit[:7]}, while the project's task was {then}"
        return Leftover(then, why, fields=False)
    return None


def rejected_hunks(root: Path) -> list[Path]:
    """Every `*.rej` file in the project (what a patch could not place), outside `.git` and
    virtual environments."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS)
        found += [Path(folder, name) for name in sorted(files) if name.endswith(".rej")]
    return found


def _package(root: Path) -> str | None:
    import tomllib

    try:
        table = tomllib.loads((root / PYPROJECT).read_text(encoding="utf-8"))
        return str(table["tool"]["grpo"]["package"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def problems(root: Path | None = None) -> list[str]:
    """What does not agree, one line each (empty: the project agrees with itself)."""
    root = Path.cwd() if root is None else Path(root)
    found = [
        f"{path.relative_to(root)}: a hunk the update could not place; merge it into "
        f"{path.relative_to(root).with_suffix('')} by hand, then delete the .rej file"
        for path in rejected_hunks(root)
    ]
    unmerged = (_git(root, "diff", "--name-only", "--diff-filter=U", "--relative") or "").split()
    found += [
        f"{name}: merge conflicts left by the update (<<<<<<< ... >>>>>>>): keep what is yours "
        f"and the new task's, remove the markers, then git add {name}"
        for name in unmerged
    ]
    package = _package(root)
    if package is None:
        return [*found, f"{root / PYPROJECT} has no [tool.grpo] package: not a grpo project"]
    source = root / "src" / package
    task_py, rewards_py = source / "task.py", source / "rewards.py"
    for module in (task_py, rewards_py):
        if module.is_file() and _tree(module) is None:
            relative = module.relative_to(root)
            if not any(relative == Path(u) for u in unmerged):
                found.append(f"{relative}: not valid Python (conflict markers?); fix it")
    name = task_name(task_py)
    if name is None:
        found.append(f"{task_py.relative_to(root)}: no Task(name=...) found (TASK is read there)")
    recorded = cruft_task(root)
    if name and recorded and name != recorded and name in template_tasks():
        found.append(
            f"{task_py.relative_to(root)} is the {name} task, .cruft.json's task_type is "
            f"{recorded}: the update did not finish; restore the project (git checkout -- . "
            f"&& git clean -fd) and run make update again, or make task.py the {recorded} task"
        )
    defined = defined_names(rewards_py)
    if defined is None and not rewards_py.is_file():
        found.append(f"{rewards_py.relative_to(root)} is missing (task.py imports it)")
    if defined is not None:
        missing = [r for r in reward_references(task_py) if r not in defined]
        if missing:
            found.append(
                f"{task_py.relative_to(root)} uses {', '.join(missing)}, which "
                f"{rewards_py.relative_to(root)} does not define: task.py and rewards.py are "
                f"of different tasks (a half-applied update?); define them (a .rej file "
                f"beside it holds the {name or recorded} task's hunks)"
            )
        for recipe in RECIPES:
            funcs = _yaml(root / recipe).get("reward_funcs") or []
            bare = [f for f in funcs if isinstance(f, str) and "." not in f and f not in defined]
            if bare:
                found.append(
                    f"{recipe}: reward_funcs names {', '.join(bare)}, which "
                    f"{rewards_py.relative_to(root)} does not define: fix the name or remove it"
                )
    current = name if name in template_tasks() else recorded
    if current:
        leftover = leftover_local(root, current)
        if leftover is not None:
            found.append(leftover.message(current))
    return found
