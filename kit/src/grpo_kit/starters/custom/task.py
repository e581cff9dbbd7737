"""Your own task. EDIT HERE: how a row becomes the user message, and what a perfect answer is.

As generated this is a working short-answer example (data/sample_custom.jsonl: `question`,
`answer`) that passes the smoke run and the tests, so you can change one piece at a time:

1. data: point `dataset_name`, `prompt_column` and `answer_column` in configs/local.yaml at
   your data (a Hub dataset or a local .jsonl/.csv/.parquet file), or change `data` below;
2. prompt: edit `user_message` and `system_prompt` below;
3. rewards: edit rewards.py and the `rewards` below (each one's weight is there);
4. check: `make reward-debug` scores the ideal completions with every reward.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_kit.rewards import formats
from grpo_kit.task import DataDefaults, Reward, Task, message_text, think_answer

from . import rewards


@dataclass
class TaskArguments:
    """EDIT HERE: recipe fields your task needs (they become keys of configs/grpo.yaml)."""


def user_message(row: dict, prompt_column: str, answer_column: str, task_args) -> str:
    """EDIT HERE: the user message for one data row."""
    return message_text(row[prompt_column])


def ideal_completion(row: dict, task_args) -> str:
    """EDIT HERE: a completion every reward should score at the top of its range."""
    return think_answer("Recall the fact.", str(row["answer"]))


TASK = Task(
    name="custom",
    data=DataDefaults(
        dataset_name="data/sample_custom.jsonl",
        dataset_config=None,
        train_split="train",
        test_split="test",
        prompt_column="question",
        answer_column="answer",
        sample="data/sample_custom.jsonl",
    ),
    system_prompt=(
        f"Answer the question. {formats.FORMAT_INSTRUCTIONS} The answer is a word or a short "
        "phrase."
    ),
    rewards=(  # EDIT HERE: your rewards, with the weights the recipe starts from
        Reward(
            rewards.exact_answer,
            2.0,
            "1 if the answer equals the gold answer (edit it)",
            "correctness",
        ),
        Reward(rewards.strict_format, 0.5, formats.STRICT_WHY),
        Reward(rewards.partial_format, 0.5, formats.PARTIAL_WHY),
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    arguments=TaskArguments,
    metrics=(("accuracy", rewards.exact_answer),),  # EDIT HERE: your correctness reward(s)
    example_prompt="What is the capital of Italy?",
)
