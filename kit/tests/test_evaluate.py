"""Evaluate: base vs trained model on the sample data with the tiny model; the decoding that
evaluate and infer share (the model card's recommended sampling by default, or greedy)."""

import argparse
import dataclasses
import json
from types import SimpleNamespace

import pytest

from {{ cookiecutter.package_name }} import evaluate, inference, project
from {{ cookiecutter.package_name }}.inference import Decoding
from {{ cookiecutter.package_name }}.tasks import TASK

CARD = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}


def test_before_after_table_predictions_and_report(logged_run, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    results = evaluate.evaluate(
        ["--smoke", "--model", str(logged_run), "--base", str(tiny_model_dir), "--limit", "4",
         "--max-new-tokens", "8", "--pass-k", "2", "--output-dir", str(out)]
    )  # fmt: skip
    labels = [label for label, _ in TASK.metrics]
    assert list(results) == ["base", "trained"]
    agent = {evaluate.CALLS} if TASK.environments is not None else set()  # calls per episode
    for summary in results.values():
        assert set(summary) == {*labels, "pass@2", *agent}
        assert all(summary[k] is None or 0.0 <= summary[k] <= 1.0 for k in [*labels, "pass@2"])
    table = capsys.readouterr().out
    assert "| metric | base | trained | change |" in table
    default = Decoding.default()
    how = "greedy" if default.greedy else "sampled"
    assert f"{labels[0]} ({how})" in table and "pass@2" in table
    assert f"metrics decoded: {default.describe()}" in table
    predictions = [
        json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()
    ]
    assert len(predictions) == 8 and {p["model"] for p in predictions} == {"base", "trained"}
    report = (out / "report.md").read_text()
    assert "| metric | base | trained | change |" in report
    assert f"metrics decoded: {default.describe()}" in report


def test_sampled_evaluation_repeats_and_greedy_is_an_option(tiny_model_dir, tmp_path):
    """The same seed gives the same numbers; --greedy decodes the metrics greedily."""
    common = ["--smoke", "--model", str(tiny_model_dir), "--no-base", "--limit", "2",
              "--max-new-tokens", "4", "--temperature", "1.0"]  # fmt: skip
    runs = [evaluate.evaluate([*common, "--output-dir", str(tmp_path / name)]) for name in "ab"]
    assert runs[0] == runs[1]
    completions = [
        [json.loads(line)["completion"] for line in (tmp_path / n / "predictions.jsonl").open()]
        for n in "ab"
    ]
    assert completions[0] == completions[1]
    greedy = ["--smoke", "--model", str(tiny_model_dir), "--no-base", "--limit", "1",
              "--max-new-tokens", "4", "--greedy", "--output-dir", str(tmp_path / "g")]  # fmt: skip
    evaluate.evaluate(greedy)
    report = (tmp_path / "g" / "report.md").read_text()
    assert "(greedy)" in report and "metrics decoded: greedy" in report


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


def decoding_of(*argv: str) -> Decoding:
    parser = argparse.ArgumentParser()
    inference.add_decoding_options(parser)
    return inference.decoding_from(parser.parse_args(argv))


def test_the_default_decoding_is_the_model_cards_recommended_sampling(monkeypatch):
    found = project.RECOMMENDED_SAMPLING
    assert Decoding.default() == (Decoding(**found) if found else Decoding())
    assert decoding_of() == Decoding.default()
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", CARD)
    assert Decoding.default() == Decoding(0.6, 0.95, 20) and not Decoding.default().greedy
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", None)
    assert Decoding.default() == Decoding() and Decoding.default().greedy


def test_the_decoding_options_change_the_default_or_decode_greedily(monkeypatch):
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", CARD)
    assert decoding_of("--greedy") == Decoding()
    assert decoding_of("--temperature", "0") == Decoding()
    assert decoding_of("--top-k", "5") == Decoding(0.6, 0.95, 5)
    assert decoding_of("--temperature", "1", "--top-p", "1") == Decoding(1.0, 1.0, 20)
    with pytest.raises(inference.UserError, match="--greedy takes no --top-p"):
        decoding_of("--greedy", "--top-p", "0.9")
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", None)
    assert decoding_of() == Decoding()
    assert decoding_of("--temperature", "0.7") == Decoding(0.7, 1.0, 0)
    with pytest.raises(inference.UserError, match="give a temperature above 0"):
        decoding_of("--top-k", "5")  # greedy by default: top-k alone would do nothing


@pytest.mark.parametrize(
    "fields, message",
    [((-0.1,), "temperature -0.1"), ((1.0, 0.0), "top_p 0.0"), ((1.0, 1.0, -1), "top_k -1")],
)
def test_an_impossible_decoding_is_one_clear_error(fields, message):
    with pytest.raises(inference.UserError, match=message):
        Decoding(*fields)


def test_a_broken_recommended_sampling_names_project_py(monkeypatch):
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", {"temperature": 0.6, "top": 1})
    with pytest.raises(inference.UserError, match="project.py RECOMMENDED_SAMPLING"):
        Decoding.default()


def test_the_decoding_reaches_model_generate(tiny_model_dir):
    """top_p and top_k reach transformers' generate: sampling that keeps only the likeliest
    token (top_k 1, or a tiny top_p nucleus) is greedy decoding, while sampling without a cut
    is not (at a temperature that flattens even a taught tiny model's distribution)."""
    from transformers import set_seed

    model = inference.load_model_for_inference(tiny_model_dir, device="cpu")
    tokenizer = inference.load_tokenizer_for(tiny_model_dir)  # padding as generation needs
    chats = [inference.chat("What is 2 + 3?")]

    def decode(decoding: Decoding) -> list[str]:
        set_seed(0)
        return inference.generate(model, tokenizer, chats, 6, decoding)

    greedy = decode(Decoding())
    assert decode(Decoding(100.0, 1.0, 1)) == greedy
    assert decode(Decoding(100.0, 1e-9, 0)) == greedy
    assert decode(Decoding(100.0, 1.0, 0)) != greedy
    assert Decoding(0.6, 0.95, 20).generate_kwargs() == {
        "do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20
    }  # fmt: skip
    assert Decoding().vllm_kwargs() == {"temperature": 0.0, "top_p": 1.0, "top_k": -1}


def test_pass_k_samples_with_the_decoding_the_model_card_or_the_rollouts(recipe, monkeypatch):
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", CARD)
    assert evaluate.pass_k_sampling(Decoding(0.9), recipe) == Decoding(0.9)
    assert evaluate.pass_k_sampling(Decoding(), recipe) == Decoding(0.6, 0.95, 20)
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", None)
    training = recipe.training
    rollouts = Decoding(training.temperature, training.top_p, training.top_k or 0)
    assert evaluate.pass_k_sampling(Decoding(), recipe) == rollouts


def test_the_report_names_the_decoding(monkeypatch):
    monkeypatch.setattr(project, "RECOMMENDED_SAMPLING", CARD)
    results = {"base": {"accuracy": 0.25, "pass@4": 0.5}, "trained": {"accuracy": 0.5, "pass@4": 1}}
    card = Decoding(0.6, 0.95, 20)
    args = SimpleNamespace(held_out=True, pass_k=4, seed=3, decoding=card, pass_k_decoding=card)
    table = evaluate.report_table(results, 8, args)
    assert "| accuracy (sampled) | 0.250 | 0.500 | +0.250 |" in table
    sampled = "sampling at temperature 0.6, top_p 0.95, top_k 20 (the model card's"
    assert f"- metrics decoded: {sampled}" in table
    assert f"- pass@4: 4 completions per prompt, {sampled}" in table
    assert "seed 3" in table
    args = SimpleNamespace(held_out=True, pass_k=1, seed=3, decoding=Decoding())
    table = evaluate.report_table({"trained": {"accuracy": 0.5}}, 8, args)
    assert "| accuracy (greedy) | 0.500 |" in table and "- metrics decoded: greedy\n" in table
    assert "seed" not in table
