"""The signal preflight (grpo_kit/preflight.py, `grpo preflight`): the table, the verdict and the
advice from scripted groups of completions (no model), and a real check of the tiny model, which
has no signal and is refused before the first step."""

import copy
import dataclasses
import json
from pathlib import Path

import pytest
from conftest import RECIPE, chdir, load, rows_of, sample_recipe
from grpo_kit import preflight
from grpo_kit.commands import preflight as command
from grpo_kit.preflight import NoSignal
from grpo_kit.sampling import Completion

LIMIT = 64  # the test recipe's max_completion_length (conftest.CPU_RECIPE)


def scripted(recipe, answer):
    """A sampler answering completion j of prompt `row` with `answer(row, j)`: (text, tokens);
    a completion of LIMIT tokens is cut off."""
    rows = {json.dumps(row["prompt"]): dict(row) for row in rows_of(recipe)}

    def sample(conversations, k):
        found = []
        for conversation in conversations:
            row = rows[json.dumps(conversation)]
            group = []
            for j in range(k):
                text, tokens = answer(row, j)
                group.append(Completion(text, list(range(tokens)), tokens >= LIMIT))
            found.append(group)
        return found

    return sample


def ideal(recipe, row) -> str:
    return recipe.project.task.ideal_completion(row, recipe.task)


def measured(recipe, tokenizer, answer, **options):
    with chdir(recipe.project.root):
        return preflight.check(
            recipe, tokenizer, sampler=scripted(recipe, answer), prompts=4, generations=4,
            **options,
        )  # fmt: skip


def by_name(signal):
    return {r.name: r for r in signal.rewards}


def test_a_model_that_never_writes_the_format_has_no_signal(recipe, tiny_tokenizer):
    """The SmolLM2 case of issue 26: no tag, every completion cut off: nothing varies."""
    signal = measured(recipe, tiny_tokenizer, lambda row, j: ("Janet has 16 eggs", LIMIT))
    assert not signal.learns and not signal.length_only
    assert signal.groups == 4 and signal.generations == 4 and signal.total_spread == 0
    assert [r.name for r in signal.rewards] == list(recipe.script.reward_funcs)
    assert all(r.spread == 0 for r in signal.rewards)
    assert signal.clip_rate == 1.0 and signal.lengths == (LIMIT, LIMIT, LIMIT)
    table = signal.table()
    for name in recipe.script.reward_funcs:
        assert f"| {name} |" in table
    assert "| strict_format | format | 0.5 | 0.000 | 0/4 |" in table
    assert f"| clipped at {LIMIT} tokens | completions | | 1.000 | |" in table
    assert "verdict: NO SIGNAL:" in table
    advice = " ".join(signal.advice())
    assert "raise it to 192" in advice  # twice the cap (all cut), +25%, to a multiple of 64
    assert "grpo warmup" in advice and "system_prompt" in advice
    # the cause is the format, not difficulty: no filter, no larger model (issue 40)
    assert "the cause is the format" in advice
    assert "grpo filter" not in advice and "larger model" not in advice
    with pytest.raises(NoSignal, match="--preflight_refuse false"):
        preflight.refuse(signal)


def test_format_and_correctness_spread_means_training_can_learn(recipe, tiny_tokenizer):
    """Half of each group ideal, half plain text of a few tokens."""
    signal = measured(
        recipe, tiny_tokenizer,
        lambda row, j: (ideal(recipe, row), 20) if j % 2 else ("I do not know.", 5),
    )  # fmt: skip
    rewards = by_name(signal)
    assert signal.learns and signal.total_spread == 4 and signal.teaching_spread == 4
    assert rewards["math_correctness"].spread == 4 and rewards["strict_format"].spread == 4
    assert rewards["math_correctness"].mean == pytest.approx(0.5)
    assert rewards["soft_overlong"].spread == 0  # nothing is near the cap
    assert signal.clip_rate == 0.0 and signal.lengths == (5, 20, 20)
    assert (
        "training can learn: the rewards that teach the task vary within 4 of 4 group(s) of 4 "
        "(math_correctness 4/4, strict_format 4/4, partial_format 4/4)"
    ) in signal.table()
    assert signal.advice() == []
    preflight.refuse(signal)  # no error


def test_length_alone_is_refused(recipe, tiny_tokenizer):
    """Only soft_overlong varies: a run would train length and nothing else."""
    signal = measured(
        recipe, tiny_tokenizer, lambda row, j: ("words " * 10, LIMIT if j % 2 else 10)
    )
    assert signal.length_only and not signal.learns
    assert by_name(signal)["soft_overlong"].spread == 4
    assert signal.total_spread == 4 and signal.teaching_spread == 0
    assert "| teaching (weighted, no length) | | | | 0/4 |" in signal.table()
    assert "NO SIGNAL beyond length: only soft_overlong vary" in signal.verdict()
    assert "(soft_overlong 4/4)" in signal.verdict()
    with pytest.raises(NoSignal, match="train completion length and nothing else"):
        preflight.refuse(signal)


def test_the_verdict_counts_the_teaching_groups_as_its_table_does(recipe, tiny_tokenizer):
    """Issue 40: the table showed math_correctness with spread in 1/8 groups and the verdict
    said it varied within 8 of 8, counting the length reward's spread (the total's). One
    completion of one group is right; every group's lengths vary."""
    first: list[str] = []

    def answer(row, j):
        key = json.dumps(row["prompt"])
        first[:] = first or [key]
        if key == first[0] and j == 0:
            return ideal(recipe, row), 20
        return "words " * 10, LIMIT if j % 2 else 10

    signal = measured(recipe, tiny_tokenizer, answer)
    rewards = by_name(signal)
    assert rewards["math_correctness"].spread == 1 and rewards["soft_overlong"].spread == 4
    assert signal.total_spread == 4 and signal.teaching_spread == 1 and signal.learns
    table = signal.table()
    assert "| math_correctness | correctness |" in table and "| 1/4 |\n" in table
    assert "| teaching (weighted, no length) | | | | 1/4 |" in table
    verdict = signal.verdict()
    assert "vary within 1 of 4 group(s) of 4 (math_correctness 1/4, strict_format 1/4" in verdict
    assert "soft_overlong 4/4 only trains length" in verdict
    assert "4 of 4" not in verdict


def test_a_length_rewards_spread_alone_never_learns():
    """The total reward varies (the length reward's), the teaching rewards do not."""
    rewards = (
        preflight.RewardSignal("math_correctness", "correctness", 1.0, 0.0, 0, 0.0, 1.0),
        preflight.RewardSignal("soft_overlong", "length", 0.5, -0.4, 8, -1.0, 0.0),
    )
    signal = preflight.Signal("m", rewards, 8, 4, 8, 0.5, (10, 64, 64), 64, "", False, 0)
    assert not signal.learns and signal.length_only
    with pytest.raises(NoSignal, match="NO SIGNAL beyond length"):
        preflight.refuse(signal)


WRONG = "<think>Work through the problem step by step.</think>\n<answer>-98765</answer>"


def test_prompts_never_solved_in_the_format_are_too_hard(recipe, tiny_tokenizer):
    """The format is written on every try, the answer is always wrong: the cause is
    difficulty (filter, or a larger model), not the format."""
    signal = measured(recipe, tiny_tokenizer, lambda row, j: (WRONG, 20))
    rewards = by_name(signal)
    assert rewards["strict_format"].at_top and rewards["math_correctness"].mean == 0
    assert not signal.format_unwritten and not signal.learns
    advice = " ".join(signal.advice())
    assert "too hard" in advice and "grpo filter" in advice and "larger model" in advice
    assert "grpo warmup" not in advice and "the cause is the format" not in advice


def test_format_varying_but_never_solved_is_too_hard_and_learns_the_format(recipe, tiny_tokenizer):
    signal = measured(
        recipe, tiny_tokenizer, lambda row, j: (WRONG, 20) if j % 2 else ("I do not know.", 20)
    )
    assert signal.learns and by_name(signal)["math_correctness"].spread == 0
    advice = " ".join(signal.advice())
    assert "too hard" in advice and "grpo filter" in advice and "grpo warmup" not in advice


def test_a_format_never_written_advises_the_warm_up_not_a_filter(recipe, tiny_tokenizer):
    """Issue 40's sentiment base model: answers in free text, never in the tags, within the
    budget: the advice (and the refusal) names the format, never filtering or a larger model."""
    signal = measured(recipe, tiny_tokenizer, lambda row, j: ("The answer is 18.", 8))
    assert signal.format_unwritten and not signal.learns and signal.clip_rate == 0.0
    advice = signal.advice()
    assert "never writes the format" in advice[0] and "grpo warmup" in advice[0]
    assert not any("grpo filter" in line or "larger model" in line for line in advice)
    with pytest.raises(NoSignal, match="never writes the format"):
        preflight.refuse(signal)


def test_prompts_solved_every_time_are_too_easy(recipe, tiny_tokenizer):
    signal = measured(recipe, tiny_tokenizer, lambda row, j: (ideal(recipe, row), 12))
    assert not signal.learns
    assert by_name(signal)["math_correctness"].at_top
    assert any("solved on every try: too easy" in line for line in signal.advice())


def test_thinking_and_clipped_completions_advise_turning_thinking_off(recipe, tiny_tokenizer):
    training = copy.copy(recipe.training)
    training.chat_template_kwargs = {"enable_thinking": True}
    thinking = recipe._replace(training=training)
    signal = measured(thinking, tiny_tokenizer, lambda row, j: ("hmm " * 20, LIMIT))
    assert signal.thinking
    assert any("turn thinking off" in line for line in signal.advice())


@pytest.mark.parametrize(
    ("lengths", "cap", "advised"),
    [((100, 180, 200), 256, 320), ((256, 256, 256), 256, 640), ((10, 20, 30), 64, 128)],
)
def test_the_advised_length_is_the_p95_with_a_margin(lengths, cap, advised):
    signal = preflight.Signal("m", (), 1, 2, 0, 1.0, lengths, cap, "")
    assert preflight.advised_length(signal) == advised


def test_the_sampling_is_the_recipes(recipe):
    from grpo_kit import sampling

    settings = sampling.training_settings(recipe)
    training = recipe.training
    assert settings["do_sample"] is True
    assert settings["temperature"] == training.temperature
    assert settings["top_p"] == training.top_p and settings["top_k"] == (training.top_k or 0)
    assert settings["max_new_tokens"] == training.max_completion_length


def tiny_recipe(tiny_model_dir, *extra):
    from grpo_kit.recipe import parse_recipe

    argv = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir), *extra]
    return parse_recipe(argv, project=load(Path.cwd()))


def test_the_tiny_random_model_has_no_signal_and_is_refused(tiny_model_dir, tiny_tokenizer):
    """The real check on a real (random) model: sampled with the recipe's settings, every
    completion cut off at the smoke run's 16 tokens, no format, no answer: nothing varies."""
    recipe = tiny_recipe(tiny_model_dir)
    signal = preflight.check(recipe, tiny_tokenizer, prompts=2, generations=3)
    assert signal.groups == 2 and signal.generations == 3
    assert signal.model == str(tiny_model_dir)
    assert not signal.learns
    assert signal.lengths is not None and signal.lengths[2] <= recipe.training.max_completion_length
    text = preflight.report(signal)
    assert "what to change:" in text and "grpo warmup" in text
    with pytest.raises(NoSignal):
        preflight.refuse(signal)


def test_the_command_prints_the_table_and_refuses(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "preflight.md"
    code = command.main(
        ["--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir),
         "--prompts", "2", "--generations", "2", "--output", str(out)]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2
    assert "| reward | kind | weight | mean | groups with spread |" in captured.out
    assert "error: preflight: NO SIGNAL" in captured.err
    assert out.read_text() in captured.out


def test_bad_options_are_refused():
    with pytest.raises(SystemExit):
        command.parse_args(["--generations", "1"])


def test_train_refuses_a_run_without_signal_before_the_first_step(tiny_model_dir, tmp_path, capsys):
    """`make train` on the tiny random model: the table and the advice, then one error, and no
    step taken; `preflight_refuse: false` trains anyway."""
    from grpo_kit import training

    out = tmp_path / "run"
    argv = [
        "--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir),
        "--output_dir", str(out), "--preflight", "true", "--preflight_prompts", "2",
    ]  # fmt: skip
    with pytest.raises(NoSignal, match="NO SIGNAL"):
        training.run(None, argv, project=load(Path.cwd()))
    assert "| reward | kind | weight | mean | groups with spread |" in capsys.readouterr().out
    assert not (out / "trainer_state.json").exists()
    argv += ["--preflight_refuse", "false", "--max_steps", "1"]
    assert training.run(None, argv, project=load(Path.cwd())).state.global_step == 1


def test_train_skips_the_preflight_when_told_when_resuming_and_when_distributed(
    recipe, monkeypatch
):
    """`preflight: false` (the offline runs' layer sets it), a resumed run (it began from this
    model already) and a run of several processes (each would sample the model) skip it."""
    from grpo_kit import training

    def sampled(*args, **kwargs):
        raise AssertionError("the preflight ran")

    monkeypatch.setattr(preflight, "check", sampled)
    off = recipe._replace(script=dataclasses.replace(recipe.script, preflight=False))
    training.preflight_first(off, None)
    on = recipe._replace(script=dataclasses.replace(recipe.script, preflight=True))
    training.preflight_first(on, "outputs/run/checkpoint-10")
    monkeypatch.setattr(type(recipe.training), "world_size", property(lambda self: 2))
    training.preflight_first(on, None)


def test_the_offline_runs_turn_the_preflight_off(tiny_model_dir):
    assert tiny_recipe(tiny_model_dir).script.preflight is False
    assert tiny_recipe(tiny_model_dir, "--preflight", "true").script.preflight is True


def test_an_agent_tasks_preflight_samples_whole_rollouts(projects, tmp_path_factory):
    """The tools task: k whole rollouts per prompt through sampling.agent_sampler, tools really
    run; rollouts have no token counts, so no lengths are measured."""
    from grpo_kit.offline.tiny_model import project_tiny_model
    from grpo_kit.recipe import parse_recipe
    from grpo_kit.tokenizer import load_tokenizer

    root = projects("tools")
    with chdir(root):
        out = tmp_path_factory.mktemp("tools-tiny") / "model"
        model = project_tiny_model(out, load(root), recipe=sample_recipe(root))
        argv = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(model)]
        recipe = parse_recipe(argv, project=load(root))
        tokenizer = load_tokenizer(recipe.model)
        signal = preflight.check(recipe, tokenizer, prompts=2, generations=2)
    assert (signal.groups, signal.generations) == (2, 2)
    assert signal.lengths is None and signal.clip_rate is None
