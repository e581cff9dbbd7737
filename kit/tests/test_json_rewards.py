"""JSON rewards: schema validity, per-field match and text-outside-JSON, on golden completions,
on cases of the official JSON-Schema-Test-Suite, and on completions that try to game them."""

import json
import time
import unicodedata

import pytest
from grpo_kit.rewards import call_like_trl
from grpo_kit.starters.json.rewards import SCHEMA_BUDGET_S, json_schema_valid
from grpo_kit.starters.json.task import TASK
from grpo_kit.verify.json import find_json

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
)
REFERENCE = json.dumps({"name": "Maria", "age": 34})


def score(name, completion, **columns):
    """The JSON task's reward (or metric) `name` on one completion."""
    return TASK.reward_table[name]([completion], **{k: [v] for k, v in columns.items()})[0]


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
    find_json(deep)  # returns (no RecursionError), whatever it finds
    assert score("json_field_match", deep, answer=deep) in (0.0, None)
    assert score("json_schema_valid", deep, schema=SCHEMA) in (0.0, 0.25)


# --- cases ported from json-schema-org/JSON-Schema-Test-Suite (MIT) ----------------------------
# Source: https://github.com/json-schema-org/JSON-Schema-Test-Suite, tests/draft2020-12/<file>.json
# (the file is named in each comment; "$schema" dropped: draft 2020-12 is the default). Only the
# cases whose instance is an object or an array: the JSON task answers with one of those.
SCHEMA_SUITE = [
    (  # required.json: required validation
        {"properties": {"foo": {}, "bar": {}}, "required": ["foo"]},
        [({"foo": 1}, True), ({"bar": 1}, False), ([], True)],
    ),
    (  # properties.json: object properties validation
        {"properties": {"foo": {"type": "integer"}, "bar": {"type": "string"}}},
        [
            ({"foo": 1, "bar": "baz"}, True),
            ({"foo": 1, "bar": {}}, False),
            ({"foo": [], "bar": {}}, False),
            ({"quux": []}, True),
            ([], True),
        ],
    ),
    (  # additionalProperties.json: additionalProperties being false does not allow other properties
        {
            "properties": {"foo": {}, "bar": {}},
            "patternProperties": {"^v": {}},
            "additionalProperties": False,
        },
        [
            ({"foo": 1}, True),
            ({"foo": 1, "bar": 2, "quux": "boom"}, False),
            ([1, 2, 3], True),
            ({"foo": 1, "vroom": 2}, True),
        ],
    ),
    (  # enum.json: heterogeneous enum validation
        {"enum": [6, "foo", [], True, {"foo": 12}]},
        [([], True), ({"foo": False}, False), ({"foo": 12}, True), ({"foo": 12, "boo": 42}, False)],
    ),
    (  # const.json: const with object
        {"const": {"foo": "bar", "baz": "bax"}},
        [
            ({"foo": "bar", "baz": "bax"}, True),
            ({"baz": "bax", "foo": "bar"}, True),
            ({"foo": "bar"}, False),
            ([1, 2], False),
        ],
    ),
    (  # const.json: const with array
        {"const": [{"foo": "bar"}]},
        [([{"foo": "bar"}], True), ([2], False), ([1, 2, 3], False)],
    ),
    (  # uniqueItems.json: uniqueItems validation (the first twelve cases)
        {"uniqueItems": True},
        [
            ([1, 2], True),
            ([1, 1], False),
            ([1, 2, 1], False),
            ([1.0, 1.0, 1], False),
            ([0, False], True),
            ([1, True], True),
            (["foo", "bar", "baz"], True),
            (["foo", "bar", "foo"], False),
            ([{"foo": "bar"}, {"foo": "baz"}], True),
            ([{"foo": "bar"}, {"foo": "bar"}], False),
            ([{"foo": "bar", "bar": "foo"}, {"bar": "foo", "foo": "bar"}], False),
            ([["foo"], ["bar"]], True),
        ],
    ),
    (  # patternProperties.json: patternProperties validates properties matching a regex
        {"patternProperties": {"f.*o": {"type": "integer"}}},
        [
            ({"foo": 1}, True),
            ({"foo": 1, "foooooo": 2}, True),
            ({"foo": "bar", "fooooo": 2}, False),
            ({"foo": "bar", "foooooo": "baz"}, False),
            (["foo"], True),
        ],
    ),
    (  # prefixItems.json: a schema given for prefixItems
        {"prefixItems": [{"type": "integer"}, {"type": "string"}]},
        [
            ([1, "foo"], True),
            (["foo", 1], False),
            ([1], True),
            ([1, "foo", True], True),
            ([], True),
            ({"0": "invalid", "1": "valid", "length": 2}, True),
        ],
    ),
    (  # items.json: a schema given for items
        {"items": {"type": "integer"}},
        [([1, 2, 3], True), ([1, "x"], False), ({"foo": "bar"}, True)],
    ),
    (  # dependentRequired.json: single dependency
        {"dependentRequired": {"bar": ["foo"]}},
        [
            ({}, True),
            ({"foo": 1}, True),
            ({"foo": 1, "bar": 2}, True),
            ({"bar": 2}, False),
            (["bar"], True),
        ],
    ),
    (  # type.json: object type matches objects
        {"type": "object"},
        [({}, True), ([], False)],
    ),
    (  # type.json: array type matches arrays
        {"type": "array"},
        [({}, False), ([], True)],
    ),
    (  # type.json: multiple types can be specified in an array
        {"type": ["integer", "string"]},
        [({}, False), ([], False)],
    ),
    (  # minItems.json: minItems validation
        {"minItems": 1},
        [([1, 2], True), ([1], True), ([], False)],
    ),
    (  # maxProperties.json: maxProperties validation
        {"maxProperties": 2},
        [({"foo": 1}, True), ({"foo": 1, "bar": 2}, True), ({"foo": 1, "bar": 2, "baz": 3}, False)],
    ),
    (  # propertyNames.json: propertyNames validation
        {"propertyNames": {"maxLength": 3}},
        [
            ({"f": {}, "foo": {}}, True),
            ({"foo": {}, "foobar": {}}, False),
            ({}, True),
            ([1, 2, 3, 4], True),
        ],
    ),
]


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [(schema, instance, valid) for schema, cases in SCHEMA_SUITE for instance, valid in cases],
)
def test_schema_validity_agrees_with_the_json_schema_test_suite(schema, instance, valid):
    completion = json.dumps(instance)
    assert score("json_schema_valid", completion, schema=json.dumps(schema)) == (
        1.0 if valid else 0.25
    )


# --- completions that try to game the rewards -------------------------------------------------

NUMBER_UP_TO_5 = json.dumps(
    {"type": "object", "properties": {"a": {"type": "number", "maximum": 5}}, "required": ["a"]}
)


@pytest.mark.parametrize(
    "literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "[NaN]", '{"b": Infinity}']
)
def test_non_standard_literals_are_not_json(literal):
    """Python's json module reads NaN and Infinity (and 1e999 as inf); standard JSON has none,
    and NaN passes every `maximum` check. Such text is not JSON: no credit."""
    completion = '{"a": ' + literal + "}"
    assert find_json(completion) == (None, len(completion))
    assert score("json_schema_valid", completion, schema=NUMBER_UP_TO_5) == 0.0
    assert score("json_only", completion) == -1.0
    assert score("json_field_match", completion, answer='{"a": 3}') == 0.0
    assert score("json_field_match", '{"a": 3}', answer=completion) is None  # no reference


def test_strings_and_keys_compare_after_unicode_normalisation():
    composed = unicodedata.normalize("NFC", "Zürich Café")
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    reference = json.dumps({"city": composed, composed: 1}, ensure_ascii=False)
    completion = json.dumps({"city": decomposed, decomposed: 1}, ensure_ascii=False)
    assert score("json_field_match", completion, answer=reference) == 1.0
    assert score("json_field_f1", completion, answer=reference) == 1.0


def test_a_flattened_key_is_not_the_nested_field():
    reference = json.dumps({"addr": {"city": "Graz"}, "name": "Lena"})
    flat = json.dumps({"addr.city": "Graz", "name": "Lena"})
    assert score("json_field_match", flat, answer=reference) == 0.5
    assert score("json_field_f1", flat, answer=reference) == 0.5
    nested = json.dumps({"addr": {"city": "Graz"}, "name": "Lena"})
    assert score("json_field_match", nested, answer=reference) == 1.0
    # list indices and keys that look like them are different fields too
    assert score("json_field_match", '{"items": {"0": 1}}', answer='{"items": [1]}') == 0.0


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('{"name": "Ana", "tags": [], "meta": {}}', 1.0),
        ('{"name": "Ana"}', pytest.approx(1 / 3)),
        ('{"name": "Ana", "tags": ["x"], "meta": {}}', pytest.approx(2 / 3)),
        ('{"name": "Ana", "tags": {}, "meta": []}', pytest.approx(1 / 3)),
        ('{"name": "Ana", "tags": null, "meta": {}}', pytest.approx(2 / 3)),
    ],
)
def test_empty_containers_in_the_reference_are_fields(completion, expected):
    reference = '{"name": "Ana", "tags": [], "meta": {}}'
    assert score("json_field_match", completion, answer=reference) == expected


def test_an_empty_reference_object_is_one_field():
    assert score("json_field_match", "{}", answer="{}") == 1.0
    assert score("json_field_match", '{"a": 1}', answer="{}") == 0.0


def test_a_backtracking_schema_pattern_is_cut_by_the_time_budget():
    """`^(a+)+$` on 'aaa...!' backtracks for longer than the universe has existed; the completion
    scores 0 within the budget, and the timeout is counted (TRL's log_metric)."""
    schema = json.dumps({"type": "object", "properties": {"id": {"pattern": "^(a+)+$"}}})
    row = {"prompt": [], "schema": schema, "answer": "{}"}
    metrics = []
    func = json_schema_valid
    start = time.thread_time()  # budgets count CPU time: a loaded host does not change this
    columns = {"schema": [schema, schema], "answer": ["{}", "{}"]}
    values = func(
        ['{"id": "' + "a" * 40 + '!"}', '{"id": "aaaa"}'],
        log_metric=lambda name, value: metrics.append((name, value)),
        **columns,
    )
    elapsed = time.thread_time() - start
    assert values == [0.0, 1.0]
    assert elapsed < SCHEMA_BUDGET_S + 2.0
    assert metrics == [
        ("rewards/json_schema_valid/timeouts", 1.0),
        ("rewards/json_schema_valid/errors", 0.0),
    ]
    assert call_like_trl(func, ['{"id": "aa"}'], [row]) == [1.0]


# --- integers compare exactly (a 20-digit id off by 10^9 is another id) -----------------------

ID_REFERENCE = '{"id": 12345678901234567890, "ratio": 0.3, "count": 34}'


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('{"id": 12345678901234567890, "ratio": 0.3, "count": 34}', 1.0),
        ('{"id": 12345678902234567890, "ratio": 0.3, "count": 34}', 2 / 3),  # off by 10^9
        ('{"id": 12345678901234567891, "ratio": 0.3, "count": 34}', 2 / 3),  # off by one
        ('{"id": 1.2345678901234567e19, "ratio": 0.3, "count": 34}', 2 / 3),  # a rounded float
        ('{"id": 12345678901234567890, "ratio": 0.30000000000000004, "count": 34.0}', 1.0),
        ('{"id": 12345678901234567890, "ratio": 0.3, "count": 34.000001}', 2 / 3),
    ],
)
def test_integers_compare_exactly_and_floats_within_a_tolerance(completion, expected):
    assert score("json_field_match", completion, answer=ID_REFERENCE) == pytest.approx(expected)


# --- schemas from data never fetch ---------------------------------------------------------------


@pytest.fixture
def listener():
    """A loopback HTTP server that records every request it gets (and answers a schema)."""
    import http.server
    import threading

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            seen.append(self.path)
            body = b'{"type": "object"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def hostile_schemas(url: str) -> list[str]:
    return [
        json.dumps({"$ref": f"{url}/root.json"}),
        json.dumps({"type": "object", "properties": {"a": {"$ref": f"{url}/a.json#/x"}}}),
        json.dumps({"$id": f"{url}/base/", "properties": {"b": {"$ref": "other.json"}}}),
        json.dumps({"$defs": {"d": {"$dynamicRef": f"{url}/dyn.json"}}, "$ref": "#/$defs/d"}),
        json.dumps({"allOf": [{"$ref": "file:///etc/passwd"}]}),
    ]


def test_schemas_from_data_never_fetch(tmp_path, projects, listener):
    """A dataset's schemas that refer to a URL (or a file, or a relative document) fail when the
    data loads, naming the row, and scoring them asks no server anything: the listener must
    see no request."""
    from conftest import sample_recipe
    from grpo_kit import data

    url, seen = listener
    schemas = hostile_schemas(url)
    recipe = sample_recipe(projects("json"))
    for number, schema in enumerate(schemas, start=1):
        path = tmp_path / f"d{number}.jsonl"
        good = {"prompt": "p", "completion": "{}", "schema": SCHEMA}
        rows = [good, {"prompt": "p", "completion": "{}", "schema": schema}]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        script = type(recipe.script)(**{**vars(recipe.script), "dataset_name": str(path)})
        with pytest.raises(data.DataError, match="row 2: column 'schema' .* refers outside"):
            data.load_training_rows(script, recipe.task, TASK)
        assert score("json_schema_valid", '{"a": 1, "b": 2}', schema=schema) is None
    assert seen == []


def test_in_document_references_still_validate(listener):
    url, seen = listener
    schema = json.dumps(
        {
            "$id": f"{url}/schema.json",
            "$defs": {"age": {"type": "integer", "minimum": 0}},
            "type": "object",
            "properties": {"age": {"$ref": "#/$defs/age"}, "tag": {"const": {"$ref": url}}},
        }
    )
    assert score("json_schema_valid", '{"age": 3}', schema=schema) == 1.0
    assert score("json_schema_valid", '{"age": -3}', schema=schema) == 0.25
    assert seen == []
