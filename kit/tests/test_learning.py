"""The project learns: its train entry point on the tiny model, with a toy reward the tiny model
can learn, given by dotted path as a user would give their own reward. The toy task: start the
completion with one of a fixed 1/16 of the vocabulary (every token id divisible by 16), so about
6% of the random model's completions score whatever the task's sample data (a word or "start
with a digit" scores 0-6% depending on the tokenizer trained on that data).

Full fine-tuning at a high learning rate (LoRA for the Unsloth backend, which trains adapters
only): the mean reward of the last logged steps must be far above the first ones. Run for the
default tiny model, for Gemma 4's (which learns more slowly) and for the Unsloth backend (when
it is installed), each in a project of its own.
"""

import importlib.util

import pytest

# By dotted path, as a user gives their own reward (the tests folder is on the path in pytest).
REWARD = "test_learning.starts_with_a_target_token"


def steps(tiny_arch: str) -> int:
    """Gemma 4's tiny model learns the toy task more slowly: a run reached 0.875 by step 60 and
    1.0 by 80 (its steps also take several times longer on the CPU)."""
    return 80 if tiny_arch == "gemma4" else 60


def tuning(backend: str) -> list[str]:
    """Full fine-tuning where the backend allows it (as measured with bare TRL); the Unsloth
    backend trains LoRA adapters only, so lm_head trains in full beside them (adapters alone on
    a 2-layer model with random weights move the first token too slowly for 60 steps)."""
    if backend == "transformers":
        return ["--use_peft", "false", "--learning_rate", "1e-2"]
    return ["--lora_r", "16", "--lora_alpha", "32", "--lora_modules_to_save", "lm_head",
            "--learning_rate", "5e-2"]  # fmt: skip


def starts_with_a_target_token(completions, completion_ids, **kwargs):
    """1.0 when the completion's first token id is divisible by 16, else 0.0."""
    return [1.0 if ids and ids[0] % 16 == 0 else 0.0 for ids in completion_ids]


NO_UNSLOTH = importlib.util.find_spec("unsloth") is None
CASES = [  # (backend, tiny_arch, chat_template)
    pytest.param("transformers", "qwen2", "qwen2_5", id="transformers-qwen2"),
    pytest.param("transformers", "gemma4", "gemma4_v5", id="transformers-gemma4"),
    pytest.param(
        "unsloth", "qwen2", "qwen2_5", id="unsloth-qwen2",
        marks=pytest.mark.skipif(NO_UNSLOTH, reason="unsloth is not installed (backend unsloth)"),
    ),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "tiny_arch", "chat_template"), CASES)
def test_the_mean_reward_rises_from_near_zero_to_nearly_one(
    backend, tiny_arch, chat_template, tmp_path
):
    # Imported here: the benchmarks import this module for its reward, outside pytest.
    from conftest import load, make_project, smoke_train
    from grpo_kit.offline.tiny_model import project_tiny_model

    root = make_project(tmp_path / "project", backend=backend, tiny_arch=tiny_arch,
                        chat_template=chat_template)  # fmt: skip
    tiny_model_dir = project_tiny_model(tmp_path / "tiny", load(root))
    trainer = smoke_train(
        tiny_model_dir, tmp_path / "learn", "--reward_funcs", REWARD, "--reward_weights", "1.0",
        "--max_steps", str(steps(tiny_arch)), "--num_generations", "8",
        "--per_device_train_batch_size", "16", "--max_completion_length", "8",
        "--lr_scheduler_type", "constant", "--warmup_steps", "0", "--beta", "0.0",
        "--logging_steps", "1", "--health_flat_logs", "1000", *tuning(backend), root=root,
    )  # fmt: skip
    rewards = [row["reward"] for row in trainer.state.log_history if "reward" in row]
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert first < 0.5, f"the task is learned before training: {rewards[:5]}"
    assert last >= 0.9, f"reward went from {first:.2f} to only {last:.2f}: {rewards}"
