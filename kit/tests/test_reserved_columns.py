"""Data columns named like the keyword arguments TRL passes every reward (`completions`,
`prompts`, `trainer_state`, ...; `self` for an agent task's `reset(self, **row)`) are refused
when the data loads, with the fix; doctor reports them (it said "nothing blocks training", then
training stopped with "got multiple values"); a mapped one is set aside and trains."""

import dataclasses
import json

import pytest
from conftest import rows_of, sample_recipe
from grpo_kit import data
from grpo_kit.commands import doctor
from grpo_kit.rewards import call_like_trl, resolve


def recipe_of(projects, monkeypatch, task):
    root = projects(task)
    monkeypatch.chdir(root)
    return sample_recipe(root)


def sample_with(recipe, tmp_path, rename=None, extra=None):
    """The task's sample rows, a column renamed or one added, as a local file."""
    sample = recipe.project.root / recipe.project.task.data.sample
    rows = [json.loads(line) for line in sample.read_text("utf-8").splitlines() if line.strip()]
    rename = rename or {}
    rows = [{rename.get(k, k): v for k, v in row.items()} | (extra or {}) for row in rows]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("task", "column"), [
    ("math", "completions"), ("math", "prompts"), ("math", "trainer_state"),
    ("classification", "log_metric"), ("tools", "self"), ("tools", "completions"),
])  # fmt: skip
def test_a_reserved_column_is_refused_at_load_and_by_doctor(
    projects, monkeypatch, tmp_path, task, column
):
    recipe = recipe_of(projects, monkeypatch, task)
    path = sample_with(recipe, tmp_path, extra={column: "x"})
    script = dataclasses.replace(recipe.script, dataset_name=path)
    with pytest.raises(data.DataError) as err:
        data.load_training_rows(script, recipe.task, recipe.project.task)
    message = str(err.value)
    assert f"'{column}'" in message and "rename the column" in message
    assert "prompt_column" in message
    findings = doctor.check_data(recipe._replace(script=script), 8, True, False)
    assert [(f.level, f.check) for f in findings] == [(doctor.FAIL, "data")]
    assert f"'{column}'" in findings[0].message


def test_self_is_a_plain_column_outside_agent_tasks(projects, monkeypatch, tmp_path):
    recipe = recipe_of(projects, monkeypatch, "math")
    path = sample_with(recipe, tmp_path, extra={"self": "x"})
    script = dataclasses.replace(recipe.script, dataset_name=path)
    assert len(data.load_training_rows(script, recipe.task, recipe.project.task)) > 0


def test_a_reserved_column_mapped_as_the_prompt_trains(projects, monkeypatch, tmp_path):
    """Mapped with prompt_column, `completions` is set aside: every reward, called as
    GRPOTrainer calls it, scores the rows (before: TypeError, got multiple values)."""
    recipe = recipe_of(projects, monkeypatch, "math")
    prompt = recipe.script.prompt_column
    path = sample_with(recipe, tmp_path, rename={prompt: "completions"})
    script = dataclasses.replace(recipe.script, dataset_name=path, prompt_column="completions")
    recipe = recipe._replace(script=script)
    rows = rows_of(recipe)
    assert "completions" not in rows.column_names and "source_completions" in rows.column_names
    task = recipe.project.task
    chosen = [rows[i] for i in range(4)]
    ideal = [task.ideal_completion(row, recipe.task) for row in chosen]
    names = script.reward_funcs
    for func in resolve(names, task.reward_table, recipe.reward_settings()):
        assert None not in call_like_trl(func, ideal, chosen)
