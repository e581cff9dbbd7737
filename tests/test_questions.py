"""cookiecutter.json is generated from the catalog, tiers and tasks and must not drift."""

import json

from conftest import ROOT

from grpo_template import answers, catalog, questions, tasks, tiers


def test_cookiecutter_json_is_generated():
    committed = (ROOT / "cookiecutter.json").read_text(encoding="utf-8")
    assert committed == questions.render(), "run: python -m grpo_template.questions --write"


def test_choices_match_the_knowledge_modules():
    data = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    assert data["model"][0] == catalog.DEFAULT_MODEL
    assert set(data["model"]) == {*catalog.CATALOG, catalog.CUSTOM}
    assert set(data["gpu_tier"]) == set(tiers.TIERS) and data["gpu_tier"][0] == tiers.DEFAULT_TIER
    assert set(data["task_type"]) == set(tasks.TASKS)
    assert data["backend"] == list(answers.BACKENDS)
    assert data["tracker"] == list(answers.TRACKERS)


def test_every_question_has_a_readable_prompt():
    data = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    prompts = data["__prompts__"]
    for key in data:
        if not key.startswith("_"):
            assert key in prompts, key
    for key, options in prompts.items():
        if isinstance(options, dict):
            for choice in data[key]:
                assert choice in options, (key, choice)


def test_example_prompts_fit_on_one_generated_line():
    """They are placed in project.py as `EXAMPLE_PROMPT = "..."` (ruff's limit is 100)."""
    from grpo_template.tasks import TASKS

    for task in TASKS.values():
        assert len(f"EXAMPLE_PROMPT = {task.example_prompt!r}") <= 100, task.name
