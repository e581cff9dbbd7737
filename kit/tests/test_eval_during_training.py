"""Evaluation during training: held-out prompts (the recipe's test split, or rows held out of a
local file and never trained on) scored every eval_steps with the task's rewards; the metrics in
trainer_state.json, the run record and the report's plots."""

import json

import pytest
from conftest import RECIPE, smoke_train
from grpo_kit import training
from grpo_kit.errors import UserError
from grpo_kit.recipe import parse_recipe


def smoke_recipe(*extra):
    return parse_recipe(["--config", RECIPE, "--smoke", *extra])


EVAL = ("--eval_strategy", "steps", "--eval_steps", "2", "--eval_prompts", "4")


def prompts_of(rows, column="question") -> list[str]:
    """The questions of data rows (the math sample's prompt column)."""
    return list(rows[column])


def test_held_out_rows_are_evaluates_and_never_trained_on():
    """A local file: the prompts evaluated during training are the first of the rows `make
    evaluate` scores (held out by a hash of each problem, whatever the seed)."""
    from grpo_kit import heldout

    recipe = smoke_recipe(*EVAL)
    assert recipe.script.prompt_column == "question"
    train, held, source = training.split_rows(recipe)
    assert len(held) == 4 and not set(prompts_of(held)) & set(prompts_of(train))
    assert len(train) == recipe.script.max_train_samples  # applied to the rows left
    assert source["held_out_of_training_data"] and "held out by a hash" in source["from"]
    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    evaluated, _ = heldout.evaluation_rows(script, task_args, task)
    assert prompts_of(held) == prompts_of(evaluated)[:4]
    other = training.split_rows(smoke_recipe(*EVAL, "--seed", "7"))[1]
    assert prompts_of(other) == prompts_of(held)  # not the seed's: evaluate's rows


def test_without_evaluation_nothing_is_held_out():
    recipe = smoke_recipe()
    train, held, source = training.split_rows(recipe)
    assert held is None and source is None
    assert len(train) == recipe.script.max_train_samples


def test_more_eval_prompts_than_held_out_rows_evaluate_those_and_none_is_refused(caplog):
    train, held, _ = training.split_rows(smoke_recipe(*EVAL[:4], "--eval_prompts", "32"))
    assert len(held) == 8 and not set(prompts_of(held)) & set(prompts_of(train))
    assert "eval_prompts is 32 but 8 rows are held out" in caplog.text
    with pytest.raises(UserError, match="at least 1 held-out prompt"):
        training.split_rows(smoke_recipe(*EVAL[:4], "--eval_prompts", "0"))


def test_a_file_too_small_to_hold_any_row_out_is_one_clear_error(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text('{"question": "What is 1 + 1?", "answer": "2"}\n')
    with pytest.raises(UserError, match="1 row.*none can be held out.*eval_strategy: no"):
        training.split_rows(smoke_recipe(*EVAL, "--dataset_name", str(one)))


def test_a_hub_dataset_is_evaluated_on_its_test_split(monkeypatch):
    from datasets import Dataset

    calls = []

    def load(script, task_args, task, split=None):
        split = split or script.dataset_train_split
        calls.append((split, script.max_train_samples))
        rows = Dataset.from_list([{"question": f"{split} {i}", "answer": "1"} for i in range(40)])
        limit = script.max_train_samples
        return rows.select(range(min(limit, len(rows)))) if limit else rows

    monkeypatch.setattr(training.data, "load_training_rows", load)
    recipe = smoke_recipe(*EVAL, "--dataset_name", "org/gsm", "--dataset_test_split", "test")
    train, held, source = training.split_rows(recipe)
    assert held["question"] == ["test 0", "test 1", "test 2", "test 3"]
    assert len(train) == recipe.script.max_train_samples and train["question"][0] == "train 0"
    assert source == {"from": "org/gsm[test]", "held_out_of_training_data": False}
    assert ("test", None) in calls  # the test split is not cut by max_train_samples


def test_evaluation_prompts_are_the_trainers_eval_dataset(tiny_tokenizer):
    assert training.evaluation_prompts(smoke_recipe(), tiny_tokenizer) is None

    class Record:
        def evaluation(self, source):
            self.source = source

    record = Record()
    rows = training.evaluation_prompts(smoke_recipe(*EVAL), tiny_tokenizer, record)
    assert len(rows) == 4 and rows[0]["prompt"][-1]["role"] == "user"  # chat prompts, as trained
    assert record.source["prompts"] == 4 and record.source["dropped_too_long"] == 0


@pytest.mark.slow
def test_evaluation_shows_in_trainer_state_the_record_and_the_report(tiny_model_dir, tmp_path):
    """The smoke run, evaluating every 2 of its 4 steps (through the starter train script)."""
    from grpo_kit.commands import report

    out = tmp_path / "run"
    smoke_train(tiny_model_dir, out, "--max_steps", "4", *EVAL)
    state = json.loads((out / "trainer_state.json").read_text())
    evaluated = [row for row in state["log_history"] if "eval_reward" in row]
    assert [row["step"] for row in evaluated] == [2, 4]
    assert all("eval_rewards/math_correctness/mean" in row for row in evaluated)
    trained = [row for row in state["log_history"] if "reward" in row]
    assert [row["step"] for row in trained] == [1, 2, 3, 4]  # beside the training logs
    record = json.loads((out / "run_record.json").read_text())
    assert record["evaluation"]["prompts"] == 4 and record["rows"]["kept"] == 16
    assert record["final_eval_metrics"]["step"] == 4
    summary_dir = report.report([str(out), "--output-dir", str(tmp_path / "report")])
    image = summary_dir / report.EVAL_PLOT
    assert image.is_file() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (summary_dir / "report.md").read_text()
    assert "## Evaluation during training" in summary and "2 evaluation(s)" in summary
    assert "| `eval_rewards/math_correctness/mean` |" in summary
    assert f"![evaluation]({report.EVAL_PLOT})" in summary


def test_a_train_script_without_eval_dataset_gets_one_clear_line(tmp_path):
    """A project's own train.py from before evaluation during training: the Trainer's refusal
    becomes the fix, in one line."""

    def old_script(recipe, record=None):
        raise ValueError("You have set `args.eval_strategy` to steps but you didn't pass an "
                         "`eval_dataset` to `Trainer`.")  # fmt: skip

    argv = ["--config", RECIPE, "--smoke", "--output_dir", str(tmp_path / "run"), *EVAL]
    with pytest.raises(UserError, match=r"eval_dataset=training.evaluation_prompts\("):
        training.run(old_script, argv)
