"""JSON rewards: schema validity, per-field match and text-outside-JSON, on golden completions."""

import json

import pytest

from {{ cookiecutter.package_name }}.rewards import REGISTRY
from {{ cookiecutter.package_name }}.rewards.json_rewards import find_json

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
)
REFERENCE = json.dumps({"name": "Maria", "age": 34})


def score(name, completion, **columns):
    return REGISTRY[name]([completion], **{k: [v] for k, v in columns.items()})[0]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('{"name": "Maria", "age": 34}', 1.0),
        ('```json\n{"name": "Maria", "age": 34}\n```', 1.0),
        ('{"name": "Maria", "age": "34"}', 0.25),  # JSON, but not valid against the schema
        ('{"name": "Maria"}', 0.25),
        ("Maria is 34", 0.0),
        ('{"name": "Maria", "age": 34', 0.0),
    ],
)
def test_json_schema_valid(completion, expected):
    assert score("json_schema_valid", completion, schema=SCHEMA) == expected


def test_broken_schema_is_not_applicable():
    assert score("json_schema_valid", "{}", schema="{not json") is None


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('{"name": "Maria", "age": 34}', 1.0),
        ('{"name": "  maria ", "age": 34}', 1.0),  # case and spacing ignored
        ('{"name": "Maria", "age": 35}', 0.5),
        ('{"name": "Ana"}', 0.0),
        ("no json", 0.0),
        ('{"age": 34, "name": "Maria", "extra": true}', 1.0),
    ],
)
def test_json_field_match(completion, expected):
    assert score("json_field_match", completion, answer=REFERENCE) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('{"name": "Maria", "age": 34}', 1.0),
        ('{"name": "Maria", "age": 34, "extra": true}', 0.8),  # precision 2/3, recall 1
        ('{"name": "Maria"}', pytest.approx(2 / 3)),  # precision 1, recall 1/2
        ('{"name": "Ana", "age": 1}', 0.0),
        ("no json", 0.0),
    ],
)
def test_json_field_f1_counts_extra_fields_too(completion, expected):
    assert score("json_field_f1", completion, answer=REFERENCE) == pytest.approx(expected)


def test_field_match_covers_nested_lists():
    reference = json.dumps({"items": [{"id": 1}, {"id": 2}]})
    half = json.dumps({"items": [{"id": 1}, {"id": 3}]})
    assert score("json_field_match", half, answer=reference) == 0.5


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('{"a": 1}', 1.0),
        ('```json\n{"a": 1}\n```', 1.0),
        ('Here it is: {"a": 1}', pytest.approx(0.88)),
        ("x" * 300 + '{"a": 1}', 0.0),
        ("no json here", -1.0),
    ],
)
def test_json_only(completion, expected):
    assert score("json_only", completion) == expected


def test_deeply_nested_json_scores_without_crashing():
    deep = "[" * 100_000 + "]" * 100_000
    assert find_json(deep)[0] is not None or find_json(deep)[0] is None
    assert score("json_field_match", deep, answer=deep) in (0.0, None)
    assert score("json_schema_valid", deep, schema=SCHEMA) in (0.0, 0.25)
