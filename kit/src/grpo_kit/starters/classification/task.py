"""The classification task: text classification and fact-checking, one label from a fixed set.
Yours to edit.

How a data row becomes the prompt (`user_message`: the text and the labels), what a perfect
completion looks like (`ideal_completion`), and the rewards with the weights the recipe starts
from, the system prompt and the default data (its labels among them).

task.py is the one home of the task's defaults: the rewards and their weights, the system
prompt and the default data mapping. configs/grpo.yaml does not restate them (`grpo recipe
--explain` shows where each value of a run comes from); your own data goes in
configs/local.yaml, whose data keys override the defaults here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grpo_kit.errors import DataError, UserError
from grpo_kit.rewards import formats
from grpo_kit.task import DataDefaults, Reward, Task, message_text, think_answer
from grpo_kit.verify.text import normalise_label

from . import rewards

DEFAULT_LABELS = ["World", "Sports", "Business", "Sci/Tech"]


@dataclass
class TaskArguments:
    """Recipe fields of the classification task."""

    labels: list[str] = field(
        default_factory=lambda: list(DEFAULT_LABELS), metadata={"help": "the allowed answers"}
    )


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
    """The text, then the labels to choose from."""
    labels = ", ".join(label_set(task_args))
    return f"{message_text(row[prompt_column])}\n\nLabels: {labels}"


def ideal_completion(row: dict, task_args) -> str:
    """A short reason, then the gold label in the answer block."""
    return think_answer("Decide which label fits the text best.", str(row["answer"]))


def reward_settings(task_args) -> dict:
    """The label set the rewards check answers against."""
    return {"labels": label_set(task_args)}


def validate(rows, source: str, task_args, answer_column: str) -> None:
    """Every gold label must be in the label set, or the reward could never be earned."""
    known = {normalise_label(label) for label in task_args.labels}
    golds = rows[answer_column]
    for index, value in enumerate(golds):
        if normalise_label(value) not in known:
            found = {}  # the data's own labels, first spelling of each, in order
            for gold in golds:
                found.setdefault(normalise_label(gold), str(gold).strip())
            listed = ", ".join(list(found.values())[:20]) + (", ..." if len(found) > 20 else "")
            raise DataError(
                f"{source} row {index + 1}: label {value!r} is not in labels "
                f"{list(task_args.labels)}; name your data's labels in configs/local.yaml, e.g. "
                f"`labels: [{listed}]` ({len(found)} found in {source}), or fix the row"
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
        sample="data/sample_classification.jsonl",
    ),
    system_prompt=(
        "You classify texts. Choose exactly one of the labels listed in the message. You may "
        "reason first inside <think> </think> tags; then write only the label inside "
        "<answer> </answer> tags."
    ),
    rewards=(
        Reward(
            rewards.label_correctness,
            2.0,
            "1 if the answered label is the gold label",
            "correctness",
        ),
        Reward(rewards.label_in_set, 0.5, "1 if the answer is one of the labels"),
        Reward(rewards.answer_tag_format, 0.5, "1 for one single-line <answer> block at the end"),
        Reward(rewards.soft_overlong, 0.25, formats.OVERLONG_WHY, "length"),
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    arguments=TaskArguments,
    reward_settings=reward_settings,
    validate=validate,
    metrics=(("accuracy", rewards.label_correctness), ("valid_label", rewards.label_in_set)),
    example_prompt="The striker signed a new contract. Labels: World, Sports, Business, Sci/Tech",
)
