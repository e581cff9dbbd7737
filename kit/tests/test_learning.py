"""The project learns: its train entry point on the tiny model, with a toy reward the tiny model
can learn, given by dotted path as a user would give their own reward. The toy task: start the
completion with one of a fixed 1/16 of the vocabulary (every token id divisible by 16), so about
6% of the random model's completions score.

The prompts are short questions without a system prompt (the toy reward reads only the first
completion token, and a 10-token prompt trains ten times faster than the sample data's 260-token
ones: Gemma 4's tiny model took 80 steps of ~5 s on those). Full fine-tuning at a high learning
rate (LoRA for the Unsloth backend, which trains adapters only): the mean reward of the last
logged steps must be far above the first ones. Run for the default tiny model, for Gemma 4's
and for the Unsloth backend (when it is installed), each in a project of its own.
"""

import importlib.util
import json
from pathlib import Path

import pytest

# By dotted path, as a user gives their own reward (the tests folder is on the path in pytest).
REWARD = "test_learning.starts_with_a_target_token"


# Both tiny models reach a 5-step mean of 0.9 by step 25 or so at this rate (measured with 1 and
# 2 torch threads); 40 steps leave a margin.
STEPS = 40


def short_questions(path: Path) -> Path:
    """32 one-line sums, `question`/`answer` like the math task's data."""
    rows = ({"question": f"What is {i % 9 + 1} + {i // 3 + 2}?", "answer": str(i % 9 + i // 3 + 3)}
            for i in range(32))  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def tuning(backend: str) -> list[str]:
    """Full fine-tuning where the backend allows it (as measured with bare TRL); the Unsloth
    backend trains LoRA adapters only, so lm_head trains in full beside them (adapters alone on
    a 2-layer model with random weights move the first token too slowly for 60 steps)."""
    if backend == "transformers":
        return ["--use_peft", "false", "--learning_rate", "3e-2"]
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
        "--dataset_name", str(short_questions(tmp_path / "sums.jsonl")), "--system_prompt", "",
        "--max_steps", str(STEPS), "--num_generations", "8",
        "--per_device_train_batch_size", "16", "--max_completion_length", "8",
        "--lr_scheduler_type", "constant", "--warmup_steps", "0", "--beta", "0.0",
        "--logging_steps", "1", "--health_flat_logs", "1000", *tuning(backend), root=root,
    )  # fmt: skip
    rewards = [row["reward"] for row in trainer.state.log_history if "reward" in row]
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert first < 0.5, f"the task is learned before training: {rewards[:5]}"
    assert last >= 0.9, f"reward went from {first:.2f} to only {last:.2f}: {rewards}"
