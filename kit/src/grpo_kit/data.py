"""Training data: load a Hub dataset or a local file, check it, and turn rows into chat prompts.

Every problem is reported with the file (or dataset), row and column before any model is loaded.
The result has a conversational `prompt` column (system message + user message) and an `answer`
column with the gold answer; other columns are kept, since TRL passes them to reward functions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError, UserError  # noqa: F401 (DataError is re-exported)
from .rows import LOCAL_FORMATS, is_local, load_rows, where  # noqa: F401 (re-exported)

logger = logging.getLogger(__name__)

# Keyword arguments TRL 1.16's GRPOTrainer passes every reward itself (`_calculate_rewards`),
# beside one list per data column: a column of the same name would be passed twice ("got
# multiple values"). An agent task's rows also reach `environment.reset(self, **row)`, and TRL
# passes its rewards the `environments`.
REWARD_KEYWORDS = (
    "prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"
)  # fmt: skip
AGENT_KEYWORDS = ("self", "environments")


def _content_text(content) -> str:
    """A message's text: its content, or the text parts of a multimodal content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}, ...]
        return " ".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


def cell_problem(value, *, text_or_chat: bool = False) -> str | None:
    """Why a cell cannot be used (None if fine). One rule for every data file the kit reads: a
    cell is text, or a chat (a list of messages, each a mapping with 'role' and 'content', the
    content not empty unless the message calls tools); a training column may also hold a number
    or a list of texts (e.g. unit tests), which `text_or_chat` (a preference pair's prompt,
    chosen and rejected, which RewardTrainer reads as text or chat) refuses."""
    expected = "text or a list of chat messages" if text_or_chat else "text"
    if value is None:
        return "is empty (null, or missing from this row)"
    if isinstance(value, bool):
        return f"is {str(value).lower()}, expected {expected}"
    if isinstance(value, str):
        return None if value.strip() else "is empty"
    if isinstance(value, int | float) and not text_or_chat:
        return None
    if isinstance(value, list):
        if not value:
            return "is an empty list"
        if all(isinstance(v, str) for v in value) and not text_or_chat:
            return None
        if not all(isinstance(v, dict) for v in value):
            items = "chat messages" if text_or_chat else "texts or chat messages"
            return f"is a list of mixed items, expected {items}"
        for number, message in enumerate(value, start=1):
            if "role" not in message or "content" not in message:
                return f"message {number} is not a mapping with 'role' and 'content'"
            if not _content_text(message["content"]).strip() and not message.get("tool_calls"):
                return f"message {number} has empty content"
        return None
    return f"is {type(value).__name__}, expected {expected}"


def require_columns(
    rows,
    source: str,
    columns: dict[str, str],
    recipe: str = "configs/local.yaml (your settings)",
    hints: dict[str, str] | None = None,
) -> None:
    """The data has rows and every column in `columns` ({column: the recipe field naming it}),
    or one DataError naming the field to set in `recipe` (`hints`: more words for a field)."""
    if len(rows) == 0:
        raise DataError(f"{source}: no rows")
    available = list(rows.column_names)
    for column, setting in columns.items():
        if column not in available:
            hint = (hints or {}).get(setting, "")
            raise DataError(
                f"{source}: column '{column}' not found (columns: {', '.join(available)}); "
                f"set {setting} in {recipe} or pass --{setting}{hint}"
            )


def validate_columns(
    rows, source: str, columns: dict[str, str], may_be_empty: frozenset[str] = frozenset()
) -> None:
    """Every required column exists and holds usable values (see `cell_problem`).

    `columns` maps a column name to the recipe field that names it, for the error message;
    columns in `may_be_empty` may hold empty text (e.g. optional setup code).
    """
    require_columns(rows, source, columns)
    for column in columns:
        for index, value in enumerate(rows[column]):
            problem = cell_problem(value)
            if problem == "is empty" and column in may_be_empty:
                continue
            if problem:
                raise DataError(f"{where(source, index)}: column '{column}' {problem}")


def reserved_columns(task) -> tuple[str, ...]:
    """Column names a task's data may not keep: they collide with its rewards' keywords."""
    return REWARD_KEYWORDS + (AGENT_KEYWORDS if task.environments is not None else ())


def check_reserved_columns(rows, source: str, task, mapped: set[str]) -> None:
    """Refuse a column named like a keyword TRL passes the rewards (see `REWARD_KEYWORDS`):
    training would fail at its first step. A column the recipe maps (prompt_column,
    answer_column, a task column) is set aside by `to_conversations` and may keep its name."""
    reserved = set(reserved_columns(task))
    clashing = [c for c in rows.column_names if c in reserved and c not in mapped]
    if clashing:
        names = ", ".join(f"'{c}'" for c in clashing)
        raise DataError(
            f"{source}: column {names} has a name TRL passes to every reward itself "
            f"({', '.join(sorted(reserved))}), so training would stop with 'got multiple "
            "values': rename the column in the data, or map it with prompt_column / "
            "answer_column in configs/local.yaml if it holds the prompt or the answer"
        )


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


def to_conversations(rows, script_args, task_args, task):
    """Rows with the chat `prompt` (system + user message), the gold `answer` (text) and the
    task's extra columns under the names its rewards read."""
    answer_column = script_args.answer_column
    rows = _label_names(rows, answer_column)
    extra_columns = _extra_columns(task_args, task)
    renames = {source: name for name, source in extra_columns.items() if source != name}
    reserved = {"prompt", "answer", *renames.values(), *reserved_columns(task)}
    keep_aside = {c: f"source_{c}" for c in rows.column_names if c in reserved}
    rows = rows.rename_columns(keep_aside)  # the new columns replace these, with other types
    renames = {keep_aside.get(s, s): n for s, n in renames.items()}
    prompt_source = keep_aside.get(script_args.prompt_column, script_args.prompt_column)
    answer_source = keep_aside.get(answer_column, answer_column)

    def convert(row: dict) -> dict:
        extra = {name: row[source] for source, name in renames.items()}
        view = {**row, **extra}  # the task sees extra columns under the names rewards read
        content = task.user_message(view, prompt_source, answer_source, task_args)
        messages = [{"role": "user", "content": content}]
        if script_args.system_prompt:
            messages.insert(0, {"role": "system", "content": script_args.system_prompt})
        fields = task.row_fields(view, task_args)
        return {"prompt": messages, "answer": task.gold(row[answer_source]), **extra, **fields}

    return rows.map(convert, desc="Building prompts")


def _extra_columns(task_args, task) -> dict[str, str]:
    """{name the rewards read: source column} for the task's extra columns."""
    return {name: getattr(task_args, setting) for name, setting in task.columns(task_args).items()}


def prompt_token_count(
    tokenizer, messages: list[dict], chat_template_kwargs=None, tools: list | None = None
) -> int:
    """Tokens of the chat-formatted prompt, generation prompt included (as TRL will see it: with
    the recipe's chat_template_kwargs, e.g. a thinking prefill, and an agent row's tools)."""
    text = tokenizer.apply_chat_template(
        messages,
        add_generation_prompt=True,
        tokenize=False,
        **({"tools": tools} if tools else {}),
        **(chat_template_kwargs or {}),
    )
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def row_tools(task_args, task):
    """For an agent task, a function giving the tools a row's prompt shows (its environment's,
    as TRL renders them); None for other tasks."""
    if task.environments is None:
        return None
    from .environments import tool_methods

    factories = task.environments(task_args)
    found: dict[str, list] = {}

    def tools_of(row: dict) -> list:
        name = row["environment"]
        if name not in found:
            found[name] = tool_methods(factories[name]())
        return found[name]

    return tools_of


def filter_long_prompts(
    rows, tokenizer, max_prompt_tokens: int, chat_template_kwargs=None, tools_of=None
):
    """Drop rows whose prompt is longer than `max_prompt_tokens`; TRL would not truncate them."""
    counted = rows.map(
        lambda row: {
            "_prompt_tokens": prompt_token_count(
                tokenizer, row["prompt"], chat_template_kwargs, tools_of(row) if tools_of else None
            )
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


def _left_over(err: DataError, script_args, task) -> DataError:
    """The data does not fit the task: when configs/local.yaml, which named that data, was
    written for another task (a task switch kept it), say so and how to fix it, not only the
    row (grpo_kit.consistency.leftover_local)."""
    import yaml

    from .consistency import LOCAL, leftover_local

    local = Path(LOCAL)
    try:
        values = yaml.safe_load(local.read_text(encoding="utf-8")) if local.is_file() else None
    except (OSError, yaml.YAMLError):
        return err
    data = {k: v for k, v in (values or {}).items() if k in ("dataset_name", "answer_column")}
    if not data or any(getattr(script_args, k, None) != v for k, v in data.items()):
        return err  # this data is not local.yaml's
    leftover = leftover_local(Path.cwd(), task.name)
    if leftover is None:
        return err
    return DataError(f"{leftover.message(task.name)}. What failed: {err}")


def generated(script_args, task) -> bool:
    """Whether the recipe's data is the task's generated problems (a procedural task, whose
    `Task.generate` makes them, while the recipe names its default dataset_name)."""
    return task.generate is not None and script_args.dataset_name == task.data.dataset_name


def generated_rows(task, task_args, split: str):
    """A procedural task's generated rows of `split`, as a dataset."""
    from datasets import Dataset

    return Dataset.from_list(task.generate(split, task_args))


def load_training_rows(script_args, task_args, task, split: str | None = None):
    """Load and validate the configured split (no tokenizer needed, so it runs before the model)."""
    split = split or script_args.dataset_train_split
    if generated(script_args, task):
        rows = generated_rows(task, task_args, split)
    else:
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
    extra = {getattr(task_args, setting): setting for setting in task.columns(task_args).values()}
    try:
        validate_columns(rows, source, {**required, **extra}, frozenset(extra))
        check_reserved_columns(rows, source, task, {*required, *extra})
        if script_args.max_train_samples is not None:
            rows = rows.select(range(min(script_args.max_train_samples, len(rows))))
        answer_column = script_args.answer_column
        task.validate(_label_names(rows, answer_column), source, task_args, answer_column)
    except DataError as err:
        raise _left_over(err, script_args, task) from err
    logger.info("loaded %d rows from %s", len(rows), source)
    return rows


def prepare(rows, tokenizer, script_args, task_args, task, chat_template_kwargs=None):
    """Conversational prompts, filtered to `max_prompt_tokens` (measured as the recipe's
    `chat_template_kwargs` render them)."""
    rows = to_conversations(rows, script_args, task_args, task)
    return filter_long_prompts(
        rows,
        tokenizer,
        script_args.max_prompt_tokens,
        chat_template_kwargs,
        row_tools(task_args, task),
    )


# Gold answers the task cannot read (its correctness reward does not apply to their rows: a math
# solution in prose, "...so the answer is 84."): above UNREADABLE_GOLD_SHARE of the rows doctor and
# reward-debug name them (reward-debug fails); above MOST_GOLDS_UNREADABLE `grpo train` refuses,
# unless the recipe sets allow_unreadable_golds: true (those rows then train on the other
# rewards alone).
UNREADABLE_GOLD_SHARE = 0.05
MOST_GOLDS_UNREADABLE = 0.5
NAMED_ROWS = 5  # rows named in a message
GOLD_CHECK_ROWS = 1000  # the rows checked (the first ones): a share, not every row


@dataclass(frozen=True)
class UnreadableGolds:
    """The rows whose gold answer the task's correctness reward cannot read."""

    reward: str
    rows: tuple[int, ...]  # indices into the rows checked
    total: int
    golds: tuple[str, ...]  # the first NAMED_ROWS rows' gold answers

    @property
    def share(self) -> float:
        return len(self.rows) / self.total if self.total else 0.0

    def describe(self, source: str) -> str:
        """One line: how many, which rows (the first NAMED_ROWS, numbered from 1 as in
        `where`), the first one's gold answer, and the fix."""
        named = ", ".join(str(i + 1) for i in self.rows[:NAMED_ROWS])
        more = f" and {len(self.rows) - NAMED_ROWS} more" if len(self.rows) > NAMED_ROWS else ""
        return (
            f"{source}: {len(self.rows)} of {self.total} gold answers ({self.share:.0%}) cannot "
            f"be read by {self.reward} (rows {named}{more}; row {self.rows[0] + 1}: "
            f"{_gold_excerpt(self.golds[0])}), so those rows get no correctness signal: write "
            "the final answer where the task reads it (math: after '####', in \\boxed{}, or "
            "alone)"
        )


def _gold_excerpt(gold: object, limit: int = 60) -> str:
    text = " ".join(str(gold).split())
    return repr(text if len(text) <= limit else "…" + text[-limit:])


def unreadable_golds(conversations, recipe) -> UnreadableGolds | None:
    """The rows (of `to_conversations` rows) whose gold answer the task cannot read: its
    correctness reward, called as GRPOTrainer calls it on an empty completion, does not apply
    (None) to them, whatever the completion. None when the task has no correctness reward, or
    when it is a judge model's (`rewards.judge.is_judge`: it reads no gold, and a None from it
    is a failed request, not a gold; asking it would send a request per row)."""
    from . import rewards
    from .rewards.judge import is_judge

    task = recipe.project.task
    if task.correctness is None or len(conversations) == 0:
        return None
    if is_judge(task.reward_table[task.correctness]):
        return None
    [func] = rewards.resolve([task.correctness], task.reward_table, recipe.reward_settings())
    rows = [conversations[i] for i in range(len(conversations))]
    values = rewards.call_like_trl(func, [""] * len(rows), rows)
    unread = tuple(i for i, v in enumerate(values) if v is None)
    golds = tuple(str(rows[i].get("answer", "")) for i in unread[:NAMED_ROWS])
    return UnreadableGolds(task.correctness, unread, len(rows), golds)


def gold_problem(conversations, recipe, source: str) -> tuple[bool, str] | None:
    """(whether `grpo train` refuses, the message) when more than UNREADABLE_GOLD_SHARE of the
    rows (the first GOLD_CHECK_ROWS) have gold answers the task cannot read; None otherwise.
    Training refuses above MOST_GOLDS_UNREADABLE, unless the recipe allows it."""
    checked = conversations.select(range(min(GOLD_CHECK_ROWS, len(conversations))))
    found = unreadable_golds(checked, recipe)
    if found is None or found.share <= UNREADABLE_GOLD_SHARE:
        return None
    if found.share > MOST_GOLDS_UNREADABLE and not recipe.script.allow_unreadable_golds:
        allow = "; or set allow_unreadable_golds: true in configs/local.yaml to train anyway"
        return True, found.describe(source) + allow
    return False, found.describe(source)


def refuse_unreadable_golds(conversations, recipe) -> None:
    """`grpo train`'s check (`gold_problem`): refuse when most gold answers cannot be read,
    warn when more than a few cannot."""
    problem = gold_problem(conversations, recipe, recipe.script.dataset_name)
    if problem is not None:
        blocks, message = problem
        if blocks:
            raise DataError(message)
        logger.warning("%s", message)
