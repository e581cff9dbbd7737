"""Your JSON rewards on golden completions. Finding the JSON and comparing fields is
grpo_kit.verify.json (tested there against the JSON-Schema-Test-Suite). Change these cases with
the rewards."""

import json

import pytest
from grpo_kit.rewards import call_like_trl

from {{ cookiecutter.package_name }} import rewards

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
)
REFERENCE = json.dumps({"name": "Maria", "age": 34})


def score(func, completion):
    return call_like_trl(func, [completion], [{"schema": SCHEMA, "answer": REFERENCE}])[0]


@pytest.mark.parametrize(
    ("completion", "valid", "match", "only"),
    [
        ('{"name": "Maria", "age": 34}', 1.0, 1.0, 1.0),
        ('```json\n{"name": "Maria", "age": 34}\n```', 1.0, 1.0, 1.0),
        ('{"name": "  maria ", "age": 34}', 1.0, 1.0, 1.0),  # case and spacing ignored
        ('{"name": "Maria", "age": "34"}', 0.25, 0.5, 1.0),  # JSON, not valid to the schema
        ('Here: {"name": "Maria", "age": 34}', 1.0, 1.0, 0.94),  # text around the JSON
        ('{"name": "Maria", "age": NaN}', 0.0, 0.0, -1.0),  # not standard JSON
        ("Maria is 34", 0.0, 0.0, -1.0),
    ],
)
def test_json_rewards(completion, valid, match, only):
    assert score(rewards.json_schema_valid, completion) == valid
    assert score(rewards.json_field_match, completion) == pytest.approx(match)
    assert score(rewards.json_only, completion) == pytest.approx(only)


def test_field_f1_counts_extra_fields_too():
    extra = '{"name": "Maria", "age": 34, "extra": true}'
    assert score(rewards.json_field_f1, extra) == pytest.approx(0.8)  # precision 2/3, recall 1
