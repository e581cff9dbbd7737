"""Finding the JSON in a completion, validating it and comparing its fields: what the JSON
rewards build on.

The JSON may stand alone or sit in one ```json fence (the completion's only ``` marks).

What counts as JSON and as the same field:
- standard JSON only (RFC 8259): Python's `NaN`, `Infinity` and `-Infinity` literals make the
  text invalid JSON, as they do for every other JSON parser, and so do numbers too large for a
  float (`1e999`);
- a field is a path of keys and list indices, so a flat key `"addr.city"` is not the nested
  field `addr` -> `city`; an empty object or list in the reference is a field of its own, which
  the completion matches with an empty one;
- strings compare after Unicode normalisation (NFC: a composed `é` equals `e` + combining
  accent), with case and runs of whitespace ignored; keys are NFC-normalised too; numbers
  compare by value (34 equals 34.0): where either side is an integer, exactly (an id, a phone
  number or a timestamp off by one is wrong, however long it is), two floats within a relative
  1e-9 (0.1 + 0.2 equals 0.3); `true`/`false` only equal themselves.

Schema validation runs under a time budget, because a schema's `pattern` can backtrack for
minutes on a string the model chose (`^(a+)+$` on `aaaa...!`); past it the completion scores 0.

A schema comes from the data, so it never makes the trainer fetch anything: a reference
(`$ref`, `$dynamicRef`, `$recursiveRef`) may only point inside the schema's own document
(`#/$defs/name`, `#anchor`); any other (`http://...`, `file:...`, `other.json`) makes the row
fail when the data loads (`check_schemas`, which `doctor` runs too, naming the row), and is
refused, never retrieved, when a completion is validated (the schema then counts as broken).
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata

__all__ = [
    "SCHEMA_BUDGET_S",
    "check_schemas",
    "field_counts",
    "fields",
    "find_json",
    "loads",
    "same_value",
    "schema_valid",
]

# Possessive blanks (`*+`): linear on a fence followed by a long run of blanks (see verify/code).
_FENCE_RE = re.compile(r"```[ \t]*+(?:json[ \t]*+)?\n(.*?)```", re.DOTALL)
MAX_SCAN, MAX_STARTS = 10_000, 8  # bounds for finding JSON embedded in text
SCHEMA_BUDGET_S = 1.0  # validating one completion against the row's schema


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 overflows to inf
        raise ValueError(f"{text} is out of range")
    return value


# Python's json module accepts NaN/Infinity by default; standard JSON does not.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads(text: str):
    """Standard JSON (no NaN/Infinity literals); raises ValueError (or RecursionError)."""
    return _DECODER.decode(text)


def find_json(text: str) -> tuple[object | None, int]:
    """(the JSON object or array in the completion or None, characters of other text around
    it)."""
    stripped = text.strip()
    fence = _FENCE_RE.search(stripped) if stripped.count("```") == 2 else None
    if fence is not None:  # one fenced block: its opening and closing are the only ``` marks
        value = _container(fence[1].strip())
        if value is not None:
            return value, len((stripped[: fence.start()] + stripped[fence.end() :]).strip())
    value = _container(stripped)
    if value is not None:
        return value, 0
    # JSON inside other text: try the first few openings only (each try is linear in the text).
    starts = [i for i, char in enumerate(stripped[:MAX_SCAN]) if char in "{["][:MAX_STARTS]
    for start in starts:
        try:
            value, end = _DECODER.raw_decode(stripped, start)
        except (ValueError, RecursionError):
            continue
        return value, len(stripped) - (end - start)
    return None, len(stripped)


def _container(text: str):
    try:
        value = loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
DATA_KEYWORDS = ("const", "enum", "default", "examples")  # values, never schemas


class OutsideReference(ValueError):
    """A schema refers to something outside its own document."""


def outside_references(schema) -> list[str]:
    """The references in a schema that point outside its own document (anything but `#...`),
    in the order they appear; values of `const`, `enum`, `default` and `examples` are data."""
    found, todo = [], [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if key in REFERENCES and isinstance(item, str):
                    if not item.startswith("#"):
                        found.append(item)
                elif key not in DATA_KEYWORDS and isinstance(item, dict | list):
                    todo.append(item)
        elif isinstance(node, list):
            todo.extend(item for item in node if isinstance(item, dict | list))
    return found


def _refuse(uri: str):
    """The registry's retrieval: nothing outside the document is ever fetched or read."""
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)


@functools.lru_cache(maxsize=1)
def _registry():
    from referencing import Registry

    return Registry(retrieve=_refuse)


@functools.lru_cache(maxsize=512)
def _validator(schema_text: str):
    from jsonschema import validators  # here: the template reads the tasks without jsonschema

    schema = loads(schema_text)
    outside = outside_references(schema)
    if outside:
        raise OutsideReference(f"refers outside its document ({outside[0][:120]!r})")
    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=_registry())


def schema_valid(value, schema_text: str) -> bool | None:
    """Whether a JSON value validates against the JSON Schema text; None when the schema itself
    is broken (not JSON, not a valid schema, or referring outside its document: module
    docstring)."""
    from jsonschema import exceptions
    from referencing.exceptions import Unresolvable

    try:
        validator = _validator(str(schema_text))
        return next(validator.iter_errors(value), None) is None
    except (ValueError, RecursionError, exceptions.SchemaError, Unresolvable):
        return None


def check_schemas(rows, source: str, column: str) -> None:
    """Every row's schema (column `column`) refers only inside its own document; raises
    DataError naming the first row that does not. (A schema that is not JSON or not a valid
    schema stays allowed: its rows score n/a on schema validity.)"""
    from ..errors import DataError

    for index, cell in enumerate(rows[column]):
        try:
            schema = loads(str(cell)) if isinstance(cell, str) else cell
        except (ValueError, RecursionError):
            continue
        try:
            outside = outside_references(schema)
        except RecursionError:
            continue
        if outside:
            raise DataError(
                f"{source} row {index + 1}: column '{column}' holds a JSON Schema that refers "
                f"outside its own document ({outside[0][:120]!r}); schemas are never fetched "
                "or read from files: inline the referenced schema under `$defs` and refer to "
                "it as '#/$defs/<name>', or drop the row"
            )


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def fields(value, path: tuple = ()):
    """(path, leaf) pairs of a JSON value: a path is a tuple of keys (NFC str) and list indices
    (int); empty objects and lists are leaves."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from fields(item, (*path, _nfc(key)))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from fields(item, (*path, index))
    else:
        yield path, value


def same_value(expected, got) -> bool:
    """Leaf equality as documented above."""
    if isinstance(expected, str) and isinstance(got, str):
        return _text_key(expected) == _text_key(got)
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        if isinstance(expected, int) or isinstance(got, int):
            return expected == got  # exactly (Python compares an int and a float exactly)
        return math.isclose(expected, got, rel_tol=1e-9, abs_tol=1e-9)
    return type(expected) is type(got) and expected == got


def _text_key(text: str) -> str:
    return " ".join(_nfc(text).split()).casefold()


@functools.lru_cache(maxsize=4096)
def _reference_fields(answer: str) -> dict | None:
    expected, _ = find_json(answer)
    return None if expected is None else dict(fields(expected))


def field_counts(completion: str, answer: str) -> tuple[int, int, int] | None:
    """(fields right, fields in the reference, fields in the completion); None without a
    reference object."""
    reference = _reference_fields(str(answer))
    if reference is None:
        return None
    value, _ = find_json(completion)
    got = dict(fields(value)) if value is not None else {}
    right = sum(
        1 for path, leaf in reference.items() if path in got and same_value(leaf, got[path])
    )
    return right, len(reference), len(got)
