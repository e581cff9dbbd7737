"""The project learns: its own train entry point on the tiny model, with a toy reward the tiny
model can learn, given by dotted path as a user would give their own reward. The toy task: start
the completion with one of a fixed 1/16 of the vocabulary (every token id divisible by 16), so
about 6% of the random model's completions score whatever the task's sample data (a word or
"start with a digit" scores 0-6% depending on the tokenizer trained on that data).

Full fine-tuning at a high learning rate (LoRA for the Unsloth backend, which trains adapters
only): the mean reward of the last logged steps must be far above the first ones.
"""

import pytest

from {{ cookiecutter.package_name }}.project import BACKEND, TINY_ARCH

REWARD = "tests.test_learning.starts_with_a_target_token"
# Gemma 4's tiny model learns the toy task more slowly: a run reached 0.875 by step 60 and 1.0
# by 80 (its steps also take several times longer on the CPU).
STEPS = 80 if TINY_ARCH == "gemma4" else 60
# Full fine-tuning where the backend allows it (as measured with bare TRL); the Unsloth backend
# trains LoRA adapters only, so lm_head trains in full beside them (adapters alone on a 2-layer
# model with random weights move the first token too slowly for 60 steps).
TUNING = (
    ["--use_peft", "false", "--learning_rate", "1e-2"]
    if BACKEND == "transformers"
    else [
        "--lora_r", "16", "--lora_alpha", "32", "--lora_modules_to_save", "lm_head",
        "--learning_rate", "5e-2",
    ]
)  # fmt: skip


def starts_with_a_target_token(completions, completion_ids, **kwargs):
    """1.0 when the completion's first token id is divisible by 16, else 0.0."""
    return [1.0 if ids and ids[0] % 16 == 0 else 0.0 for ids in completion_ids]


@pytest.mark.slow
def test_the_mean_reward_rises_from_near_zero_to_nearly_one(tiny_model_dir, tmp_path):
    # Imported here: the benchmarks import this module for its reward, outside pytest.
    from conftest import smoke_train

    trainer = smoke_train(
        tiny_model_dir, tmp_path / "learn", "--reward_funcs", REWARD, "--reward_weights", "1.0",
        "--max_steps", str(STEPS), "--num_generations", "8",
        "--per_device_train_batch_size", "16", "--max_completion_length", "8",
        "--lr_scheduler_type", "constant", "--warmup_steps", "0", "--beta", "0.0",
        "--logging_steps", "1", "--health_flat_logs", "1000", *TUNING,
    )  # fmt: skip
    rewards = [row["reward"] for row in trainer.state.log_history if "reward" in row]
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert first < 0.5, f"the task is learned before training: {rewards[:5]}"
    assert last >= 0.9, f"reward went from {first:.2f} to only {last:.2f}: {rewards}"
