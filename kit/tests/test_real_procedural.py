"""The short path of the held-out benchmark (benchmarks/procedural_gain.py), on the real
SmolLM2-135M-Instruct and the procedural task: preflight -> warm-up -> a few GRPO steps. It asserts
the preflight's signal (the base model is refused for the format it never writes; after the
warm-up the rewards that teach the task vary within a group), not a gain: the gain is the
benchmark's figure. Counts are tiny (CPU minutes); skipped where the real model cannot be built
or reasoning-gym is missing."""

import json

import pytest
from conftest import CPU_RECIPE, chdir, load, make_project
from grpo_kit import preflight
from grpo_kit.offline import real_model as builder

pytestmark = [pytest.mark.real, pytest.mark.slow]

pytest.importorskip("reasoning_gym")

# The real model, short completions (a warm-up completion, worked steps and all, is 25-44 of
# its tokens, 35 at the median: the longest few are cut, which the signal asserted here does not
# depend on), a small group.
RECIPE = (
    CPU_RECIPE.replace("max_completion_length: 64", "max_completion_length: 40")
    .replace("learning_rate: 1.0e-05", "learning_rate: 5.0e-05")
    .replace("output_dir: outputs/run", "output_dir: outputs/procedural")
)


@pytest.fixture(scope="module")
def real_model_dir():
    try:
        return builder.ensure_real_model()
    except builder.RealModelUnavailable as err:
        pytest.skip(f"the real model ({builder.NAME}) cannot be built here: {err}")


def test_preflight_refuses_the_base_for_format_then_warmup_gives_signal_and_grpo_trains(
    real_model_dir, tmp_path
):
    from grpo_kit import training
    from grpo_kit.commands.warmup import warm_up
    from grpo_kit.recipe import parse_recipe
    from grpo_kit.tokenizer import load_tokenizer

    root = make_project(
        tmp_path / "project", "procedural", tiny_arch="llama", chat_template="smollm2",
        recipe=RECIPE.replace("kit/test-model", str(real_model_dir)),
    )  # fmt: skip
    project = load(root)

    def signal_of(model):
        recipe = parse_recipe(
            ["--config", "configs/grpo.yaml", "--model_name_or_path", str(model)],
            project=project,
        )
        return preflight.check(recipe, load_tokenizer(recipe.model), prompts=4, generations=4)

    with chdir(root):
        base = signal_of(real_model_dir)
        # refused, and for the format: it never writes the tags, so correctness cannot score
        assert not base.learns and base.format_unwritten
        assert base.teaching_spread == 0
        assert any("never writes the format" in line for line in base.advice())

        merged = warm_up(["--examples", "8", "--epochs", "3"], project=project)
        warm = signal_of(merged)
        # the teaching rewards (format, correctness; never length) now vary within a group
        assert warm.learns and warm.teaching_spread > 0, preflight.report(warm)
        assert not warm.format_unwritten

        training.run(
            None,
            ["--config", "configs/grpo.yaml", "--model_name_or_path", str(merged),
             "--preflight", "false", "--max_steps", "2"],
            project=project,
        )  # fmt: skip
    state = json.loads((root / "outputs/procedural/trainer_state.json").read_text())
    steps = [row for row in state["log_history"] if "reward" in row]
    assert [row["step"] for row in steps] == [1, 2]
    assert all("rewards/procedural_correctness/mean" in row for row in steps)
