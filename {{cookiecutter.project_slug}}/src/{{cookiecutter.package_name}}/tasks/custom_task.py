"""Your own task. EDIT HERE: how a row becomes the user message, and what a perfect answer is.

As generated this is a working short-answer example (data/sample_custom.jsonl: `question`,
`answer`) that passes the smoke run and the tests, so you can change one piece at a time:

1. data: point `dataset_name`, `prompt_column` and `answer_column` in configs/grpo.yaml at your
   data (a Hub dataset or a local .jsonl/.csv/.parquet file);
2. prompt: edit `user_message` below and `system_prompt` in the recipe;
3. rewards: edit `rewards/custom_rewards.py` and `reward_funcs` / `reward_weights` in the recipe;
4. check: `make reward-debug` scores the ideal completions with every reward.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DataDefaults, Task, message_text, think_answer


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
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    metrics=(("accuracy", "exact_answer"),),  # edit: your task's correctness reward(s)
)
