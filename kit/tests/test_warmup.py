"""The format warm-up (`grpo warmup`): the supervised examples it trains on (the training prompts
with the task's ideal completions, or yours), its refusals, and a run on the tiny model that
teaches the format, so the preflight then sees the format rewards vary or hold."""

import json

import pytest
from conftest import RECIPE, chdir, load, sample_recipe
from conftest import training_rows_of as rows_of  # evaluate's held-out rows left out
from grpo_kit import data, generation, heldout, preflight
from grpo_kit.commands import warmup
from grpo_kit.errors import UserError


def held_out_of(recipe):
    """Evaluate's held-out rows as chat prompts."""
    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    with chdir(recipe.project.root):
        rows, _ = heldout.evaluation_rows(script, task_args, task)
        return data.to_conversations(rows, script, task_args, task)


def test_the_examples_are_the_training_prompts_with_ideal_completions(recipe, tiny_tokenizer):
    with chdir(recipe.project.root):
        found = warmup.examples(recipe, tiny_tokenizer, 3)
    rows = list(rows_of(recipe))[:3]
    assert len(found) == 3
    for example, row in zip(found, rows, strict=True):
        assert example["prompt"] == row["prompt"]  # system prompt and user message, as trained
        assert example["prompt"][0] == {"role": "system", "content": recipe.script.system_prompt}
        ideal = recipe.project.task.ideal_completion(row, recipe.task)
        assert example["completion"] == [{"role": "assistant", "content": ideal}]
        assert example["chat_template_kwargs"] == (recipe.training.chat_template_kwargs or {})


def test_your_completions_are_matched_to_the_training_prompts(recipe, tiny_tokenizer, tmp_path):
    rows = list(rows_of(recipe))
    path = tmp_path / "mine.jsonl"
    lines = [
        {"prompt": rows[1]["prompt"][-1]["content"], "completion": "<think>a</think><answer>1"},
        {recipe.script.prompt_column: rows[3]["prompt"][-1]["content"], "completion": "two"},
        {"prompt": "a question that is not in the data", "completion": "three"},
        {"prompt": held_out_of(recipe)[0]["prompt"][-1]["content"], "completion": "evaluated"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    with chdir(recipe.project.root):
        found = warmup.examples(recipe, tiny_tokenizer, 10, path)
    # evaluate's rows are never warm-up examples, even when your file has their prompts
    assert [e["prompt"] for e in found] == [rows[1]["prompt"], rows[3]["prompt"]]
    assert [e["completion"][0]["content"] for e in found] == ["<think>a</think><answer>1", "two"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json\n", "line 1: not JSON"),
        ('{"prompt": "q"}\n', 'line 1: needs a prompt .* and a non-empty "completion"'),
        ("\n", "no completions in it"),
    ],
)
def test_a_bad_completions_file_is_one_clear_error(text, message, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        warmup.user_completions(path, "question")
    with pytest.raises(UserError, match="no such file"):
        warmup.user_completions(tmp_path / "missing.jsonl", "question")


def test_completions_for_no_training_prompt_are_refused(recipe, tiny_tokenizer, tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text(json.dumps({"prompt": "unrelated", "completion": "x"}) + "\n")
    with chdir(recipe.project.root), pytest.raises(UserError, match="none of its prompts"):
        warmup.examples(recipe, tiny_tokenizer, 4, path)


def test_an_agent_task_is_refused(projects, tiny_tokenizer):
    recipe = sample_recipe(projects("tools"))
    with chdir(recipe.project.root), pytest.raises(UserError, match="tool-calling rollouts"):
        warmup.examples(recipe, tiny_tokenizer, 4)


def test_bad_options_are_refused():
    with pytest.raises(SystemExit):
        warmup.parse_args(["--examples", "0"])


@pytest.mark.slow
def test_the_warm_up_teaches_the_tiny_model_the_format(
    recipe, project_root, tiny_model_dir, tiny_tokenizer, tmp_path, capsys
):
    """A few completions in the format, many epochs: the random tiny model writes the format
    after the warm-up (it never does before); the merged folder is what GRPO starts from, its
    run record names the model it came from, and the preflight on it finds signal where the
    base model has none. (The tiny model's whitespace tokens are muted, so its completions are
    the compact layout; sampled at 0.5, as a few steps of training leave it unsure.)"""
    from grpo_kit.verify.math import gold_text

    compact = tmp_path / "compact.jsonl"
    with compact.open("w") as handle:
        for row in list(rows_of(recipe))[:4]:
            answer = f"<think>step by step</think><answer>{gold_text(row['answer'])}</answer>"
            prompt = row["prompt"][-1]["content"]
            handle.write(json.dumps({"prompt": prompt, "completion": answer}) + "\n")
    out = tmp_path / "warm"
    smoke = ["--config", RECIPE, "--smoke", "--max_completion_length", "48", "--temperature", "0.5"]
    with chdir(project_root):
        merged = warmup.warm_up(
            [*smoke, "--model_name_or_path", str(tiny_model_dir), "--completions", str(compact),
             "--epochs", "60", "--learning-rate", "5e-3", "--output-dir", str(out)],
            project=load(project_root),
        )  # fmt: skip
    assert merged == out / "merged" and (merged / "config.json").is_file()
    assert (out / "adapter_config.json").is_file()
    record = json.loads((out / "run_record.json").read_text())
    assert record["status"] == "finished" and record["command"][3] == "warmup"
    assert record["warmup"]["examples"] == 4
    assert record["warmup"]["loss"]["last"] < record["warmup"]["loss"]["first"]
    assert generation.trained_from(merged) == str(tiny_model_dir)
    assert generation.origin_of(merged) == str(tiny_model_dir)
    assert len((out / warmup.EXAMPLES_FILE).read_text().splitlines()) == 4
    assert f"--model_name_or_path {merged}" in capsys.readouterr().out

    from grpo_kit.recipe import parse_recipe

    with chdir(project_root):
        before, after = (
            preflight.check(
                parse_recipe(
                    [*smoke, "--model_name_or_path", str(model)], project=load(project_root)
                ),
                tiny_tokenizer,
                prompts=4,
                generations=4,
            )  # fmt: skip
            for model in (tiny_model_dir, merged)
        )
    assert {r.name: r for r in before.rewards}["strict_format"].mean == 0 and not before.learns
    formats = [r for r in after.rewards if r.kind == "format"]
    assert after.learns and any(r.spread for r in formats), preflight.report(after)
    assert sum(r.mean for r in formats) > 0, preflight.report(after)
