"""The format warm-up (`grpo warmup`): the supervised examples it trains on (the training prompts
with the task's ideal completions, or yours), its refusals, and a run on the tiny model that
teaches the format, so the preflight then sees the format rewards vary or hold."""

import copy
import dataclasses
import json

import pytest
from conftest import RECIPE, chdir, load, sample_recipe
from conftest import training_rows_of as rows_of  # evaluate's held-out rows left out
from grpo_kit import data, generation, heldout, preflight
from grpo_kit.callbacks.entropy_floor import EntropyFloor
from grpo_kit.commands import warmup
from grpo_kit.errors import UserError
from grpo_kit.stage_options import WARMUP_ENTROPY_MARGIN, warmup_batch


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


@pytest.mark.parametrize(
    "bad", [["--examples", "0"], ["--batch-size", "0"], ["--min-entropy", "-0.1"]]
)
def test_bad_options_are_refused(bad):
    with pytest.raises(SystemExit):
        warmup.parse_args(bad)


@pytest.mark.parametrize(
    ("examples", "batch"), [(1, 1), (4, 1), (12, 3), (32, 8), (33, 8), (1000, 8)]
)
def test_the_warm_up_batch_follows_the_number_of_examples(examples, batch):
    assert warmup_batch(examples) == batch


def test_32_examples_make_12_steps_whatever_the_grpo_batch(recipe, tmp_path):
    """Issue 40: the warm-up copied per_device_train_batch_size from the GRPO recipe, so 32
    examples x 3 epochs were 6 steps at GRPO's batch 16 (the format half-learnt). Its batch is
    its own now, gradient accumulation 1: the same config and steps for any GRPO batch."""
    args, _ = warmup.parse_args([])
    batch = warmup_batch(warmup.EXAMPLES)
    configs = []
    for size, accumulation in ((4, 1), (16, 4)):
        training = copy.copy(recipe.training)
        training.per_device_train_batch_size = size
        training.gradient_accumulation_steps = accumulation
        config = warmup.sft_config(recipe._replace(training=training), tmp_path, args, batch)
        configs.append((config.per_device_train_batch_size, config.gradient_accumulation_steps))
    assert configs == [(8, 1), (8, 1)]
    assert warmup.planned_steps(warmup.EXAMPLES, batch, warmup.EPOCHS) == 12
    assert warmup.planned_steps(5, 2, 1.5) == 5  # ceil(1.5 x 3 batches), as the Trainer counts


def test_the_entropy_floor_defaults_to_a_margin_over_the_health_minimum(recipe):
    args, _ = warmup.parse_args([])
    floor = warmup.min_entropy(args, recipe)
    assert floor == recipe.script.health_entropy_min * WARMUP_ENTROPY_MARGIN
    assert floor > recipe.script.health_entropy_min  # it stops before the monitor would warn
    script = dataclasses.replace(recipe.script, health_entropy_min=0.2)
    assert warmup.min_entropy(args, recipe._replace(script=script)) == 0.2 * WARMUP_ENTROPY_MARGIN
    given, _ = warmup.parse_args(["--min-entropy", "0"])
    assert warmup.min_entropy(given, recipe) == 0.0


class State:
    is_world_process_zero = True

    def __init__(self, step):
        self.global_step = step


def test_the_entropy_floor_stops_at_the_first_log_below_it():
    from transformers import TrainerControl

    floor = EntropyFloor(0.1)
    control = TrainerControl()
    for step, logs in enumerate(
        [
            {"loss": 2.0, "entropy": 1.4},
            {"loss": 1.0},
            {"entropy": float("nan")},
            {"entropy": 0.3},
        ],  # fmt: skip
        start=1,
    ):
        floor.on_log(None, State(step), control, logs=logs)
        assert not control.should_training_stop
    floor.on_log(None, State(5), control, logs={"entropy": 0.08})
    assert control.should_training_stop and floor.stopped_at == 5
    assert (floor.first, floor.last) == (1.4, 0.08)
    off, control = EntropyFloor(0.0), TrainerControl()
    off.on_log(None, State(1), control, logs={"entropy": 0.0})
    assert not control.should_training_stop and off.stopped_at is None
    with pytest.raises(ValueError):
        EntropyFloor(-1)


def test_the_warm_up_steps_follow_its_examples_and_stop_at_the_floor(
    project_root, tiny_model_dir, tmp_path, capsys
):
    """Real SFT runs on the tiny model (TRL's SFTTrainer logs the entropy the floor reads):
    8 examples x 1 epoch at the default batch (2) are 4 steps under two GRPO batches; a floor
    above any entropy stops the warm-up at its first step, and the record says so."""
    smoke = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir),
             "--examples", "8", "--epochs", "1"]  # fmt: skip
    records = []
    runs = [
        ["--per_device_train_batch_size", "4", "--min-entropy", "0"],
        ["--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "4",
         "--min-entropy", "0"],
        ["--min-entropy", "100"],
    ]  # fmt: skip
    for number, extra in enumerate(runs):
        out = tmp_path / f"warm{number}"
        with chdir(project_root):
            warmup.warm_up([*smoke, *extra, "--output-dir", str(out)], project=load(project_root))
        records.append(json.loads((out / "run_record.json").read_text())["warmup"])
    for record in records[:2]:
        assert record["batch_size"] == 2 and record["planned_steps"] == 4
        assert record["steps"] == 4 and record["stopped_early"] is False
        assert record["min_entropy"] == 0 and record["entropy"]["last"] > 0
    stopped = records[2]
    assert stopped["stopped_early"] is True and stopped["steps"] == 1
    assert stopped["min_entropy"] == 100 and stopped["entropy"]["first"] < 100
    assert "stopped at step 1 of 4: token entropy" in capsys.readouterr().out


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
             "--epochs", "60", "--learning-rate", "5e-3", "--output-dir", str(out),
             "--batch-size", "4", "--min-entropy", "0"],
            project=load(project_root),
        )  # fmt: skip
    assert merged == out / "merged" and (merged / "config.json").is_file()
    assert (out / "adapter_config.json").is_file()
    record = json.loads((out / "run_record.json").read_text())
    assert record["status"] == "finished" and record["command"][3] == "warmup"
    assert record["warmup"]["examples"] == 4 and record["warmup"]["batch_size"] == 4
    assert record["warmup"]["steps"] == record["warmup"]["planned_steps"] == 60
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
