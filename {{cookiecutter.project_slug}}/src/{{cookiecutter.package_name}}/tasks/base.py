"""What every task provides (`Task`), its data defaults, and text helpers the tasks share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


def _no_columns(task_args) -> dict[str, str]:
    return {}


def _nothing(*args) -> None:
    return None


def _no_settings(task_args) -> dict:
    return {}


def _no_fields(row: dict, task_args) -> dict:
    return {}


@dataclass(frozen=True)
class DataDefaults:
    """Where the task's data comes from by default, and its columns (the defaults of the recipe's
    data fields in config.ScriptArguments; the shipped sample data has the same columns)."""

    dataset_name: str
    dataset_config: str | None
    train_split: str
    test_split: str
    prompt_column: str
    answer_column: str


@dataclass(frozen=True)
class Task:
    """A task type: the pieces of the pipeline that differ between math, code, JSON, ..."""

    name: str
    data: DataDefaults
    # Builds the user message from a data row, given the prompt and answer column names and the
    # task's arguments.
    user_message: Callable[[dict, str, str, object], str]
    # A completion that every reward of the task scores at the top of its range, given a training
    # row and the task's arguments; used by the reward debug command and the tests ("test each
    # reward on its own before training"). An agent task's is a whole rollout: the list of
    # assistant and tool messages after the prompt, its tool calls really executed.
    ideal_completion: Callable[[dict, object], str | list[dict]]
    # The gold answer (the answer column's value) as the text rewards receive as `answer`.
    gold: Callable[[object], str] = str
    # Extra columns rewards read, as {name rewards see: recipe field naming the source column}.
    columns: Callable[[object], dict[str, str]] = _no_columns
    # The settings the task's rewards take from its recipe fields (e.g. the label set, sandbox
    # limits), checked; bound to the rewards when they are resolved (rewards.resolve).
    reward_settings: Callable[[object], dict] = _no_settings
    # Raises DataError for rows the task cannot use (after the generic column checks); gets
    # (rows, source name, task arguments, answer column).
    validate: Callable[[object, str, object, str], None] = _nothing
    # Fields every training row gets besides its columns, from the data row (e.g. an agent row's
    # `environment`, defaulted when the data has no such column).
    row_fields: Callable[[dict, object], dict] = _no_fields
    # Agent tasks: the environments TRL runs the tools of (`GRPOTrainer(environment_factory=)`),
    # as {name: factory} given the task's arguments; each row's `environment` field picks one.
    environments: Callable[[object], dict[str, Callable[[], object]]] | None = None
    # Agent tasks: the short rollout the tiny offline model is taught for a row, with or without
    # a tool call (given row, task arguments, call): see tools/tiny_model.py `teach`.
    example_rollout: Callable[[dict, object, bool], list[dict]] | None = None
    # What the offline smoke and trial runs change for this task beyond config.SMOKE_OVERRIDES
    # (an agent's rollouts need room for a tool call and its result).
    smoke: dict = field(default_factory=dict)
    # Evaluation metrics as (label, reward name): the first is the task's correctness, also
    # used for pass@k and by the health monitor; each is a reward of range [0, 1].
    metrics: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = field(default=())


def as_messages(completion: str | list[dict]) -> list[dict]:
    """A completion as the messages TRL hands rewards: a text becomes one assistant message; an
    agent rollout (assistant and tool messages) stays as it is."""
    if isinstance(completion, list):
        return completion
    return [{"role": "assistant", "content": completion}]


def message_text(value) -> str:
    """Text of a prompt cell: a string, or the last user message of a chat (list of messages)."""
    if isinstance(value, list):
        users = [
            m.get("content", "") for m in value if isinstance(m, dict) and m.get("role") == "user"
        ]
        return str(users[-1] if users else "").strip()
    return str(value).strip()


def plain_user_message(
    row: dict, prompt_column: str, answer_column: str = "", task_args: object = None
) -> str:
    """The prompt column's text, as is."""
    return message_text(row[prompt_column])


def think_answer(reasoning: str, answer: str) -> str:
    """A completion in the `<think>...</think><answer>...</answer>` layout."""
    return f"<think>\n{reasoning}\n</think>\n<answer>\n{answer}\n</answer>"
