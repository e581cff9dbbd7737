"""One home per fact (issue 37): a task's rewards, weights, system prompt and default data live
in its task.py, which the run reads; a recipe file that shadows them is reported, and
`grpo recipe --explain` names the file behind every value.

Each test makes a project whose package is a copy of the math starter under a name of its own
(the kit's other tests run the starter package itself, which must not be edited), edits its
task.py as a user would, and parses the recipe as `grpo train` does.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import RECIPE, STARTERS, make_project
from grpo_kit import recipe as recipes
from grpo_kit.commands import recipe as recipe_command
from grpo_kit.project import load
from grpo_kit.recipe import LOCAL_RECIPE, parse_recipe


def own_project(tmp_path: Path, monkeypatch, task: str = "math") -> tuple[Path, Path]:
    """A project with its own copy of the `task` starter (a fresh package name, so each test
    imports its own edits); returns (root, its task.py)."""
    package = f"proj_{uuid.uuid4().hex[:8]}"
    root = make_project(tmp_path / "project", task)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(f'"grpo_kit.starters.{task}"', f'"{package}"'),
        encoding="utf-8",
    )
    folder = root / "src" / package
    folder.mkdir(parents=True)
    for name in ("__init__.py", "task.py", "rewards.py"):
        shutil.copyfile(STARTERS / task / name, folder / name)
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root / "src"))
    return root, folder / "task.py"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def train_recipe(*argv: str):
    return parse_recipe(["--config", RECIPE, *argv])


def notes_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("recipe: ")]


@pytest.fixture(autouse=True)
def fresh_reports():
    recipes._report_once.cache_clear()
    yield
    recipes._report_once.cache_clear()


def test_a_weight_changed_in_task_py_changes_the_run(tmp_path, monkeypatch, caplog):
    """The review's walk 2: 2.0 -> 5.0 in task.py used to leave the merged recipe at 2.0."""
    _, task = own_project(tmp_path, monkeypatch)
    edit(task, "rewards.math_correctness,\n            2.0,", "rewards.math_correctness,\n 5.0,")
    with caplog.at_level(logging.WARNING):
        recipe = train_recipe()
    assert recipe.training.reward_weights[0] == 5.0
    assert notes_of(caplog) == []  # nothing shadows it
    assert recipe.origins["reward_weights"].endswith("task.py")


def test_a_reward_added_or_renamed_in_task_py_trains(tmp_path, monkeypatch):
    from grpo_kit import training

    _, task = own_project(tmp_path, monkeypatch)
    rewards = task.parent / "rewards.py"
    rewards.write_text(
        rewards.read_text()
        + "\n\n@reward(low=0.0, high=1.0)\ndef brevity(completion: str, **row) -> float:\n"
        + '    """1.0 for a completion under 400 characters."""\n'
        + "    return 1.0 if len(completion) < 400 else 0.0\n",
        encoding="utf-8",
    )
    edit(
        task,
        "    ),\n    user_message=",
        '        Reward(rewards.brevity, 0.25, "short answers"),\n    ),\n    user_message=',
    )
    recipe = train_recipe()
    assert recipe.script.reward_funcs[-1] == "brevity"
    assert recipe.training.reward_weights[-1] == 0.25
    funcs = training.reward_functions(recipe)
    assert len(funcs) == len(recipe.script.reward_funcs) == 5


def test_the_system_prompt_changed_in_task_py_reaches_the_prompts(tmp_path, monkeypatch):
    from grpo_kit import data

    root, task = own_project(tmp_path, monkeypatch)
    edit(task, '"You solve math problems. ', '"You are a careful calculator. ')
    recipe = parse_recipe(["--config", RECIPE, "--smoke"])
    assert recipe.script.system_prompt.startswith("You are a careful calculator.")
    rows = data.load_training_rows(recipe.script, recipe.task, recipe.project.task)
    prompts = data.to_conversations(rows, recipe.script, recipe.task, recipe.project.task)
    assert prompts[0]["prompt"][0]["content"].startswith("You are a careful calculator.")


def test_data_named_in_task_py_is_what_smoke_reads(tmp_path, monkeypatch):
    """Editing the data mapping in task.py used to make `make smoke` reach for the Hub (the
    generated recipe restated the old dataset): a local file there is read as it is, offline
    too; another Hub dataset there is replaced by the sample offline."""
    root, task = own_project(tmp_path, monkeypatch)
    mine = root / "data" / "mine.jsonl"
    mine.write_text('{"q": "1+1?", "a": "2"}\n{"q": "2+2?", "a": "4"}\n', encoding="utf-8")
    edit(task, 'dataset_name="openai/gsm8k"', 'dataset_name="data/mine.jsonl"')
    edit(task, 'prompt_column="question"', 'prompt_column="q"')
    edit(task, 'answer_column="answer"', 'answer_column="a"')
    for offline in ([], ["--smoke"], ["--trial"]):
        recipe = parse_recipe(["--config", RECIPE, *offline])
        assert recipe.script.dataset_name == "data/mine.jsonl", offline
        assert (recipe.script.prompt_column, recipe.script.answer_column) == ("q", "a")


def test_another_hub_dataset_in_task_py_is_the_sample_offline(tmp_path, monkeypatch):
    root, task = own_project(tmp_path, monkeypatch)
    edit(task, 'dataset_name="openai/gsm8k"', 'dataset_name="someone/other-math"')
    assert train_recipe().script.dataset_name == "someone/other-math"
    smoke = parse_recipe(["--config", RECIPE, "--smoke"])
    assert smoke.script.dataset_name == load(root).task.data.sample


@pytest.mark.parametrize(
    ("where", "values", "named"),
    [
        (LOCAL_RECIPE, {"reward_weights": [1.0, 1.0, 1.0, 1.0]}, "reward_weights"),
        (LOCAL_RECIPE, {"system_prompt": "Answer."}, "system_prompt"),
        (Path(RECIPE), {"reward_funcs": ["math_correctness"]}, "reward_funcs"),
        (Path(RECIPE), {"dataset_name": "data/sample_math.jsonl"}, "dataset_name"),
    ],
)
def test_a_recipe_file_that_shadows_task_py_is_reported(
    tmp_path, monkeypatch, caplog, where, values, named
):
    _, task = own_project(tmp_path, monkeypatch)
    with where.open("a", encoding="utf-8") as file:
        file.write(yaml.safe_dump(values))
    with caplog.at_level(logging.WARNING):
        recipe = train_recipe()
    notes = notes_of(caplog)
    assert any(
        f"{where} sets {named}" in n and task.name in n and "changes nothing" in n for n in notes
    ), notes
    assert recipe.origins[named] == str(where)


def test_your_data_in_local_yaml_is_not_reported(tmp_path, monkeypatch, caplog):
    """configs/local.yaml is the documented place for your own data mapping."""
    own_project(tmp_path, monkeypatch)
    LOCAL_RECIPE.write_text("dataset_name: data/sample_math.jsonl\nprompt_column: question\n")
    with caplog.at_level(logging.WARNING):
        recipe = train_recipe()
    assert notes_of(caplog) == []
    assert recipe.origins["dataset_name"] == str(LOCAL_RECIPE)


def test_a_reward_left_out_or_weights_that_do_not_match_are_reported(tmp_path, monkeypatch, caplog):
    own_project(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING):
        train_recipe("--reward_funcs", "math_correctness", "strict_format")
    notes = notes_of(caplog)
    assert any("leaves out partial_format, soft_overlong" in n for n in notes), notes
    assert any("reward_weights" in n and "4 values for 2 rewards" in n for n in notes), notes


def test_a_stage_picking_its_rewards_is_not_reported(tmp_path, monkeypatch, caplog):
    own_project(tmp_path, monkeypatch)
    stage = recipes.Layer(
        "configs/stages.yaml stage 1 (format)",
        {"reward_funcs": ["strict_format"], "reward_weights": [1.0]},
    )
    with caplog.at_level(logging.WARNING):
        recipe = parse_recipe(["--config", RECIPE], extra=stage)
    assert recipe.script.reward_funcs == ["strict_format"]
    assert notes_of(caplog) == []


def test_explain_names_the_file_behind_every_value(tmp_path, monkeypatch, capsys):
    _, task = own_project(tmp_path, monkeypatch)
    LOCAL_RECIPE.write_text("reward_weights: [3.0, 0.5, 0.5, 0.5]\nlearning_rate: 2.0e-05\n")
    text = recipe_command.show(["--explain", "--max_steps", "7"])
    assert capsys.readouterr().out.strip() == text.strip()
    sections = {}
    current = None
    for line in text.splitlines():
        if line.startswith("# ") and ":" not in line:
            current = line[2:]
            sections[current] = []
        elif current:
            sections[current].append(line)
    task_file = next(s for s in sections if s.endswith("task.py"))
    assert task_file.endswith(f"{task.parent.name}/task.py")
    assert (
        "# reward_weights: [2.0, 0.5, 0.5, 0.5]  (overridden by configs/local.yaml)"
        in sections[task_file]
    )
    assert "reward_weights: [3.0, 0.5, 0.5, 0.5]" in sections["configs/local.yaml"]
    assert "max_steps: 7" in sections["the command line"]
    assert "# max_steps: 2  (overridden by the command line)" in sections[RECIPE]
    assert "note: recipe: configs/local.yaml sets reward_weights" in text


def test_explain_refuses_what_a_run_refuses(tmp_path, monkeypatch):
    from grpo_kit.errors import UserError

    own_project(tmp_path, monkeypatch)
    LOCAL_RECIPE.write_text("max_prompt_length: 512\n")  # a field TRL 1.16 removed
    with pytest.raises(UserError, match="configs/local.yaml: unknown field"):
        recipe_command.show([])


def test_a_reward_model_gets_its_own_weight_after_the_tasks(tmp_path, monkeypatch, caplog):
    """Turning a reward model on in local.yaml used to mean restating task.py's weights with one
    more at the end; its weight is now a field of its own."""
    own_project(tmp_path, monkeypatch)
    LOCAL_RECIPE.write_text("reward_model: some/rm\nreward_model_weight: 0.25\n")
    with caplog.at_level(logging.WARNING):
        recipe = train_recipe()
    assert recipe.training.reward_weights == [2.0, 0.5, 0.5, 0.5, 0.25]
    assert notes_of(caplog) == []
    # Weights given whole (the 0.2 way) still stand as given.
    LOCAL_RECIPE.write_text("reward_model: some/rm\nreward_weights: [1.0, 1.0, 1.0, 1.0, 3.0]\n")
    assert train_recipe().training.reward_weights[-1] == 3.0


def test_try_on_a_fresh_project_reads_the_sample_and_says_so(tmp_path, monkeypatch):
    """issue 41: `make try` in a freshly generated project retried the Hub for the task's default
    dataset (29 s) while `make smoke` used the shipped sample; both read the sample now."""
    root, _ = own_project(tmp_path, monkeypatch)
    sample = load(root).task.data.sample
    trial = parse_recipe(["--config", RECIPE, "--trial"])
    assert trial.script.dataset_name == sample
    assert trial.training.output_dir == str(recipes.TRIAL_OUTPUT_DIR)
    assert f"the sample data {sample}" in recipes.offline_data_note(trial)
    LOCAL_RECIPE.write_text("dataset_name: data/mine.jsonl\n")
    trial = parse_recipe(["--config", RECIPE, "--trial"])
    assert "your data data/mine.jsonl" in recipes.offline_data_note(trial)
