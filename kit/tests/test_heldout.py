"""Held out by default (issue 40): on a single local file, the rows `make evaluate` scores are
never among the rows the warm-up, training, the filter and the preflight use; they are chosen by a
hash of each problem (a share of the rows, with a minimum), and a dataset with a test split of its
own is evaluated on that split."""

import hashlib
import json
import random

import pytest
from conftest import RECIPE, chdir, load, make_project, smoke_train
from grpo_kit import heldout, preflight, training
from grpo_kit.commands import evaluate, warmup
from grpo_kit.commands import filter as difficulty
from grpo_kit.errors import DataError
from grpo_kit.heldout import HELD_OUT_MIN, HELD_OUT_SHARE, held_out_indices
from grpo_kit.recipe import parse_recipe


def sha256_position(text: str) -> float:
    """Where a problem falls in [0, 1), computed here from hashlib (the reference)."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16], 16) / 2**64


def problems(count: int, prefix: str = "What is") -> list[str]:
    return [f"{prefix} {i} + {i + 1}?" for i in range(count)]


def test_a_large_file_holds_out_the_problems_hashed_into_the_share():
    questions = problems(2000)
    held = held_out_indices(questions)
    expected = [i for i, q in enumerate(questions) if sha256_position(q) < HELD_OUT_SHARE]
    assert held == expected
    assert 0.08 < len(held) / len(questions) < 0.12


@pytest.mark.parametrize(("rows", "held"), [(1, 0), (2, 1), (6, 3), (16, 8), (20, 8), (32, 8)])
def test_a_small_file_holds_out_at_least_the_minimum_and_at_most_half(rows, held):
    questions = problems(rows)
    found = held_out_indices(questions)
    assert sum(sha256_position(q) < HELD_OUT_SHARE for q in questions) < held or held == 0
    assert len(found) == held
    lowest = sorted(range(rows), key=lambda i: sha256_position(questions[i]))[:held]
    assert found == sorted(lowest)  # the lowest hashes


def test_the_split_depends_on_each_problem_alone():
    """Not on the order of the rows, the seed or the other rows of the file: a shuffled copy, or
    a file of other rows around the same problems, holds out the same problems."""
    questions = problems(1000)
    held = {questions[i] for i in held_out_indices(questions)}
    shuffled = questions[:]
    random.Random(3).shuffle(shuffled)
    assert {shuffled[i] for i in held_out_indices(shuffled)} == held
    other = held | set(problems(700, "Compute")) | set(questions[:300])
    mixed = sorted(other)
    assert {mixed[i] for i in held_out_indices(mixed)} & set(questions) == held


def test_identical_problems_fall_on_the_same_side():
    questions = problems(12)
    order = sorted(range(12), key=lambda i: sha256_position(questions[i]))
    # 14 rows hold out 7 (at most half): the 7th lowest hash is order[5]'s, whose three copies
    # are the 6th to 8th lowest; all three are held out, not two of them.
    with_copies = questions + [questions[order[5]]] * 2
    held = held_out_indices(with_copies)
    held_texts = {with_copies[i] for i in held}
    trained = {q for i, q in enumerate(with_copies) if i not in held}
    assert not held_texts & trained and len(held) == 8


def test_a_chat_prompt_is_hashed_by_its_last_user_message():
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " 2 + 2? "}]
    assert heldout.problem_hash(chat) == heldout.problem_hash("2 + 2?") == sha256_position("2 + 2?")


# --- every stage's loader on one local file ---------------------------------------------------

ROWS = 60


@pytest.fixture(scope="module")
def one_file(tmp_path_factory, tiny_model_dir):
    """A math project whose data is one local file of ROWS problems, read on the tiny model."""
    root = make_project(tmp_path_factory.mktemp("one-file"), "math")
    rows = [{"question": q, "answer": f"#### {2 * i + 1}"} for i, q in enumerate(problems(ROWS))]
    path = root / "data" / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return root, [row["question"] for row in rows]


def recipe_of(root, tiny_model_dir, *extra):
    argv = ["--config", RECIPE, "--dataset_name", "data/mine.jsonl", "--prompt_column",
            "question", "--answer_column", "answer", "--model_name_or_path", str(tiny_model_dir),
            *extra]  # fmt: skip
    with chdir(root):
        return parse_recipe(argv, read_only=True, project=load(root))


def users(prompts) -> set[str]:
    """The user messages of chat prompts (the problems as the data holds them)."""
    return {prompt[-1]["content"] for prompt in prompts}


def test_the_stages_never_see_evaluates_rows_and_together_cover_the_file(
    one_file, tiny_model_dir, tiny_tokenizer
):
    root, questions = one_file
    recipe = recipe_of(root, tiny_model_dir)
    everything = ROWS * 2
    with chdir(root):
        warm = users(e["prompt"] for e in warmup.examples(recipe, tiny_tokenizer, everything))
        train = users(training.training_prompts(recipe, tiny_tokenizer)["prompt"])
        _, filtered, _ = difficulty.training_prompts(recipe, tiny_tokenizer, None)
        checked = preflight.preflight_rows(recipe, tiny_tokenizer, everything)
        rows, source = evaluate.evaluation_rows(recipe, None, everything, str(tiny_model_dir))
    evaluated = users(row["prompt"] for row in rows)
    assert warm == train == users(filtered["prompt"]) == users(r["prompt"] for r in checked)
    assert not evaluated & train
    assert evaluated | train == set(questions)
    expected = {q for q in questions if sha256_position(q) < HELD_OUT_SHARE}
    assert expected <= evaluated and len(evaluated) == max(len(expected), HELD_OUT_MIN)
    assert "data/mine.jsonl" in source and "hash" in source


def test_a_cut_run_and_evaluation_during_training_stay_inside_their_sides(
    one_file, tiny_model_dir, tiny_tokenizer
):
    """max_train_samples cuts the training rows only; the prompts evaluated during training are
    evaluate's first rows; --all-rows is every row, labelled so."""
    root, questions = one_file
    steps = ("--eval_strategy", "steps", "--eval_steps", "2", "--eval_prompts", "3")
    recipe = recipe_of(root, tiny_model_dir, "--max_train_samples", "10", *steps)
    with chdir(root):
        train = users(training.training_prompts(recipe, tiny_tokenizer)["prompt"])
        during = users(training.evaluation_prompts(recipe, tiny_tokenizer)["prompt"])
        rows, _ = evaluate.evaluation_rows(recipe, None, 3, str(tiny_model_dir))
        every, label = evaluate.evaluation_rows(recipe, None, 1000, str(tiny_model_dir), True)
    assert len(train) == 10 and not train & during
    assert during == users(row["prompt"] for row in rows)
    assert users(row["prompt"] for row in every) == set(questions)
    assert label == "data/mine.jsonl, every row (--all-rows)"


def test_a_dataset_with_its_own_test_split_trains_on_all_its_training_split(monkeypatch):
    """A Hub dataset whose recipe names another test split: the training split whole, evaluate
    on the test split; evaluated on its training split instead, the rows are split by hash."""
    from datasets import Dataset

    def load(script, task_args, task, split=None):
        split = split or script.dataset_train_split
        return Dataset.from_list([{"question": f"{split} {i}", "answer": "1"} for i in range(40)])

    monkeypatch.setattr(heldout.data, "load_training_rows", load)
    recipe = parse_recipe(["--config", RECIPE, "--dataset_name", "org/gsm"], read_only=True)
    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    found = heldout.split_rows(script, task_args, task)
    assert len(found.train) == 40 and found.held is None
    assert found.record() == {"by": "split", "from": "the test split org/gsm[test]"}
    rows, source = heldout.evaluation_rows(script, task_args, task)
    assert rows["question"][0] == "test 0" and source == "the test split org/gsm[test]"
    rows, source = heldout.evaluation_rows(script, task_args, task, "train")
    assert len(rows) == 8 and "org/gsm[train]" in source and "hash" in source


def test_evaluate_on_a_file_too_small_to_hold_out_says_what_to_do(tmp_path, monkeypatch):
    root = make_project(tmp_path / "p", "math")
    (root / "data" / "one.jsonl").write_text('{"question": "1 + 1?", "answer": "#### 2"}\n')
    monkeypatch.chdir(root)
    recipe = parse_recipe(["--config", RECIPE, "--dataset_name", "data/one.jsonl",
                           "--prompt_column", "question"], read_only=True)  # fmt: skip
    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    assert len(heldout.training_rows(script, task_args, task)) == 1  # it still trains
    with pytest.raises(DataError, match="has 1 row.*--dataset_name FILE.*--all-rows"):
        heldout.evaluation_rows(script, task_args, task)


# --- through the commands, with the tiny model --------------------------------------------------


@pytest.mark.slow
def test_warmup_train_and_evaluate_never_score_evaluates_rows_in_training(
    project_root, tiny_model_dir, tmp_path, capsys
):
    """`grpo warmup`, `grpo train` and `grpo evaluate` (--smoke: the shipped sample, one local
    file): the warm-up's examples and the run's training prompts hold none of evaluate's; both
    records say which rows are held out, so evaluate calls its rows held out."""
    smoke = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir)]
    warm = tmp_path / "warm"
    run = tmp_path / "run"
    with chdir(project_root):
        warmup.warm_up([*smoke, "--examples", "100", "--epochs", "1", "--output-dir", str(warm)])
        trainer = smoke_train(tiny_model_dir, run, root=project_root)
        evaluate.evaluate(["--smoke", "--model", str(run), "--no-base", "--max-new-tokens", "4",
                           "--output-dir", str(tmp_path / "eval")])  # fmt: skip
    examples = [json.loads(line) for line in (warm / warmup.EXAMPLES_FILE).open()]
    warmed = users(example["prompt"] for example in examples)
    trained = users(trainer.train_dataset["prompt"])
    predictions = [json.loads(line) for line in (tmp_path / "eval" / "predictions.jsonl").open()]
    evaluated = {prediction["prompt"] for prediction in predictions}
    assert len(evaluated) == len(predictions) == HELD_OUT_MIN  # the sample's 32 rows: 8
    assert warmed and trained and not evaluated & (warmed | trained)
    for folder in (warm, run):
        record = json.loads((folder / "run_record.json").read_text())
        assert record["held_out"]["by"] == "hash" and record["held_out"]["rows"] == 8
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["held_out"] and "hash" in summary["rows_from"]
    printed = capsys.readouterr().out
    assert "evaluating on 8 held-out rows from data/sample_math.jsonl" in printed
    assert "8 held-out prompts from data/sample_math.jsonl" in printed


def test_the_manual_states_the_share_and_the_minimum_the_code_has():
    """data.md states heldout.py's numbers (their one home is the code)."""
    from grpo_kit.commands import docs

    text = " ".join((docs.DOCS / "data.md").read_text(encoding="utf-8").split())
    assert f"the lowest {HELD_OUT_SHARE:.0%} of the range are held out, at least " in text
    assert f"at least {HELD_OUT_MIN} rows and at most half" in text


def test_a_file_of_copies_of_one_problem_trains_and_evaluate_says_what_to_do(
    tmp_path, monkeypatch, caplog
):
    """Held out together, the copies would leave nothing to train on: none is held out."""
    root = make_project(tmp_path / "p", "math")
    row = json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n"
    (root / "data" / "same.jsonl").write_text(row * 4)
    monkeypatch.chdir(root)
    recipe = parse_recipe(["--config", RECIPE, "--dataset_name", "data/same.jsonl",
                           "--prompt_column", "question"], read_only=True)  # fmt: skip
    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    assert len(heldout.training_rows(script, task_args, task)) == 4
    assert "none held out for evaluation" in caplog.text
    with pytest.raises(DataError, match="no row of data/same.jsonl can be held out.*--all-rows"):
        heldout.evaluation_rows(script, task_args, task)
