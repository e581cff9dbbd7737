"""The data loader: local files and their errors, prompt building and length filtering."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from {{ cookiecutter.package_name }} import data
from {{ cookiecutter.package_name }}.project import SAMPLE_DATA

RECIPE = yaml.safe_load(Path("configs/grpo.yaml").read_text(encoding="utf-8"))


def script_args(**overrides):
    values = {
        "dataset_name": SAMPLE_DATA,
        "dataset_config": None,
        "dataset_train_split": "train",
        "prompt_column": RECIPE["prompt_column"],
        "answer_column": RECIPE["answer_column"],
        "system_prompt": RECIPE["system_prompt"],
        "max_prompt_tokens": 4096,
        "max_train_samples": None,
    }
    values.update(overrides)
    return SimpleNamespace(**values)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_sample_data_loads_and_becomes_chat_prompts(tiny_tokenizer):
    rows = data.load_training_rows(script_args())
    assert len(rows) >= 16
    prepared, stats = data.prepare(rows, tiny_tokenizer, script_args())
    first = prepared[0]
    assert first["prompt"][0] == {"role": "system", "content": RECIPE["system_prompt"]}
    assert first["prompt"][-1]["role"] == "user"
    assert isinstance(first["answer"], str) and first["answer"]
    assert stats.dropped == 0 and stats.kept == len(rows)


def test_max_train_samples_limits_rows():
    assert len(data.load_training_rows(script_args(max_train_samples=3))) == 3


def test_missing_column_names_file_column_and_setting(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"q": "hi", "answer": "1"}])
    with pytest.raises(data.DataError) as err:
        data.load_training_rows(script_args(dataset_name=path))
    message = str(err.value)
    assert path in message and RECIPE["prompt_column"] in message and "prompt_column" in message


def test_empty_value_names_the_row(tmp_path):
    rows = [{"question": "a", "answer": "1"}, {"question": "  ", "answer": "2"}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    args = script_args(dataset_name=path, prompt_column="question", answer_column="answer")
    with pytest.raises(data.DataError, match="row 2: column 'question' is empty"):
        data.load_training_rows(args)


def test_wrong_type_names_the_row(tmp_path):
    rows = [{"question": "a", "answer": "1"}, {"question": ["not", "text"], "answer": "2"}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    args = script_args(dataset_name=path, prompt_column="question", answer_column="answer")
    with pytest.raises(data.DataError, match="row 2: column 'question' is list, but row 1 has str"):
        data.load_training_rows(args)


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


def test_csv_and_parquet(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"question": ["What is 1+1?", "What is 2+2?"], "answer": [2, 4]})
    csv = tmp_path / "d.csv"
    frame.to_csv(csv, index=False)
    parquet = tmp_path / "d.parquet"
    frame.to_parquet(parquet)
    for path in (csv, parquet):
        args = script_args(dataset_name=str(path), prompt_column="question", answer_column="answer")
        rows = data.load_training_rows(args)
        assert len(rows) == 2


def test_numbers_are_accepted_as_answers(tmp_path, tiny_tokenizer):
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": "1+1?", "answer": 2}])
    args = script_args(dataset_name=path, prompt_column="question", answer_column="answer")
    prepared, _ = data.prepare(data.load_training_rows(args), tiny_tokenizer, args)
    assert prepared[0]["answer"] == "2"


def test_long_prompts_are_dropped_and_counted(tmp_path, tiny_tokenizer):
    rows = [{"question": "short", "answer": "1"}, {"question": "long " * 400, "answer": "2"}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    args = script_args(dataset_name=path, prompt_column="question", answer_column="answer")
    conversations = data.to_conversations(
        data.load_training_rows(args), args.system_prompt, "question", "answer"
    )
    short = data.prompt_token_count(tiny_tokenizer, conversations[0]["prompt"])
    args.max_prompt_tokens = short
    prepared, stats = data.prepare(data.load_training_rows(args), tiny_tokenizer, args)
    assert (stats.kept, stats.dropped) == (1, 1)
    assert stats.longest > short
    assert prepared[0]["answer"] == "1"


def test_all_prompts_too_long_is_an_error(tiny_tokenizer):
    args = script_args(max_prompt_tokens=3)
    with pytest.raises(data.DataError, match="raise max_prompt_tokens"):
        data.prepare(data.load_training_rows(args), tiny_tokenizer, args)


def test_hub_dataset_failure_is_explained():
    with pytest.raises(data.DataError, match="cannot load Hub dataset"):
        data.load_rows("no-such-org/no-such-dataset-xyz")
