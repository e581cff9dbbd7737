"""Difficulty filtering: pass rates from the task's correctness reward, the band, the files it
writes, and a real run on the tiny model whose filtered file trains."""

import json
from pathlib import Path

import pytest
from conftest import RECIPE, VERIFIED_TASKS, chdir, load, sample_recipe, smoke_train
from grpo_kit.commands import filter as difficulty
from grpo_kit.errors import UserError
from grpo_kit.heldout import held_out_indices

K = 4


def base_args(tiny_model_dir, out, *extra):
    return [
        "--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir),
        "--output-dir", str(out), "--k", str(K), *extra,
    ]  # fmt: skip


def scripted(ideal_of, solved):
    """A sampler that answers prompt i with `solved(i)` ideal completions out of k (the rest
    are wrong): pass rates known in advance, no model."""

    def sample(conversations, k):
        found = []
        for i, conversation in enumerate(conversations):
            right = ideal_of[json.dumps(conversation)]
            found.append([right if j < solved(i) else "no idea" for j in range(k)])
        return found

    return sample


@pytest.fixture(scope="module")
def tiny_models(projects, tmp_path_factory):
    """`tiny_models(task)`: (the task's project, its tiny model), built once per task (an agent
    task's tokenizer learns its rollouts' text, as the smoke run builds it)."""
    from grpo_kit.offline.tiny_model import project_tiny_model

    made: dict[str, tuple[Path, Path]] = {}

    def get(task: str) -> tuple[Path, Path]:
        if task not in made:
            root = projects(task)
            out = tmp_path_factory.mktemp(f"tiny-{task}") / "model"
            with chdir(root):
                recipe = sample_recipe(root)
                made[task] = (root, project_tiny_model(out, recipe.project, recipe=recipe))
        return made[task]

    return get


@pytest.fixture(params=VERIFIED_TASKS)
def filtering(request, tiny_models, tmp_path_factory, monkeypatch):
    """(the task's tiny model, {chat prompt: its ideal completion} for the sample data), run
    from the task's project. The prompts are built as the filter builds them from the recipe
    the tests run it with (--smoke: its own prompt-length limit, which a long chat template
    header, such as SmolLM3's, can reach on the tiny tokenizer)."""
    from grpo_kit.recipe import recipe_from
    from grpo_kit.tokenizer import ready_for_generation
    from transformers import AutoTokenizer

    root, model = tiny_models(request.param)
    monkeypatch.chdir(root)
    argv = base_args(model, tmp_path_factory.mktemp("ideal"))
    recipe = recipe_from(*difficulty.parse_args(argv), read_only=True)
    tokenizer = ready_for_generation(AutoTokenizer.from_pretrained(model))
    _, prompts, _ = difficulty.training_prompts(recipe, tokenizer, None)
    task = recipe.project.task
    ideal_of = {
        json.dumps(row["prompt"]): task.ideal_completion(row, recipe.task) for row in prompts
    }
    return model, ideal_of


def lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_pass_rates_the_band_and_the_files(filtering, tmp_path, capsys):
    tiny_model_dir, ideal_of = filtering
    out = tmp_path / "filter"
    solved = lambda i: i % (K + 1)  # noqa: E731 - pass rates 0, 1/4, ..., 1 in turn
    filtered = difficulty.filter_prompts(
        base_args(tiny_model_dir, out, "--min", "0.25", "--max", "0.75"),
        sampler=scripted(ideal_of, solved),
    )
    rates = lines(out / difficulty.PASS_RATES)
    assert [r["pass_rate"] for r in rates] == [solved(i) / K for i in range(len(rates))]
    assert [r["kept"] for r in rates] == [0.25 <= r["pass_rate"] <= 0.75 for r in rates]
    assert (out / difficulty.HISTOGRAM).read_bytes().startswith(b"\x89PNG")
    # The kept rows, as the data file has them (its own columns), in order: `row` counts the
    # training rows, evaluate's held-out rows left out (none of which the filter scores).
    task, recipe = load(Path.cwd()).task, sample_recipe(Path.cwd())
    data_rows = lines(Path(task.data.sample))
    if task.generate is not None:  # generated problems: evaluate's are another split
        training_rows = data_rows
    else:
        held = set(held_out_indices([row[recipe.script.prompt_column] for row in data_rows]))
        training_rows = [row for i, row in enumerate(data_rows) if i not in held]
    kept = [training_rows[r["row"]] for r in rates if r["kept"]]
    assert lines(filtered) == kept and kept
    printed = capsys.readouterr().out
    assert f"--dataset_name {filtered}" in printed and "never solved" in printed


def test_an_empty_band_says_why_and_writes_no_data_file(filtering, tmp_path):
    tiny_model_dir, ideal_of = filtering
    out = tmp_path / "filter"
    with pytest.raises(UserError, match="too hard"):
        difficulty.filter_prompts(
            base_args(tiny_model_dir, out), sampler=scripted(ideal_of, lambda i: 0)
        )
    assert all(r["pass_rate"] == 0.0 for r in lines(out / difficulty.PASS_RATES))
    assert (out / difficulty.HISTOGRAM).is_file() and not (out / difficulty.FILTERED).exists()


@pytest.mark.parametrize(
    "argv",
    [["--k", "1"], ["--min", "0.6", "--max", "0.2"], ["--max", "1.5"], ["--temperature", "0"]],
)
def test_bad_options_are_refused(argv):
    with pytest.raises(SystemExit):
        difficulty.parse_args(argv)


def test_vllm_is_used_only_where_it_can_run():
    import importlib.util

    import torch

    assert difficulty.use_vllm("transformers") is False
    if importlib.util.find_spec("vllm") is None or not torch.cuda.is_available():
        assert difficulty.use_vllm("auto") is False
        with pytest.raises(UserError, match="--engine transformers"):
            difficulty.use_vllm("vllm")


def test_sampling_follows_the_recipe(recipe):
    from grpo_kit.sampling import training_settings

    settings = training_settings(recipe)
    assert settings["temperature"] == recipe.training.temperature
    assert settings["max_new_tokens"] == recipe.training.max_completion_length
    mine = training_settings(recipe, temperature=0.7, max_new_tokens=99)
    assert (mine["temperature"], mine["max_new_tokens"]) == (0.7, 99)


def test_filter_samples_as_the_preflight_with_the_recipes_generation_kwargs(
    tiny_model_dir, tiny_tokenizer, tmp_path, monkeypatch
):
    """`make filter` and `make preflight` sample alike, the recipe's generation_kwargs included
    (filter once ignored them): both reach generate through sampling.py with the same settings."""
    import copy

    from grpo_kit import preflight, sampling

    extra = {"no_repeat_ngram_size": 3, "top_p": 0.8}
    seen = {}

    def recorder(model, tokenizer, settings, kwargs=None, **options):
        seen.setdefault("settings", []).append(settings)
        return lambda conversations, k: [
            [sampling.Completion("no idea", [1], False)] * k for _ in conversations
        ]

    real = difficulty.recipe_from

    def with_extra(*args, **kwargs):
        recipe = real(*args, **kwargs)
        training = copy.copy(recipe.training)
        training.generation_kwargs = extra
        seen["recipe"] = recipe = recipe._replace(training=training)
        return recipe

    monkeypatch.setattr(sampling, "transformers_sampler", recorder)
    monkeypatch.setattr(difficulty, "recipe_from", with_extra)
    argv = base_args(tiny_model_dir, tmp_path / "filter", "--min", "0", "--engine", "transformers")
    difficulty.filter_prompts(argv)
    preflight.check(seen["recipe"], tiny_tokenizer, prompts=1, generations=2)
    filtered, checked = seen["settings"]
    assert filtered == checked
    assert filtered["no_repeat_ngram_size"] == 3 and filtered["top_p"] == 0.8


@pytest.mark.slow
@pytest.mark.parametrize("task", ["math", "tools"])
def test_the_tiny_model_filters_the_sample_data_and_training_runs_on_it(
    task, tiny_models, tmp_path, monkeypatch
):
    """`make filter` offline: real sampling (transformers; an agent task's whole rollouts, its
    tools really run) and scoring; the tiny random model solves nothing, so the band starts at
    0 to keep rows; then train on the filtered file."""
    root, tiny_model_dir = tiny_models(task)
    monkeypatch.chdir(root)
    out = tmp_path / "filter"
    options = ["--min", "0", "--limit", "4", "--k", "2", "--max-new-tokens", "8"]
    filtered = difficulty.filter_prompts(
        base_args(tiny_model_dir, out, *options, "--engine", "transformers")
    )
    rates = lines(out / difficulty.PASS_RATES)
    assert len(rates) == 4 and all(0.0 <= r["pass_rate"] <= 1.0 for r in rates)
    assert (out / difficulty.HISTOGRAM).is_file() and len(lines(filtered)) == 4
    trainer = smoke_train(
        tiny_model_dir, tmp_path / "run", "--dataset_name", str(filtered), "--max_steps", "1"
    )
    assert trainer.state.global_step == 1


def test_the_vllm_sampler_passes_the_recipes_sampling_to_sampling_params(
    tiny_tokenizer, monkeypatch
):
    """vLLM samples as transformers does: the same settings (sampling.training_settings), top_k
    0 as vLLM's -1, generation_kwargs that SamplingParams knows passed on, others left out."""
    import sys
    import types

    from grpo_kit import sampling

    class SamplingParams:
        __struct_fields__ = ("n", "temperature", "top_p", "top_k", "min_p",
                             "repetition_penalty", "max_tokens", "presence_penalty")  # fmt: skip

        def __init__(self, **kwargs):
            self.kwargs = kwargs

    seen = []

    class LLM:
        def generate(self, prompts, params):
            seen.append(params.kwargs)
            choice = types.SimpleNamespace(text="4", token_ids=[7, 2], finish_reason="stop")
            return [types.SimpleNamespace(outputs=[choice] * params.kwargs["n"]) for _ in prompts]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=SamplingParams))
    settings = {"do_sample": True, "temperature": 0.9, "top_p": 1.0, "top_k": 0, "min_p": None,
                "repetition_penalty": 1.0, "max_new_tokens": 16, "presence_penalty": 1.5,
                "no_repeat_ngram_size": 3}  # fmt: skip
    sample = sampling.vllm_sampler(LLM(), tiny_tokenizer, settings)
    groups = sample([[{"role": "user", "content": "2 + 2?"}]], 3)
    assert [[c.text for c in g] for g in groups] == [["4", "4", "4"]]
    assert groups[0][0] == sampling.Completion("4", [7, 2], False)
    expected = {"n": 3, "temperature": 0.9, "top_p": 1.0, "top_k": -1, "min_p": 0.0,
                "repetition_penalty": 1.0, "max_tokens": 16, "presence_penalty": 1.5}  # fmt: skip
    assert seen == [expected]
