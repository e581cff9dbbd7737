"""The JSON task: structured output that follows a JSON Schema given with each row. Yours to edit.

How a data row becomes the prompt (`user_message`: the request and its schema), what a perfect
completion looks like (`ideal_completion`), and the rewards with the weights the recipe starts
from, the system prompt and the default data.

task.py is the one home of the task's defaults: the rewards and their weights, the system
prompt and the default data mapping. configs/grpo.yaml does not restate them (`grpo recipe
--explain` shows where each value of a run comes from); your own data goes in
configs/local.yaml, whose data keys override the defaults here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grpo_kit.rewards import formats
from grpo_kit.task import DataDefaults, Reward, Task, message_text
from grpo_kit.verify import json as json_answers

from . import rewards


@dataclass
class TaskArguments:
    """Recipe fields of the JSON task."""

    schema_column: str = field(
        default="schema", metadata={"help": "column with each row's JSON Schema"}
    )


def user_message(row: dict, prompt_column: str, answer_column: str, task_args) -> str:
    """The request, then the row's JSON Schema."""
    return f"{message_text(row[prompt_column])}\n\nJSON Schema:\n{row['schema']}"


def ideal_completion(row: dict, task_args) -> str:
    """The reference JSON, alone."""
    return str(row["answer"]).strip()


def validate(rows, source: str, task_args, answer_column: str) -> None:
    """Every row's schema refers only inside its own document (schemas are never fetched)."""
    json_answers.check_schemas(rows, source, task_args.schema_column)


def columns(task_args) -> dict[str, str]:
    """The extra columns the rewards read: {name they see: recipe field naming the column}."""
    return {"schema": "schema_column"}


TASK = Task(
    name="json",
    data=DataDefaults(
        dataset_name="NousResearch/json-mode-eval",
        dataset_config=None,
        train_split="train",
        test_split="train",
        prompt_column="prompt",
        answer_column="completion",
        sample="data/sample_json.jsonl",
    ),
    system_prompt=(
        "You extract structured data. Reply with only a JSON object that follows the JSON "
        "Schema in the message: no explanation and no text before or after it (a ```json "
        "fence is allowed)."
    ),
    rewards=(
        Reward(
            rewards.json_field_match,
            2.0,
            "fraction of the reference object's fields matched",
            "correctness",
        ),
        Reward(rewards.json_schema_valid, 1.0, "1 if the JSON validates against the row's schema"),
        Reward(rewards.json_only, 0.5, "1 for nothing but JSON, -1 for no JSON"),
        Reward(rewards.soft_overlong, 0.25, formats.OVERLONG_WHY, "length"),
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    arguments=TaskArguments,
    columns=columns,
    validate=validate,
    metrics=(
        ("field_f1", rewards.json_field_f1),
        ("field_match", rewards.json_field_match),
        ("schema_valid", rewards.json_schema_valid),
    ),
    example_prompt="Extract the name, age and city as JSON: Lena is 31 and lives in Graz.",
)
