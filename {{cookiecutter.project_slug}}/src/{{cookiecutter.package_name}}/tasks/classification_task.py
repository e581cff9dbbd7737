"""Text classification and fact-checking: pick one label from a fixed set."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import DataError, UserError
from ..rewards.base import normalise_label
from .base import DataDefaults, Task, message_text, think_answer

DEFAULT_LABELS = ["World", "Sports", "Business", "Sci/Tech"]


@dataclass
class TaskArguments:
    """Recipe fields of the classification task."""

    labels: list[str] = field(default_factory=lambda: list(DEFAULT_LABELS))


def label_set(task_args) -> tuple[str, ...]:
    """The recipe's labels, checked: at least one, none empty, no two alike once normalised
    (`normalise_label`, as the rewards compare them)."""
    labels = tuple(str(label).strip() for label in task_args.labels)
    if not labels or any(not normalise_label(label) for label in labels):
        raise UserError("labels must list at least one non-empty label")
    if len({normalise_label(label) for label in labels}) != len(labels):
        raise UserError(
            f"labels repeat once case, spacing and surrounding punctuation are ignored: "
            f"{list(labels)}"
        )
    return labels


def user_message(row: dict, prompt_column: str, answer_column: str, task_args) -> str:
    labels = ", ".join(label_set(task_args))
    return f"{message_text(row[prompt_column])}\n\nLabels: {labels}"


def ideal_completion(row: dict, task_args) -> str:
    return think_answer("Decide which label fits the text best.", str(row["answer"]))


def reward_settings(task_args) -> dict:
    return {"labels": label_set(task_args)}


def validate(rows, source: str, task_args, answer_column: str) -> None:
    """Every gold label must be in the label set, or the reward could never be earned."""

    known = {normalise_label(label) for label in task_args.labels}
    for index, value in enumerate(rows[answer_column]):
        if normalise_label(value) not in known:
            raise DataError(
                f"{source} row {index + 1}: label {value!r} is not in labels "
                f"{task_args.labels}; fix the data or the recipe's labels"
            )


TASK = Task(
    name="classification",
    data=DataDefaults(
        dataset_name="fancyzhx/ag_news",
        dataset_config=None,
        train_split="train",
        test_split="test",
        prompt_column="text",
        answer_column="label",
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    reward_settings=reward_settings,
    validate=validate,
    metrics=(("accuracy", "label_correctness"), ("valid_label", "label_in_set")),
)
