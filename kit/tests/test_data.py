"""The data loader: local files and their errors, prompt building and length filtering, for
every task's sample data (each in its own project)."""

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import TASKS, rows_of, sample_recipe
from grpo_kit import data


@pytest.fixture(params=TASKS)
def recipe(request, projects, monkeypatch):
    """The sample recipe of a project of each task; the test runs in that project."""
    root = projects(request.param)
    monkeypatch.chdir(root)
    return sample_recipe(root)


@pytest.fixture
def sample_rows(recipe):
    return rows_of(recipe)


@pytest.fixture(scope="module")
def tokenizers() -> dict:
    """task -> the tokenizer of its tiny model (each made once)."""
    return {}


@pytest.fixture
def tiny_tokenizer(recipe, tokenizers, tmp_path_factory):
    """The tokenizer of the task's tiny model (an agent task's knows its tool-call text)."""
    from grpo_kit.offline.tiny_model import project_tiny_model
    from transformers import AutoTokenizer

    task = recipe.project.task.name
    if task not in tokenizers:
        out = tmp_path_factory.mktemp(f"tiny-{task}") / "model"
        model = project_tiny_model(out, recipe.project, recipe=recipe)
        tokenizers[task] = AutoTokenizer.from_pretrained(model)
    return tokenizers[task]


def raw_rows() -> list[dict]:
    """The sample data of the project the test runs in (the current folder's)."""
    from conftest import load as load_project

    sample = Path(load_project(Path.cwd()).task.data.sample)
    with open(sample, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def load(recipe, **changes):
    script = dataclasses.replace(recipe.script, **changes)
    return data.load_training_rows(script, recipe.task, recipe.project.task), script


def test_sample_data_loads_and_becomes_chat_prompts(recipe, sample_rows, tiny_tokenizer):
    rows, script = load(recipe)
    assert len(rows) >= 16
    first = sample_rows[0]
    assert first["prompt"][0] == {"role": "system", "content": script.system_prompt}
    assert first["prompt"][-1]["role"] == "user" and first["prompt"][-1]["content"]
    assert isinstance(first["answer"], str) and first["answer"]
    prepared, stats = data.prepare(rows, tiny_tokenizer, script, recipe.task, recipe.project.task)
    assert stats.kept + stats.dropped == len(rows) and len(prepared) == stats.kept


def test_max_train_samples_limits_rows(recipe):
    rows, _ = load(recipe, max_train_samples=3)
    assert len(rows) == 3


def test_missing_column_names_file_column_and_setting(recipe, tmp_path):
    column = recipe.script.prompt_column
    rows = [{("q" if k == column else k): v for k, v in row.items()} for row in raw_rows()[:2]]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(data.DataError) as err:
        load(recipe, dataset_name=path)
    message = str(err.value)
    assert path in message and f"'{column}' not found" in message and "prompt_column" in message


def test_an_empty_value_names_the_row_and_column(recipe, tmp_path):
    column = recipe.script.prompt_column
    rows = raw_rows()[:2]
    text = isinstance(rows[0][column], str)
    empty, message = ("   ", "is empty") if text else ([], "is an empty list")
    rows[1] = {**rows[1], column: empty}
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(data.DataError, match=f"row 2: column '{column}' {message}"):
        load(recipe, dataset_name=path)


def test_a_value_of_the_wrong_type_names_the_row_and_column(recipe, tmp_path):
    column = recipe.script.prompt_column
    rows = [{**row, column: {"not": "text"}} for row in raw_rows()[:2]]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(data.DataError, match=f"row 1: column '{column}' is dict"):
        load(recipe, dataset_name=path)


def test_mixed_types_in_a_column_name_the_row(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"q": "a"}, {"q": ["x"]}, {"q": 5}])
    with pytest.raises(data.DataError, match="row 2: column 'q' is list, but row 1 has str"):
        data.load_rows(path)


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "a", "answer": "1"}\n{broken\n', encoding="utf-8")
    with pytest.raises(data.DataError, match="line 2: invalid JSON"):
        data.load_rows(str(path))


def test_missing_and_unsupported_files(tmp_path):
    with pytest.raises(data.DataError, match="file not found"):
        data.load_rows(str(tmp_path / "absent.jsonl"))
    other = tmp_path / "d.txt"
    other.write_text("x")
    with pytest.raises(data.DataError, match="unsupported file type"):
        data.load_rows(str(other))


def test_parquet_and_csv_hold_the_same_rows(recipe, tmp_path):
    import pandas as pd

    frame = pd.DataFrame(raw_rows()[:4])
    parquet = tmp_path / "d.parquet"
    frame.to_parquet(parquet)
    assert len(load(recipe, dataset_name=str(parquet))[0]) == 4
    if all(frame[c].map(lambda v: isinstance(v, str | int | float)).all() for c in frame):
        csv = tmp_path / "d.csv"
        frame.to_csv(csv, index=False)
        assert len(load(recipe, dataset_name=str(csv))[0]) == 4


def test_long_prompts_are_dropped_and_counted(recipe, tmp_path, tiny_tokenizer):
    column = recipe.script.prompt_column
    short, long = raw_rows()[:2]
    long = {**long, column: lengthen(long[column])}
    rows, script = load(recipe, dataset_name=write_jsonl(tmp_path / "d.jsonl", [short, long]))
    task = recipe.project.task
    conversations = data.to_conversations(rows, script, recipe.task, task)
    tools_of = data.row_tools(recipe.task, task)  # an agent task's prompts show its tools
    tools = tools_of(conversations[0]) if tools_of else None
    limit = data.prompt_token_count(tiny_tokenizer, conversations[0]["prompt"], None, tools)
    script = dataclasses.replace(script, max_prompt_tokens=limit)
    prepared, stats = data.prepare(rows, tiny_tokenizer, script, recipe.task, task)
    assert (stats.kept, stats.dropped) == (1, 1)
    assert stats.longest > limit
    assert prepared[0]["answer"] == conversations[0]["answer"]


def lengthen(value):
    """The same kind of prompt (text or chat), 2000 words longer."""
    if isinstance(value, str):
        return value + " long" * 2000
    return [{**m, "content": m["content"] + " long" * 2000} for m in value]


def test_all_prompts_too_long_is_an_error(recipe, tiny_tokenizer):
    rows, script = load(recipe, max_prompt_tokens=3)
    with pytest.raises(data.DataError, match="raise max_prompt_tokens"):
        data.prepare(rows, tiny_tokenizer, script, recipe.task, recipe.project.task)


def test_hub_dataset_failure_is_explained():
    with pytest.raises(data.DataError, match="cannot load Hub dataset"):
        data.load_rows("no-such-org/no-such-dataset-xyz")


def test_a_null_or_missing_value_says_so_and_a_csv_error_names_the_line(recipe, tmp_path):
    column = recipe.script.answer_column
    rows = raw_rows()[:2]
    rows[1] = {k: v for k, v in rows[1].items() if k != column}  # missing from row 2
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(data.DataError, match=f"row 2: column '{column}' is empty \\(null"):
        load(recipe, dataset_name=path)
    if not all(isinstance(row[k], str) for row in raw_rows()[:2] for k in row):
        return  # a CSV holds text columns only
    import csv

    path = tmp_path / "d.csv"
    names = list(raw_rows()[0])
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for i, r in enumerate(raw_rows()[:2]):
            writer.writerow(["" if (i == 1 and k == column) else r[k] for k in names])
    with pytest.raises(data.DataError, match=f"row 2 \\(line 3\\): column '{column}'"):
        load(recipe, dataset_name=str(path))


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ([{"role": "user", "content": " "}], "message 1 has empty content"),
        ([{"content": "hi"}], "message 1 is not a mapping with 'role' and 'content'"),
        ([{"role": "assistant", "content": "", "tool_calls": [{}]}], None),
        ([], "is an empty list"),
        ("  ", "is empty"),
    ],
)
def test_one_cell_rule_for_training_data_and_preference_pairs(value, problem):
    """data.cell_problem is the one rule: training columns and the reward model's pairs judge a
    text or chat cell alike (they once had two rules); only training columns take numbers and
    lists of texts."""
    for pair in (False, True):
        assert data.cell_problem(value, text_or_chat=pair) == problem
    assert data.cell_problem(3) is None and data.cell_problem(["a", "b"]) is None
    assert "expected text or a list of chat messages" in data.cell_problem(3, text_or_chat=True)
