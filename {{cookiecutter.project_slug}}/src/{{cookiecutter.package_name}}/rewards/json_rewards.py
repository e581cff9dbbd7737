"""Structured output: the completion must be a JSON value that follows the row's JSON Schema.

The JSON may stand alone or sit in one ```json fence. Three signals: schema validity (the
`jsonschema` library), per-field agreement with the reference object, and a penalty for any text
around the JSON.
"""

from __future__ import annotations

import functools
import json
import math
import re

from jsonschema import exceptions as schema_errors
from jsonschema import validators

from .base import reward

_FENCE_RE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()
MAX_SCAN, MAX_STARTS = 10_000, 8  # bounds for finding JSON embedded in text


def find_json(text: str) -> tuple[object | None, int]:
    """(the JSON value in the completion or None, characters of other text around it)."""
    stripped = text.strip()
    fences = _FENCE_RE.findall(stripped)
    if len(fences) == 1:
        outside = len(_FENCE_RE.sub("", stripped).strip())
        value = _loads(fences[0].strip())
        if value is not None:
            return value, outside
    value = _loads(stripped)
    if value is not None:
        return value, 0
    # JSON inside other text: try the first few openings only (each try is linear in the text).
    starts = [i for i, char in enumerate(stripped[:MAX_SCAN]) if char in "{["][:MAX_STARTS]
    for start in starts:
        try:
            value, end = _DECODER.raw_decode(stripped, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        return value, len(stripped) - (end - start)
    return None, len(stripped)


def _loads(text: str):
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


@functools.lru_cache(maxsize=512)
def _validator(schema_text: str):
    schema = json.loads(schema_text)
    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@reward(low=0.0, high=1.0)
def json_schema_valid(completion: str, schema: str, **row) -> float:
    """1.0 for JSON that validates against the row's schema, 0.25 for JSON that does not, 0 for
    no JSON."""
    value, _ = find_json(completion)
    if value is None:
        return 0.0
    try:
        errors = _validator(str(schema)).iter_errors(value)
        return 0.25 if next(errors, None) is not None else 1.0
    except (json.JSONDecodeError, schema_errors.SchemaError):
        return None  # the row's schema is broken: not applicable


def _leaves(value, path: str = ""):
    """(path, leaf) pairs of a JSON value; lists are indexed."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _same(expected, got) -> bool:
    if isinstance(expected, str) and isinstance(got, str):
        return " ".join(expected.split()).casefold() == " ".join(got.split()).casefold()
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return math.isclose(expected, got, rel_tol=1e-9, abs_tol=1e-9)
    return expected == got


@reward(low=0.0, high=1.0)
def json_field_match(completion: str, answer: str, **row) -> float | None:
    """Fraction of the reference object's fields (leaf paths) the completion gets right."""
    expected, _ = find_json(str(answer))
    if expected is None:
        return None  # no reference object: not applicable
    reference = dict(_leaves(expected))
    if not reference:
        return None
    value, _ = find_json(completion)
    if value is None:
        return 0.0
    got = dict(_leaves(value))
    right = sum(1 for path, leaf in reference.items() if path in got and _same(leaf, got[path]))
    return right / len(reference)


@reward(low=0.0, high=1.0)
def json_field_f1(completion: str, answer: str, **row) -> float | None:
    """F1 of the completion's fields (leaf paths with their values) against the reference's:
    unlike json_field_match it also counts fields the completion adds. An evaluation metric."""
    expected, _ = find_json(str(answer))
    if expected is None:
        return None
    reference = dict(_leaves(expected))
    if not reference:
        return None
    value, _ = find_json(completion)
    got = dict(_leaves(value)) if value is not None else {}
    if not got:
        return 0.0
    right = sum(1 for path, leaf in reference.items() if path in got and _same(leaf, got[path]))
    if right == 0:
        return 0.0
    precision, recall = right / len(got), right / len(reference)
    return 2 * precision * recall / (precision + recall)


@reward(low=-1.0, high=1.0)
def json_only(completion: str, **row) -> float:
    """1.0 for nothing but the JSON (a ```json fence is fine), less 0.01 per character of other
    text (down to 0); -1.0 when there is no JSON at all."""
    value, outside = find_json(completion)
    if value is None:
        return -1.0
    return max(0.0, 1.0 - 0.01 * outside)
