"""Every example the project shows is built from your data and labels once configs/local.yaml
names them (issue 41): smoke's generate step and `grpo infer` without a prompt ask your first
row as the task asks it, not the sample's "The striker signed a new contract. Labels: World,
Sports, ..."; on the task's default data or the shipped sample, the task's example."""

import json

import pytest
from conftest import chdir, make_project
from grpo_kit import answering
from grpo_kit.project import load as load_project
from grpo_kit.recipe import parse_recipe

ROWS = [{"text": "The cat purred on the mat.", "label": "Cats"},
        {"text": "The dog fetched the ball.", "label": "Dogs"}]  # fmt: skip


@pytest.fixture(scope="module")
def own_data(tmp_path_factory):
    root = make_project(tmp_path_factory.mktemp("own-labels"), "classification")
    lines = "".join(json.dumps(row) + "\n" for row in ROWS)
    (root / "data" / "mine.jsonl").write_text(lines, encoding="utf-8")
    local = "dataset_name: data/mine.jsonl\nlabels: [Cats, Dogs]\n"
    (root / "configs" / "local.yaml").write_text(local, encoding="utf-8")
    return root


def recipe_of(root, *argv):
    with chdir(root):
        return parse_recipe(["--config", "configs/grpo.yaml", *argv], read_only=True,
                            project=load_project())  # fmt: skip


@pytest.mark.parametrize("argv", [(), ("--smoke",)], ids=["infer", "smoke"])
def test_the_example_asks_your_first_row_with_your_labels(own_data, argv):
    with chdir(own_data):
        prompt = answering.example_prompt(recipe_of(own_data, *argv))
    assert "The cat purred on the mat." in prompt and "Cats" in prompt and "Dogs" in prompt
    assert "striker" not in prompt and "Sports" not in prompt


def test_infer_without_a_prompt_asks_the_example(own_data):
    (own_data / "outputs" / "run" / "merged").mkdir(parents=True, exist_ok=True)
    (own_data / "outputs" / "run" / "merged" / "config.json").write_text("{}")
    with chdir(own_data):
        args = answering.parse_args(["--model", "outputs/run/merged"])
    assert "The cat purred on the mat." in args.prompt and "Dogs" in args.prompt


def test_the_sample_keeps_the_tasks_example(tmp_path):
    root = make_project(tmp_path, "classification")
    recipe = recipe_of(root, "--smoke")
    with chdir(root):
        assert answering.example_prompt(recipe) == recipe.project.task.example_prompt
