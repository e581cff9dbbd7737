"""The task this project trains on: how a data row becomes a prompt, and what a perfect answer is.

`TASK` is the project's task (chosen when the project was generated). Its reward functions live
in `rewards/`; the recipe lists which ones train, with their weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    """A task type: the pieces of the pipeline that differ between math, code, JSON, ..."""

    name: str
    # Builds the user message from a data row (`prompt_column` names the column with the question).
    user_message: Callable[[dict, str], str]
    # A completion that every reward of the task should score at the top of its range; used by the
    # reward debug command and the tests ("test each reward on its own before training").
    ideal_completion: Callable[[dict], str]


def plain_user_message(row: dict, prompt_column: str) -> str:
    """The prompt column's text, as is."""
    return str(row[prompt_column]).strip()


def think_answer(reasoning: str, answer: str) -> str:
    """A completion in the layout every system prompt asks for."""
    return f"<think>\n{reasoning}\n</think>\n<answer>\n{answer}\n</answer>"


from .{{ cookiecutter.task_type }}_task import TASK  # noqa: E402

__all__ = ["TASK", "Task", "plain_user_message", "think_answer"]
