"""Evaluate: base vs trained model on the sample data with the tiny model; the decoding that
evaluate and infer share (the model card's recommended sampling by default, or greedy)."""

import argparse
import dataclasses
import json
from types import SimpleNamespace

import pytest
from conftest import TASKS, chdir, load, make_project, rows_of, sample_recipe
from grpo_kit import generation
from grpo_kit.commands import evaluate
from grpo_kit.errors import UserError
from grpo_kit.generation import Decoding

CARD = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
# The model card's sampling as generation writes it in [tool.grpo].
CARD_TOML = "recommended_sampling = { temperature = 0.6, top_p = 0.95, top_k = 20 }"


def with_sampling(project, sampling):
    """The project with another recommended sampling (None: the card gives none)."""
    return dataclasses.replace(project, recommended_sampling=sampling)


@pytest.fixture(scope="module")
def tools_model(projects, tmp_path_factory):
    """The tools project's tiny model: its tokenizer learns the rollouts' text (as the smoke
    run builds it)."""
    from grpo_kit.offline.tiny_model import project_tiny_model

    root = projects("tools")
    with chdir(root):
        out = tmp_path_factory.mktemp("tools-tiny") / "model"
        return project_tiny_model(out, load(root), recipe=sample_recipe(root))


@pytest.fixture(params=["math", "tools"])
def evaluated(request, projects, logged_run, tiny_model_dir, monkeypatch):
    """(project root, trained model, base model): the math project's logged run on its tiny
    model; the tools (agent) task's tiny model against itself, its tools really called."""
    if request.param == "math":
        return projects("math"), logged_run, tiny_model_dir
    model = request.getfixturevalue("tools_model")
    monkeypatch.chdir(projects("tools"))
    return projects("tools"), model, model


def test_before_after_table_predictions_and_report(evaluated, tmp_path, capsys):
    root, trained, base = evaluated
    task = load(root).task
    out = tmp_path / "eval"
    results = evaluate.evaluate(
        ["--smoke", "--model", str(trained), "--base", str(base), "--limit", "4",
         "--max-new-tokens", "8", "--pass-k", "2", "--output-dir", str(out)]
    )  # fmt: skip
    labels = [label for label, _ in task.metrics]
    assert list(results) == ["base", "trained"]
    agent = {evaluate.CALLS} if task.environments is not None else set()  # calls per episode
    for summary in results.values():
        assert set(summary) == {*labels, "pass@2", *agent}
        assert all(summary[k] is None or 0.0 <= summary[k] <= 1.0 for k in [*labels, "pass@2"])
    table = capsys.readouterr().out
    assert "| metric | base | trained | change |" in table
    default = Decoding.default(load(root))
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


@pytest.mark.parametrize("task_name", TASKS)
def test_the_metric_is_the_tasks_correctness_reward(task_name, projects):
    task = load(projects(task_name)).task
    assert task.metrics, "the task names its evaluation metric"
    for _, func in task.metrics:
        assert task.reward_table.get(func.__name__) is func
    assert task.correctness == task.metrics[0][1].__name__


@pytest.mark.parametrize("task_name", TASKS)
def test_ideal_completions_score_full_marks(task_name, projects):
    recipe = sample_recipe(projects(task_name))
    sample_rows = rows_of(recipe)
    task = recipe.project.task
    rows = [dict(row) for row in sample_rows.select(range(min(5, len(sample_rows))))]
    with chdir(recipe.project.root):
        ideal = [task.ideal_completion(row, recipe.task) for row in rows]
        metrics = evaluate.metric_functions(task, recipe.reward_settings())
        scored = evaluate.score(metrics, ideal, rows)
    for label, values in scored.items():
        assert all(v is None or v == pytest.approx(1.0) for v in values), label


def test_a_missing_trained_model_is_one_clear_error(tmp_path):
    with pytest.raises(evaluate.UserError, match="no trained model"):
        evaluate.evaluate(["--smoke", "--model", str(tmp_path / "nothing")])


def test_evaluating_on_the_training_file_says_it_is_not_held_out(recipe, tmp_path):
    """A local file has no splits: evaluating on the file the run trained on is held out when
    the run record says training held evaluate's rows out (this kit's runs); a run of an older
    kit trained on all of it, and --all-rows scores the trained rows too: both are labelled."""
    run = tmp_path / "run"
    run.mkdir()
    local = "data/mine.jsonl"
    train = {"dataset_name": local, "dataset_train_split": "train"}
    (run / "run_record.json").write_text(json.dumps({"recipe": train}))
    script = dataclasses.replace(recipe.script, dataset_name=local)
    same = recipe._replace(script=script)
    assert not evaluate.held_out(same, None, run)
    hashed = {"recipe": train, "held_out": {"by": "hash", "rows": 8}}
    (run / "run_record.json").write_text(json.dumps(hashed))
    assert evaluate.held_out(same, None, run)
    assert not evaluate.held_out(same, None, run, all_rows=True)
    (run / "run_record.json").write_text(json.dumps({"recipe": train}))
    other = recipe._replace(script=dataclasses.replace(script, dataset_name="data/eval.jsonl"))
    assert evaluate.held_out(other, None, run)
    hub = recipe._replace(script=dataclasses.replace(script, dataset_name="org/data"))
    hub_record = {"recipe": {**train, "dataset_name": "org/data"}}
    (run / "run_record.json").write_text(json.dumps(hub_record))
    assert evaluate.held_out(hub, "test", run) and not evaluate.held_out(hub, "train", run)


def decoding_of(project, *argv: str) -> Decoding:
    parser = argparse.ArgumentParser()
    generation.add_decoding_options(parser, project)
    return generation.decoding_from(parser.parse_args(argv), project)


def test_the_default_decoding_is_the_model_cards_recommended_sampling(project):
    found = project.recommended_sampling
    assert Decoding.default(project) == (Decoding(**found) if found else Decoding())
    assert decoding_of(project) == Decoding.default(project)
    card = with_sampling(project, CARD)
    assert Decoding.default(card) == Decoding(0.6, 0.95, 20) and not Decoding.default(card).greedy
    none = with_sampling(project, None)
    assert Decoding.default(none) == Decoding() and Decoding.default(none).greedy


def test_the_recommended_sampling_is_read_from_pyproject(tmp_path):
    """[tool.grpo] recommended_sampling, as the template writes it, is the default decoding."""
    card = load(make_project(tmp_path / "card", extra=CARD_TOML))
    assert card.recommended_sampling == CARD
    assert Decoding.default(card) == Decoding(0.6, 0.95, 20)
    assert decoding_of(card) == Decoding(0.6, 0.95, 20)
    assert Decoding.default(load(make_project(tmp_path / "none"))) == Decoding()


def test_the_decoding_options_change_the_default_or_decode_greedily(project):
    card = with_sampling(project, CARD)
    assert decoding_of(card, "--greedy") == Decoding()
    assert decoding_of(card, "--temperature", "0") == Decoding()
    assert decoding_of(card, "--top-k", "5") == Decoding(0.6, 0.95, 5)
    assert decoding_of(card, "--temperature", "1", "--top-p", "1") == Decoding(1.0, 1.0, 20)
    with pytest.raises(UserError, match="--greedy takes no --top-p"):
        decoding_of(card, "--greedy", "--top-p", "0.9")
    none = with_sampling(project, None)
    assert decoding_of(none) == Decoding()
    assert decoding_of(none, "--temperature", "0.7") == Decoding(0.7, 1.0, 0)
    with pytest.raises(UserError, match="give a temperature above 0"):
        decoding_of(none, "--top-k", "5")  # greedy by default: top-k alone would do nothing


@pytest.mark.parametrize(
    "fields, message",
    [((-0.1,), "temperature -0.1"), ((1.0, 0.0), "top_p 0.0"), ((1.0, 1.0, -1), "top_k -1")],
)
def test_an_impossible_decoding_is_one_clear_error(fields, message):
    with pytest.raises(UserError, match=message):
        Decoding(*fields)


def test_a_broken_recommended_sampling_names_pyproject(project, tmp_path):
    broken = with_sampling(project, {"temperature": 0.6, "top": 1})
    with pytest.raises(UserError, match=r"pyproject.toml \[tool.grpo\] recommended_sampling"):
        Decoding.default(broken)
    written = load(make_project(tmp_path, extra="recommended_sampling = { temperature = -1 }"))
    with pytest.raises(UserError, match=r"pyproject.toml \[tool.grpo\] recommended_sampling"):
        Decoding.default(written)


def test_the_decoding_reaches_model_generate(tiny_model_dir):
    """top_p and top_k reach transformers' generate: sampling that keeps only the likeliest
    token (top_k 1, or a tiny top_p nucleus) is greedy decoding, while sampling without a cut
    is not (at a temperature that flattens even a taught tiny model's distribution)."""
    from transformers import set_seed

    model = generation.load_model_for_inference(tiny_model_dir, device="cpu")
    tokenizer = generation.load_tokenizer_for(tiny_model_dir)  # padding as generation needs
    chats = [generation.chat("What is 2 + 3?")]

    def decode(decoding: Decoding) -> list[str]:
        set_seed(0)
        return generation.generate(model, tokenizer, chats, 6, decoding)

    greedy = decode(Decoding())
    assert decode(Decoding(100.0, 1.0, 1)) == greedy
    assert decode(Decoding(100.0, 1e-9, 0)) == greedy
    assert decode(Decoding(100.0, 1.0, 0)) != greedy
    assert Decoding(0.6, 0.95, 20).generate_kwargs() == {
        "do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20
    }  # fmt: skip
    assert Decoding().vllm_kwargs() == {"temperature": 0.0, "top_p": 1.0, "top_k": -1}


def test_pass_k_samples_with_the_decoding_the_model_card_or_the_rollouts(recipe):
    card = recipe._replace(project=with_sampling(recipe.project, CARD))
    assert evaluate.pass_k_sampling(Decoding(0.9), card) == Decoding(0.9)
    assert evaluate.pass_k_sampling(Decoding(), card) == Decoding(0.6, 0.95, 20)
    none = recipe._replace(project=with_sampling(recipe.project, None))
    training = recipe.training
    rollouts = Decoding(training.temperature, training.top_p, training.top_k or 0)
    assert evaluate.pass_k_sampling(Decoding(), none) == rollouts


def test_the_report_names_the_decoding(project):
    card_project = with_sampling(project, CARD)
    results = {"base": {"accuracy": 0.25, "pass@4": 0.5}, "trained": {"accuracy": 0.5, "pass@4": 1}}
    card = Decoding(0.6, 0.95, 20)
    args = SimpleNamespace(
        held_out=True, pass_k=4, seed=3, decoding=card, pass_k_decoding=card, project=card_project
    )
    table = evaluate.report_table(results, 8, args)
    assert "| accuracy (sampled) | 0.250 | 0.500 | +0.250 |" in table
    sampled = "sampling at temperature 0.6, top_p 0.95, top_k 20 (the model card's"
    assert f"- metrics decoded: {sampled}" in table
    assert f"- pass@4: 4 completions per prompt, {sampled}" in table
    assert "seed 3" in table
    args = SimpleNamespace(
        held_out=True, pass_k=1, seed=3, decoding=Decoding(), project=card_project
    )
    table = evaluate.report_table({"trained": {"accuracy": 0.5}}, 8, args)
    assert "| accuracy (greedy) | 0.500 |" in table and "- metrics decoded: greedy\n" in table
    assert "seed" not in table


def record(folder, **recipe_values):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run_record.json").write_text(json.dumps({"recipe": recipe_values}))


def test_checkpoints_and_merged_folders_are_held_out_by_their_runs_record(recipe, tmp_path):
    """A checkpoint-N or merged folder has no run record of its own: the run's, one folder up,
    says what it trained on (issue 26: they were labelled "TRAINING data" when held out)."""
    run = tmp_path / "run"
    record(run, dataset_name="data/train.jsonl", dataset_train_split="train")
    for folder in (run / "checkpoint-2", run / "merged"):
        folder.mkdir()
        held = recipe._replace(
            script=dataclasses.replace(recipe.script, dataset_name="data/held_out.jsonl")
        )
        assert evaluate.held_out(held, None, folder)
        same = recipe._replace(
            script=dataclasses.replace(recipe.script, dataset_name="data/train.jsonl")
        )
        assert not evaluate.held_out(same, None, folder)


def test_without_a_run_record_the_recipes_own_training_data_decides(recipe, tmp_path):
    """`--dataset_name FILE` on the command line is the evaluation data, not what trained: the
    recipe's own data (parsed without the command line) is compared with it."""
    folder = tmp_path / "merged"
    folder.mkdir()
    held = recipe._replace(
        script=dataclasses.replace(recipe.script, dataset_name="data/held_out.jsonl")
    )
    own = ("data/sample_math.jsonl", "train")
    assert evaluate.held_out(held, None, folder, own)
    assert not evaluate.held_out(held, None, folder, ("data/held_out.jsonl", "train"))


def test_the_base_model_is_the_one_the_run_trained_from(recipe, tmp_path):
    run = tmp_path / "run"
    record(run, model_name_or_path="outputs/tiny-model")
    (run / "merged").mkdir()
    args = SimpleNamespace(base=None)
    for trained in (run, run / "merged"):
        assert evaluate.base_model(args, recipe, trained)[0] == "outputs/tiny-model"
    assert evaluate.base_model(SimpleNamespace(base="other"), recipe, run) == ("other", "--base")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert evaluate.base_model(args, recipe, plain)[0] == recipe.model.model_name_or_path


def test_a_trial_run_is_evaluated_offline_against_its_own_model(logged_run, tmp_path, capsys):
    """`make evaluate RUN_DIR=outputs/trial` (issue 29): the recipe's model is a Hub id (here
    one that does not exist, and the Hub is off); the base is the run's own model, from its run
    record, and the report says so, with the format compliance of both models."""
    out = tmp_path / "eval"
    results = evaluate.evaluate(
        ["--model", str(logged_run), "--dataset_name", "data/sample_math.jsonl", "--limit", "2",
         "--max-new-tokens", "4", "--output-dir", str(out)]
    )  # fmt: skip
    assert list(results) == ["base", "trained"]
    table = capsys.readouterr().out
    base = json.loads((logged_run / "run_record.json").read_text())["recipe"]["model_name_or_path"]
    assert f"- base: `{base}` (the model the run trained from, per its run record)" in table
    # the run trained on the sample file without the rows evaluate holds out (issue 40)
    assert "2 held-out prompts from data/sample_math.jsonl (held out by a hash" in table
    assert "compared with the run record's training data" in table
    assert "| format reward | base | trained | change |" in table
    assert "| strict_format |" in table and "| partial_format |" in table
    summary = json.loads((out / "summary.json").read_text())
    assert summary["models"]["base"] == base and set(summary["format"]["base"]) == {
        "strict_format", "partial_format"
    }  # fmt: skip
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").open()]
    assert all("strict_format" in p for p in predictions)


def test_an_offline_runs_data_is_evaluated_when_the_recipe_names_the_hub(
    logged_run, recipe, tmp_path, caplog
):
    """A fresh project: `make try` trained on the shipped sample (the recipe names the task's
    Hub dataset), then `make evaluate RUN_DIR=outputs/trial` reached for the Hub (issue 41's
    walk). The offline run's own data is evaluated, said in one line; data given on the command
    line, or an offline flag, still decides."""
    trained_on = json.loads((logged_run / "run_record.json").read_text())["recipe"]
    assert trained_on["smoke"] and trained_on["dataset_name"] == "data/sample_math.jsonl"
    hub = recipe._replace(script=dataclasses.replace(recipe.script, dataset_name="openai/gsm8k"))
    plain = SimpleNamespace(smoke=False, trial=False)
    with caplog.at_level("INFO"):
        found = evaluate.offline_run_data(logged_run, hub, plain, [])
    assert found[:2] == ["--dataset_name", "data/sample_math.jsonl"]
    assert "it was an offline run (make try or make smoke)" in caplog.text
    assert evaluate.offline_run_data(logged_run, hub, plain, ["--dataset_name=mine.jsonl"]) == []
    flagged = SimpleNamespace(smoke=False, trial=True)
    assert evaluate.offline_run_data(logged_run, hub, flagged, []) == []
    assert evaluate.offline_run_data(logged_run, recipe, plain, []) == []  # the same data
    switched = tmp_path / "switched"  # a smoke run of the task before a switch: its file gone
    record(switched, smoke=True, dataset_name="data/sample_gone.jsonl")
    with pytest.raises(UserError, match=r"offline run on data/sample_gone.jsonl \(its run "
                       r"record\), which is no longer here .*--dataset_name"):  # fmt: skip
        evaluate.offline_run_data(switched, hub, plain, [])
    real = tmp_path / "real"
    record(real, dataset_name="data/sample_math.jsonl")  # a run record without `smoke`
    assert evaluate.offline_run_data(real, hub, plain, []) == []


def test_another_models_decoding_is_its_own_or_greedy_never_the_projects_card(
    project, tiny_model_dir, tmp_path
):
    """The card's sampling belongs to the project's model (issue 26: SmolLM2 was decoded with
    Qwen3.5's and the report called it "the model card's recommendation")."""
    card = with_sampling(dataclasses.replace(project, model="org/project-model"), CARD)
    other = Decoding.for_model(card, tiny_model_dir)
    assert other.greedy and "is not the project's model (org/project-model)" in other.source
    note = evaluate.decoding_note(other, 0, card)
    assert note.startswith("greedy (") and "model card" not in note
    sampling = tmp_path / "sampling-model"
    sampling.mkdir()
    (sampling / "generation_config.json").write_text(
        json.dumps({"do_sample": True, "temperature": 0.3, "top_p": 0.9})
    )
    own = Decoding.for_model(card, sampling)
    assert own == Decoding(0.3, 0.9, 0) and own.source.endswith("generation_config.json")
    trained = tmp_path / "run"
    record(trained, model_name_or_path="org/project-model")
    assert Decoding.for_model(card, trained) == Decoding(0.6, 0.95, 20)
    assert "model card's recommendation" in Decoding.for_model(card, trained).source
    assert Decoding.for_model(card, None) == Decoding(0.6, 0.95, 20)
    args = argparse.Namespace(greedy=False, temperature=0.9, top_p=None, top_k=None)
    changed = generation.decoding_from(args, card, tiny_model_dir)
    assert changed == Decoding(0.9, 1.0, 0) and changed.source == "your decoding options"


def test_a_folder_the_kit_built_is_the_model_it_stands_for(project, tmp_path):
    """Issue 40: evaluate called the offline SmolLM2 build "not the project's model" in a project
    generated for SmolLM2, and decoded it greedily. The builder's marker (`hub_id`) names the
    model; the folder, and a run trained from it, decode as that model does."""
    card = with_sampling(dataclasses.replace(project, model="org/project-model"), CARD)
    built = tmp_path / "built"
    built.mkdir()
    (built / "config.json").write_text("{}")
    assert generation.stands_for(built) is None  # no marker: a folder like any other
    assert "is not the project's model" in Decoding.for_model(card, built).source
    marker = built / generation.MODEL_SOURCE
    marker.write_text(json.dumps({"hub_id": "org/project-model", "wheel": "x==1"}))
    assert generation.stands_for(built) == "org/project-model"
    assert Decoding.for_model(card, built) == Decoding(0.6, 0.95, 20)
    trained = tmp_path / "run"
    record(trained, model_name_or_path=str(built))
    assert Decoding.for_model(card, trained) == Decoding(0.6, 0.95, 20)
    other = dataclasses.replace(card, model="org/other-model")
    decoding = Decoding.for_model(other, trained)
    assert decoding.greedy and decoding.source == (
        f"greedy: org/project-model (built in {built}) is not the project's model "
        "(org/other-model) and its generation_config.json asks for no sampling"
    )
    for broken in ("not json", "[1]", '{"hub_id": 3}', '{"hub_id": ""}'):
        marker.write_text(broken)
        assert generation.stands_for(built) is None, broken
    assert generation.stands_for("org/project-model") is None  # a Hub id: no folder, no marker


def test_no_model_errors_name_the_flag_that_fixes_them(tmp_path):
    with pytest.raises(evaluate.UserError, match=r"RUN_DIR=outputs/<run> .*--model PATH"):
        evaluate.evaluate(["--smoke", "--model", str(tmp_path / "nothing")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match=r"no adapter_config.json or config.json.*RUN_DIR="):
        generation.check_model_dir(empty)


@pytest.mark.parametrize(
    ("cores", "load", "threads"), [(2, 0.2, 2), (2, 1.0, 1), (2, 6.0, 1), (8, 2.4, 6), (4, 0, 4)]
)
def test_cpu_threads_are_the_idle_cores(cores, load, threads):
    assert generation.cpu_threads(cores, load) == threads


def test_an_explicit_thread_count_wins(monkeypatch):
    import torch

    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("GRPO_TORCH_THREADS", "1")
    try:
        assert generation.configure_cpu_threads() == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
