"""Evaluate: base vs trained model on the sample data with the tiny model."""

import dataclasses
import json

import pytest

from {{ cookiecutter.package_name }} import evaluate
from {{ cookiecutter.package_name }}.tasks import TASK


def test_before_after_table_predictions_and_report(logged_run, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    results = evaluate.evaluate(
        ["--smoke", "--model", str(logged_run), "--base", str(tiny_model_dir), "--limit", "4",
         "--max-new-tokens", "8", "--pass-k", "2", "--output-dir", str(out)]
    )  # fmt: skip
    labels = [label for label, _ in TASK.metrics]
    assert list(results) == ["base", "trained"]
    for summary in results.values():
        assert set(summary) == {*labels, "pass@2"}
        assert all(v is None or 0.0 <= v <= 1.0 for v in summary.values())
    table = capsys.readouterr().out
    assert "| metric | base | trained | change |" in table
    assert f"{labels[0]} (greedy)" in table and "pass@2" in table
    predictions = [
        json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()
    ]
    assert len(predictions) == 8 and {p["model"] for p in predictions} == {"base", "trained"}
    assert "| metric | base | trained | change |" in (out / "report.md").read_text()


def test_the_metric_is_the_tasks_correctness_reward():
    from {{ cookiecutter.package_name }}.rewards import REGISTRY

    assert TASK.metrics, "the task names its evaluation metric"
    for _, name in TASK.metrics:
        assert name in REGISTRY


def test_ideal_completions_score_full_marks(sample_rows, recipe):
    rows = [dict(row) for row in sample_rows.select(range(min(5, len(sample_rows))))]
    ideal = [TASK.ideal_completion(row, recipe.task) for row in rows]
    metrics = evaluate.metric_functions(recipe.reward_settings())
    for label, values in evaluate.score(metrics, ideal, rows).items():
        assert all(v is None or v == pytest.approx(1.0) for v in values), label


def test_a_missing_trained_model_is_one_clear_error(tmp_path):
    with pytest.raises(evaluate.UserError, match="no trained model"):
        evaluate.evaluate(["--smoke", "--model", str(tmp_path / "nothing")])


def test_evaluating_on_the_training_file_says_it_is_not_held_out(recipe, tmp_path):
    """A local file has no splits: evaluating on the file the run trained on is labelled."""
    run = tmp_path / "run"
    run.mkdir()
    local = "data/mine.jsonl"
    train = {"dataset_name": local, "dataset_train_split": "train"}
    (run / "run_record.json").write_text(json.dumps({"recipe": train}))
    script = dataclasses.replace(recipe.script, dataset_name=local)
    same = recipe._replace(script=script)
    assert not evaluate.held_out(same, None, run)
    other = recipe._replace(script=dataclasses.replace(script, dataset_name="data/eval.jsonl"))
    assert evaluate.held_out(other, None, run)
    hub = recipe._replace(script=dataclasses.replace(script, dataset_name="org/data"))
    hub_record = {"recipe": {**train, "dataset_name": "org/data"}}
    (run / "run_record.json").write_text(json.dumps(hub_record))
    assert evaluate.held_out(hub, "test", run) and not evaluate.held_out(hub, "train", run)
