"""The task this project trains on: how a data row becomes a prompt, what the gold answer is, and
what a perfect completion looks like.

`TASK` is the project's task (chosen when the project was generated) and `TaskArguments` its
recipe fields (a dataclass parsed from `configs/grpo.yaml` with the others), passed to every
function of the task that needs them. Its reward functions live in `rewards/`; the recipe lists
which ones train, with their weights, and `reward_settings` hands them the task's parameters.
"""

from .base import (
    DataDefaults,
    Task,
    as_messages,
    message_text,
    plain_user_message,
    think_answer,
)
from .{{ cookiecutter.task_type }}_task import TASK, TaskArguments

__all__ = [
    "TASK",
    "DataDefaults",
    "Task",
    "TaskArguments",
    "as_messages",
    "message_text",
    "plain_user_message",
    "think_answer",
]
