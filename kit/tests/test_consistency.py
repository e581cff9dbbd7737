"""issue 41: `grpo check` (grpo_kit.consistency) names what a half-applied regeneration leaves:
task.py and rewards.py of different tasks, `*.rej` files, unmerged files, a task name that is not
`.cruft.json`'s, a recipe naming a reward rewards.py lacks, and a configs/local.yaml left over
from the task before a switch; that leftover is also named where the data fails to load (not
"label '84' is not in labels [...]") and where its keys are another task's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import STARTERS, chdir, make_project
from grpo_kit import consistency
from grpo_kit.errors import DataError, UserError

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
MATH_ROWS = [{"problem": "What is 80 + 4?", "final": "84"}, {"problem": "2 + 3?", "final": "5"}]
MATH_LOCAL = "dataset_name: data/mine.jsonl\nprompt_column: problem\nanswer_column: final\n"


def cruft_json(root: Path, task: str) -> None:
    record = {"template": "x", "commit": "0", "context": {"cookiecutter": {"task_type": task}}}
    (root / ".cruft.json").write_text(json.dumps(record, indent=2) + "\n")


def git(root: Path, *args: str) -> None:
    done = subprocess.run([*GIT, *args], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def project(tmp_path: Path, task: str, package: str) -> Path:
    root = make_project(tmp_path / package, task, package=package)
    cruft_json(root, task)
    return root


def test_the_data_fields_are_the_recipes():
    from grpo_kit import project, recipe

    assert consistency.DATA_FIELDS == recipe.DATA_FIELDS
    assert consistency.PYPROJECT == project.PYPROJECT


def test_a_generated_project_agrees_with_itself(tmp_path):
    root = project(tmp_path, "math", "agree_math")
    assert consistency.problems(root) == []


def test_a_half_applied_task_switch_is_named(tmp_path):
    """The issue's project: task.py became classification, rewards.py stayed math with the
    classification hunk in rewards.py.rej."""
    root = project(tmp_path, "classification", "half_applied")
    shutil.copy(STARTERS / "math" / "rewards.py", root / "src/half_applied/rewards.py")
    (root / "src/half_applied/rewards.py.rej").write_text("@@ -1 +1 @@\n-a\n+b\n")
    found = consistency.problems(root)
    assert len(found) == 2, found
    assert found[0].startswith("src/half_applied/rewards.py.rej: a hunk the update could not place")
    assert "task.py uses label_correctness, label_in_set, answer_tag_format" in found[1]
    assert "does not define" in found[1]


def test_a_rej_file_anywhere_is_named_and_git_and_venvs_are_not_walked(tmp_path):
    root = project(tmp_path, "math", "rej_anywhere")
    (root / "data" / "deep").mkdir()
    (root / "data/deep/sample.jsonl.rej").write_text("x")
    (root / ".venv").mkdir()
    (root / ".venv/x.rej").write_text("x")
    assert [p.name for p in consistency.rejected_hunks(root)] == ["sample.jsonl.rej"]
    assert any("data/deep/sample.jsonl.rej" in line for line in consistency.problems(root))


def test_the_task_name_must_be_crufts_task_type(tmp_path):
    root = project(tmp_path, "math", "wrong_name")
    cruft_json(root, "code")
    (found,) = consistency.problems(root)
    assert "is the math task, .cruft.json's task_type is code" in found


def test_a_recipe_reward_name_rewards_py_lacks(tmp_path):
    root = project(tmp_path, "math", "recipe_reward")
    (root / "configs/local.yaml").write_text("reward_funcs: [math_correctness, label_in_set]\n")
    (found,) = consistency.problems(root)
    assert found.startswith("configs/local.yaml: reward_funcs names label_in_set")


def test_conflict_markers_are_named(tmp_path):
    root = project(tmp_path, "math", "conflicted")
    git(root, "init", "-q")
    commit(root, "generated")
    rewards = root / "src/conflicted/rewards.py"
    rewards.write_text(rewards.read_text() + "<<<<<<< ours\nx = 1\n=======\nx = 2\n>>>>>>> b\n")
    found = consistency.problems(root)
    assert found == ["src/conflicted/rewards.py: not valid Python (conflict markers?); fix it"]


def test_local_yaml_with_another_tasks_fields_or_default_data_is_left_over(tmp_path):
    root = project(tmp_path, "math", "leftover_keys")
    (root / "configs/local.yaml").write_text("labels: [a, b]\nmax_steps: 3\n")
    leftover = consistency.leftover_local(root, "math")
    assert leftover.task == "classification" and "labels" in leftover.why
    (root / "configs/local.yaml").write_text("dataset_name: fancyzhx/ag_news\n")
    assert consistency.leftover_local(root, "math").task == "classification"
    (root / "configs/local.yaml").write_text("max_steps: 3\nlearning_rate: 1.0e-05\n")
    assert consistency.leftover_local(root, "math") is None  # settings fit any task


def test_a_field_the_projects_own_task_declares_is_not_left_over(tmp_path):
    """A custom task that added `labels` to its TaskArguments: its local.yaml is its own."""
    root = project(tmp_path, "custom", "custom_labels")
    task = root / "src/custom_labels/task.py"
    task.write_text(task.read_text().replace(
        '"""EDIT HERE: recipe fields your task needs (they become keys of configs/grpo.yaml)."""',
        '"""Mine."""\n\n    labels: list = None',
    ))  # fmt: skip
    (root / "configs/local.yaml").write_text("labels: [a, b]\n")
    assert consistency.leftover_local(root, "custom") is None
    assert consistency.problems(root) == []


def switched_from_math(tmp_path: Path, package: str) -> Path:
    """A math project whose local.yaml names the user's math data, committed; then switched to
    classification (task.py, rewards.py and .cruft.json), local.yaml kept as it was."""
    root = project(tmp_path, "math", package)
    rows = "".join(json.dumps(row) + "\n" for row in MATH_ROWS)
    (root / "data/mine.jsonl").write_text(rows)
    (root / "configs/local.yaml").write_text(MATH_LOCAL)
    git(root, "init", "-q")
    commit(root, "my math data")
    for name in ("task.py", "rewards.py"):
        shutil.copy(STARTERS / "classification" / name, root / "src" / package / name)
    cruft_json(root, "classification")
    return root


def test_local_yaml_committed_under_another_task_is_left_over(tmp_path):
    root = switched_from_math(tmp_path, "leftover_history")
    (found,) = consistency.problems(root)
    assert found.startswith("configs/local.yaml is left over from the math task (committed in ")
    assert "`mv configs/local.yaml configs/local.math.yaml`" in found
    commit(root, "to classification")  # committing the switch changes nothing
    assert consistency.leftover_local(root, "classification").task == "math"
    (root / "configs/local.yaml").write_text(MATH_LOCAL + "labels: [a, b]\n")
    assert consistency.leftover_local(root, "classification") is None  # being rewritten


def test_loading_the_data_names_the_leftover_not_the_label(tmp_path):
    """The issue: "label '84' is not in labels ['World', ...]" became the leftover's line."""
    from grpo_kit import data
    from grpo_kit.project import load
    from grpo_kit.recipe import parse_recipe

    root = switched_from_math(tmp_path, "leftover_load")
    with chdir(root):
        recipe = parse_recipe(["--config", "configs/grpo.yaml"], read_only=True,
                              project=load(root))  # fmt: skip
        with pytest.raises(DataError) as raised:
            data.load_training_rows(recipe.script, recipe.task, recipe.project.task)
    message = str(raised.value)
    assert message.startswith("configs/local.yaml is left over from the math task")
    assert "move it aside" in message and "label '84' is not in labels" in message
    assert "\n" not in message


def test_a_recipe_with_another_tasks_field_names_the_leftover(tmp_path):
    from grpo_kit.project import load
    from grpo_kit.recipe import parse_recipe

    root = project(tmp_path, "math", "leftover_field")
    (root / "configs/local.yaml").write_text("labels: [bug, feature]\n")
    with chdir(root), pytest.raises(UserError) as raised:
        parse_recipe(["--config", "configs/grpo.yaml"], read_only=True, project=load(root))
    assert str(raised.value).startswith("configs/local.yaml is left over from the classification")


def test_grpo_check_prints_and_exits(tmp_path, capsys):
    from grpo_kit.cli import main

    root = project(tmp_path, "math", "check_cli")
    with chdir(root):
        assert main(["check"]) == 0
    assert "check: the project agrees with itself (the math task)" in capsys.readouterr().out
    (root / "src/check_cli/task.py.rej").write_text("x")
    with chdir(root):
        assert main(["check"]) == 1
    assert "check: src/check_cli/task.py.rej" in capsys.readouterr().err


def test_a_half_applied_project_fails_in_one_line_naming_the_mismatch(tmp_path, monkeypatch):
    """Not `AttributeError: module '...rewards' has no attribute 'label_correctness'` in a
    traceback: the command's one line names what disagrees."""
    from grpo_kit.project import load

    root = project(tmp_path, "classification", "half_import")
    shutil.copy(STARTERS / "math" / "rewards.py", root / "src/half_import/rewards.py")
    (root / "src/half_import/rewards.py.rej").write_text("x")
    monkeypatch.syspath_prepend(str(root / "src"))
    with pytest.raises(UserError) as raised:
        load(root).task  # noqa: B018
    message = str(raised.value)
    assert message.startswith("half_import.task does not import (module 'half_import.rewards'")
    assert "rewards.py.rej: a hunk the update could not place" in message
    assert "(1 more: grpo check lists them)" in message
