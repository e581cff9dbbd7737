"""Difficulty filtering: pass rates from the task's correctness reward, the band, the files it
writes, and a real run on the tiny model whose filtered file trains."""

import json
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }}.errors import UserError
from {{ cookiecutter.package_name }}.project import SAMPLE_DATA
from {{ cookiecutter.package_name }}.tasks import TASK
from {{ cookiecutter.package_name }}.tools import filter as difficulty

from conftest import RECIPE, smoke_train

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
def ideal_of(tiny_model_dir, tiny_tokenizer, tmp_path_factory):
    """{chat prompt: its ideal completion} for the sample data, as the filter builds prompts
    from the recipe the tests run it with (--smoke: its own prompt-length limit, which a long
    chat template header, such as SmolLM3's, can reach on the tiny tokenizer)."""
    from {{ cookiecutter.package_name }}.config import recipe_from
    from {{ cookiecutter.package_name }}.tokenizer import ready_for_generation

    argv = base_args(tiny_model_dir, tmp_path_factory.mktemp("ideal"))
    recipe = recipe_from(*difficulty.parse_args(argv), read_only=True)
    _, prompts, _ = difficulty.training_prompts(recipe, ready_for_generation(tiny_tokenizer), None)
    return {json.dumps(row["prompt"]): TASK.ideal_completion(row, recipe.task) for row in prompts}


def lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_pass_rates_the_band_and_the_files(tiny_model_dir, tmp_path, ideal_of, capsys):
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
    # The kept rows, as the data file has them (its own columns), in order.
    data_rows = lines(Path(SAMPLE_DATA))
    kept = [data_rows[r["row"]] for r in rates if r["kept"]]
    assert lines(filtered) == kept and kept
    printed = capsys.readouterr().out
    assert f"--dataset_name {filtered}" in printed and "never solved" in printed


def test_an_empty_band_says_why_and_writes_no_data_file(tiny_model_dir, tmp_path, ideal_of):
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
    args, _ = difficulty.parse_args([])
    settings = difficulty.sampling_settings(recipe, args)
    assert settings["temperature"] == recipe.training.temperature
    assert settings["max_new_tokens"] == recipe.training.max_completion_length
    args, _ = difficulty.parse_args(["--temperature", "0.7", "--max-new-tokens", "99"])
    assert difficulty.sampling_settings(recipe, args)["temperature"] == 0.7


@pytest.mark.slow
def test_the_tiny_model_filters_the_sample_data_and_training_runs_on_it(tiny_model_dir, tmp_path):
    """`make filter` offline: real sampling (transformers) and scoring; the tiny random model
    solves nothing, so the band starts at 0 to keep rows; then train on the filtered file."""
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
