"""Structured JSON output that follows a JSON Schema given with each row."""

from __future__ import annotations

from dataclasses import dataclass

from .base import DataDefaults, Task, message_text


@dataclass
class TaskArguments:
    """Recipe fields of the JSON task."""

    schema_column: str = "schema"  # column holding each row's JSON Schema (a JSON string)


def user_message(row: dict, prompt_column: str, answer_column: str, task_args) -> str:
    schema = row["schema"]
    return f"{message_text(row[prompt_column])}\n\nJSON Schema:\n{schema}"


def ideal_completion(row: dict, task_args) -> str:
    return str(row["answer"]).strip()


def columns(task_args) -> dict[str, str]:
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
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    columns=columns,
    metrics=(
        ("field_f1", "json_field_f1"),
        ("field_match", "json_field_match"),
        ("schema_valid", "json_schema_valid"),
    ),
)
