"""The staged recipe (configs/stages.yaml): format rewards first, then the whole recipe."""

import pytest
import yaml

from grpo_template import catalog, recipe, stages_recipe, tasks, tiers, tuning

MODEL = catalog.CATALOG["Qwen/Qwen2.5-0.5B-Instruct"]


@pytest.mark.parametrize("task", list(tasks.TASKS))
@pytest.mark.parametrize("tier", ["cpu", "24GB"])
def test_first_stage_trains_the_format_rewards_only(task, tier):
    plan = tuning.plan(MODEL, tiers.TIERS[tier], tasks.TASKS[task])
    spec = yaml.safe_load(stages_recipe.render(plan))
    first, second = spec["stages"]
    kinds = {r.name: r.kind for r in plan.task.rewards}
    assert first["reward_funcs"] and all(kinds[n] == "format" for n in first["reward_funcs"])
    assert len(first["reward_weights"]) == len(first["reward_funcs"])
    assert set(second) == {"name", "max_steps"}  # the whole recipe otherwise
    assert first["max_steps"] + second["max_steps"] == recipe.max_steps(plan)
    assert 0 < first["max_steps"] < second["max_steps"]


@pytest.mark.parametrize("task", list(tasks.TASKS.values()), ids=lambda t: t.name)
def test_every_task_leads_with_one_correctness_reward_and_names_its_metric(task):
    kinds = [r.kind for r in task.rewards]
    assert kinds[0] == "correctness" and kinds.count("correctness") == 1
    assert set(kinds) <= {"correctness", "format", "length"}
    assert task.metric_note


def test_every_tracker_has_a_recipe_note():
    from grpo_template.answers import TRACKERS

    assert set(recipe.TRACKER_NOTES) == set(TRACKERS)


def test_the_warm_up_stage_uncommented_is_a_stage_the_kit_runs(tmp_path):
    """issue 26: the commented warm-up stage, once uncommented, comes first and is a `grpo
    warmup` stage with the command's own defaults."""
    from grpo_kit.commands import stages, warmup

    plan = tuning.plan(MODEL, tiers.TIERS["cpu"], tasks.TASKS["math"])
    text = stages_recipe.render(plan).replace("  # - {name: ", "  - {name: ")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "grpo.yaml").write_text("{}\n")
    path = tmp_path / "stages.yaml"
    path.write_text(text.replace('"configs/grpo.yaml"', f'"{tmp_path}/configs/grpo.yaml"'))
    _, found = stages.load_stages(path)
    assert [s["name"] for s in found] == ["warmup", "format", "correctness"]
    assert found[0]["warmup"] == [
        "--examples", str(warmup.EXAMPLES), "--epochs", str(warmup.EPOCHS),
        "--learning-rate", str(warmup.LEARNING_RATE),
    ]  # fmt: skip
