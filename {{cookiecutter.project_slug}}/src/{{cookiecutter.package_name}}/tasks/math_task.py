"""Math word problems (GSM8K-style numbers or MATH-style LaTeX answers)."""

from __future__ import annotations

from dataclasses import dataclass

from ..rewards.math_rewards import gold_text
from .base import DataDefaults, Task, plain_user_message, think_answer


@dataclass
class TaskArguments:
    """Math needs no recipe fields beyond the common ones."""


def ideal_completion(row: dict, task_args) -> str:
    return think_answer("Work through the problem step by step.", gold_text(row["answer"]))


TASK = Task(
    name="math",
    data=DataDefaults(
        dataset_name="openai/gsm8k",
        dataset_config="main",
        train_split="train",
        test_split="test",
        prompt_column="question",
        answer_column="answer",
    ),
    user_message=plain_user_message,
    ideal_completion=ideal_completion,
    metrics=(("accuracy", "math_correctness"),),
)
