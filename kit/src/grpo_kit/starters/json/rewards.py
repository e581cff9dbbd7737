"""The JSON task's rewards. Yours to edit: the task's `rewards` in task.py list which ones train
and their weights (the one place they are set).

What counts as JSON and as the same field is `grpo_kit.verify.json`: standard JSON only (no
NaN/Infinity), a field is a path of keys and indices (a flat `"addr.city"` key is not the nested
field), strings compare NFC-normalised with case and spacing ignored, numbers by value.
Validating against a schema runs under a time budget: a schema's `pattern` can backtrack for
minutes on a string the model chose.
"""

from __future__ import annotations

from grpo_kit.rewards import reward
from grpo_kit.rewards.formats import soft_overlong
from grpo_kit.verify import json as json_answers

__all__ = ["json_field_f1", "json_field_match", "json_only", "json_schema_valid", "soft_overlong"]

SCHEMA_BUDGET_S = 1.0  # validating one completion against the row's schema


@reward(low=0.0, high=1.0, time_budget=SCHEMA_BUDGET_S)
def json_schema_valid(completion: str, schema: str, **row) -> float | None:
    """1.0 for JSON that validates against the row's schema, 0.25 for JSON that does not, 0 for
    no JSON (or validation past its time budget); None when the row's schema is broken."""
    value, _ = json_answers.find_json(completion)
    if value is None:
        return 0.0
    valid = json_answers.schema_valid(value, schema)
    return None if valid is None else 1.0 if valid else 0.25


@reward(low=0.0, high=1.0)
def json_field_match(completion: str, answer: str, **row) -> float | None:
    """Fraction of the reference object's fields (leaf paths) the completion gets right."""
    counts = json_answers.field_counts(completion, answer)
    if counts is None:
        return None  # no reference object: not applicable
    right, expected, _ = counts
    return right / expected


@reward(low=0.0, high=1.0)
def json_field_f1(completion: str, answer: str, **row) -> float | None:
    """F1 of the completion's fields (leaf paths with their values) against the reference's:
    unlike json_field_match it also counts fields the completion adds. An evaluation metric."""
    counts = json_answers.field_counts(completion, answer)
    if counts is None:
        return None
    right, expected, given = counts
    if right == 0:
        return 0.0
    precision, recall = right / given, right / expected
    return 2 * precision * recall / (precision + recall)


@reward(low=-1.0, high=1.0)
def json_only(completion: str, **row) -> float:
    """1.0 for nothing but the JSON (a ```json fence is fine), less 0.01 per character of other
    text (down to 0); -1.0 when there is no JSON at all."""
    value, outside = json_answers.find_json(completion)
    if value is None:
        return -1.0
    return max(0.0, 1.0 - 0.01 * outside)
