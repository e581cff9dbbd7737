"""Reading a dataset: a local file (JSONL with line numbers in its errors, JSON, CSV, Parquet) or
a Hub split, and naming a row in an error message. No task knowledge here (data.py checks the
rows and builds the prompts), so any module can read files with it (the lookup tools' corpus
too).
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import DataError

LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def is_local(name: str) -> bool:
    """True when `dataset_name` names a local file rather than a Hub dataset id."""
    return Path(name).suffix.lower() in LOCAL_FORMATS or Path(name).exists()


def load_rows(dataset_name: str, dataset_config: str | None = None, split: str = "train"):
    """A `datasets.Dataset` from a local file (all rows) or a Hub dataset split."""
    from datasets import load_dataset

    if is_local(dataset_name):
        path = Path(dataset_name)
        if not path.is_file():
            raise DataError(f"{dataset_name}: file not found (dataset_name is a local path)")
        suffix = path.suffix.lower()
        if suffix not in LOCAL_FORMATS:
            raise DataError(
                f"{dataset_name}: unsupported file type; use {', '.join(LOCAL_FORMATS)}"
            )
        if suffix == ".jsonl":
            return _jsonl_dataset(path)
        try:
            return load_dataset(LOCAL_FORMATS[suffix], data_files=str(path), split="train")
        except Exception as err:
            raise DataError(f"{dataset_name}: cannot read as {suffix[1:]} ({err})") from err
    try:
        return load_dataset(dataset_name, name=dataset_config, split=split)
    except Exception as err:
        raise DataError(
            f"cannot load Hub dataset '{dataset_name}' (config {dataset_config!r}, "
            f"split {split!r}): {err}. Check the id, or point dataset_name at a local "
            ".jsonl/.csv/.parquet file"
        ) from err


def _jsonl_dataset(path: Path):
    from datasets import Dataset

    rows = _read_jsonl(path)
    try:
        return Dataset.from_list(rows)
    except Exception as err:  # pyarrow refuses a column whose rows have different types
        raise DataError(f"{path}: {_mixed_types(rows) or err}") from err


def _mixed_types(rows: list[dict]) -> str | None:
    """Where a column changes type between rows (row numbers are 1-based lines of data)."""
    first: dict[str, tuple[int, str]] = {}
    for number, row in enumerate(rows, start=1):
        for column, value in row.items():
            kind = type(value).__name__
            if value is None:
                continue
            if column not in first:
                first[column] = (number, kind)
            elif first[column][1] != kind:
                seen_row, seen_kind = first[column]
                return (
                    f"row {number}: column '{column}' is {kind}, but row {seen_row} has "
                    f"{seen_kind}; use one type per column"
                )
    return None


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path} line {number}: invalid JSON ({err.msg})") from err
            if not isinstance(row, dict):
                raise DataError(
                    f"{path} line {number}: expected a JSON object, got {type(row).__name__}"
                )
            rows.append(row)
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


def where(source: str, index: int) -> str:
    """A data row for an error message: `file row N`, with the line for a CSV (its header is
    line 1)."""
    if Path(source).suffix.lower() == ".csv":
        return f"{source} row {index + 1} (line {index + 2})"
    return f"{source} row {index + 1}"
