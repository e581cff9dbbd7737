"""Training data: load a Hub dataset or a local file, check it, and turn rows into chat prompts.

Every problem is reported with the file (or dataset), row and column before any model is loaded.
The result has a conversational `prompt` column (system message + user message) and an `answer`
column with the gold answer; other columns are kept, since TRL passes them to reward functions.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError, UserError  # noqa: F401 (DataError is re-exported)
from .tasks import TASK

logger = logging.getLogger(__name__)

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


def _cell_problem(value) -> str | None:
    """Why a cell cannot be used (None if fine): text, a number, a list of texts (e.g. unit
    tests) or a chat (list of {role, content} messages)."""
    if value is None:
        return "is empty (null, or missing from this row)"
    if isinstance(value, bool):
        return f"is {str(value).lower()}, expected text"
    if isinstance(value, str | int | float):
        return None if str(value).strip() else "is empty"
    if isinstance(value, list):
        if not value:
            return "is an empty list"
        if all(isinstance(v, str) for v in value):
            return None
        if all(isinstance(v, dict) and "content" in v for v in value):
            return None
        return "is a list of mixed items, expected texts or chat messages"
    return f"is {type(value).__name__}, expected text"


def where(source: str, index: int) -> str:
    """A data row for an error message: `file row N`, with the line for a CSV (its header is
    line 1)."""
    if Path(source).suffix.lower() == ".csv":
        return f"{source} row {index + 1} (line {index + 2})"
    return f"{source} row {index + 1}"


def validate_columns(
    rows, source: str, columns: dict[str, str], may_be_empty: frozenset[str] = frozenset()
) -> None:
    """Every required column exists and holds usable values (see `_cell_problem`).

    `columns` maps a column name to the recipe field that names it, for the error message;
    columns in `may_be_empty` may hold empty text (e.g. optional setup code).
    """
    if len(rows) == 0:
        raise DataError(f"{source}: no rows")
    available = list(rows.column_names)
    for column, setting in columns.items():
        if column not in available:
            raise DataError(
                f"{source}: column '{column}' not found (columns: {', '.join(available)}); "
                f"set {setting} in configs/local.yaml (your settings) or pass --{setting}"
            )
        for index, value in enumerate(rows[column]):
            problem = _cell_problem(value)
            if problem == "is empty" and column in may_be_empty:
                continue
            if problem:
                raise DataError(f"{where(source, index)}: column '{column}' {problem}")


@dataclass(frozen=True)
class PromptStats:
    """What length filtering did, for the log and the run record."""

    kept: int
    dropped: int
    longest: int


def _label_names(rows, column: str):
    """Class-label columns (integers on the Hub) become their names, as the rewards compare text."""
    from datasets import ClassLabel

    feature = rows.features[column]
    if isinstance(feature, ClassLabel):
        return rows.map(lambda row: {column: feature.int2str(row[column])}, desc="Label names")
    return rows


def to_conversations(rows, script_args, task_args):
    """Rows with the chat `prompt` (system + user message), the gold `answer` (text) and the
    task's extra columns under the names its rewards read."""
    answer_column = script_args.answer_column
    rows = _label_names(rows, answer_column)
    renames = {source: name for name, source in _extra_columns(task_args).items() if source != name}
    reserved = {"prompt", "answer", *renames.values()}
    keep_aside = {c: f"source_{c}" for c in rows.column_names if c in reserved}
    rows = rows.rename_columns(keep_aside)  # the new columns replace these, with other types
    renames = {keep_aside.get(s, s): n for s, n in renames.items()}
    prompt_source = keep_aside.get(script_args.prompt_column, script_args.prompt_column)
    answer_source = keep_aside.get(answer_column, answer_column)

    def convert(row: dict) -> dict:
        extra = {name: row[source] for source, name in renames.items()}
        view = {**row, **extra}  # the task sees extra columns under the names rewards read
        content = TASK.user_message(view, prompt_source, answer_source, task_args)
        messages = [{"role": "user", "content": content}]
        if script_args.system_prompt:
            messages.insert(0, {"role": "system", "content": script_args.system_prompt})
        return {"prompt": messages, "answer": TASK.gold(row[answer_source]), **extra}

    return rows.map(convert, desc="Building prompts")


def _extra_columns(task_args) -> dict[str, str]:
    """{name the rewards read: source column} for the task's extra columns."""
    return {name: getattr(task_args, setting) for name, setting in TASK.columns(task_args).items()}


def prompt_token_count(tokenizer, messages: list[dict], chat_template_kwargs=None) -> int:
    """Tokens of the chat-formatted prompt, generation prompt included (as TRL will see it: with
    the recipe's chat_template_kwargs, e.g. a thinking prefill)."""
    text = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, **(chat_template_kwargs or {})
    )
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def filter_long_prompts(rows, tokenizer, max_prompt_tokens: int, chat_template_kwargs=None):
    """Drop rows whose prompt is longer than `max_prompt_tokens`; TRL would not truncate them."""
    counted = rows.map(
        lambda row: {
            "_prompt_tokens": prompt_token_count(tokenizer, row["prompt"], chat_template_kwargs)
        },
        desc="Counting prompt tokens",
    )
    lengths = counted["_prompt_tokens"]
    kept = counted.filter(lambda row: row["_prompt_tokens"] <= max_prompt_tokens)
    kept = kept.remove_columns("_prompt_tokens")
    stats = PromptStats(kept=len(kept), dropped=len(rows) - len(kept), longest=max(lengths))
    if stats.kept == 0:
        raise DataError(
            f"every prompt is longer than max_prompt_tokens={max_prompt_tokens} "
            f"(longest {stats.longest}); raise max_prompt_tokens"
        )
    if stats.dropped:
        logger.warning(
            "dropped %d of %d rows with prompts over %d tokens (longest %d); "
            "raise max_prompt_tokens to keep them",
            stats.dropped,
            len(rows),
            max_prompt_tokens,
            stats.longest,
        )
    return kept, stats


def load_training_rows(script_args, task_args, split: str | None = None):
    """Load and validate the configured split (no tokenizer needed, so it runs before the model)."""
    split = split or script_args.dataset_train_split
    rows = load_rows(script_args.dataset_name, script_args.dataset_config, split)
    source = (
        script_args.dataset_name
        if is_local(script_args.dataset_name)
        else f"{script_args.dataset_name}[{split}]"
    )
    required = {
        script_args.prompt_column: "prompt_column",
        script_args.answer_column: "answer_column",
    }
    extra = {getattr(task_args, setting): setting for setting in TASK.columns(task_args).values()}
    validate_columns(rows, source, {**required, **extra}, frozenset(extra))
    if script_args.max_train_samples is not None:
        rows = rows.select(range(min(script_args.max_train_samples, len(rows))))
    answer_column = script_args.answer_column
    TASK.validate(_label_names(rows, answer_column), source, task_args, answer_column)
    logger.info("loaded %d rows from %s", len(rows), source)
    return rows


def prepare(rows, tokenizer, script_args, task_args, chat_template_kwargs=None):
    """Conversational prompts, filtered to `max_prompt_tokens` (measured as the recipe's
    `chat_template_kwargs` render them)."""
    rows = to_conversations(rows, script_args, task_args)
    return filter_long_prompts(rows, tokenizer, script_args.max_prompt_tokens, chat_template_kwargs)
