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
