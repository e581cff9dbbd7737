"""What a task is (`Task`): its data defaults, how a row becomes a prompt, its rewards with their
weights, and what a perfect completion looks like; and the text helpers tasks share.

A project's task is one object, `TASK` in its `task.py` (verifiers' "environment": data, parser,
rubric): the kit's commands read everything task-specific from it and nothing from elsewhere.
The starting points for the built-in task types are in `grpo_kit/starters/<type>/task.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "DataDefaults",
    "NoArguments",
    "Reward",
    "Task",
    "as_messages",
    "message_text",
    "plain_user_message",
    "think_answer",
]


def _no_columns(task_args) -> dict[str, str]:
    return {}


def _nothing(*args) -> None:
    return None


def _no_settings(task_args) -> dict:
    return {}


def _no_fields(row: dict, task_args) -> dict:
    return {}


def _no_callbacks(trainer, recipe) -> list:
    return []


@dataclass
class NoArguments:
    """A task without recipe fields of its own."""


@dataclass(frozen=True)
class DataDefaults:
    """Where the task's data comes from by default, and its columns: the defaults of the recipe's
    data fields (recipe.ScriptArguments). The shipped sample (`sample`, in the project's data/)
    has the same columns."""

    dataset_name: str
    dataset_config: str | None
    train_split: str
    test_split: str
    prompt_column: str
    answer_column: str
    sample: str  # the sample file, relative to the project root

    def recipe_values(self) -> dict:
        """These defaults under their recipe field names."""
        return {
            "dataset_name": self.dataset_name,
            "dataset_config": self.dataset_config,
            "dataset_train_split": self.train_split,
            "dataset_test_split": self.test_split,
            "prompt_column": self.prompt_column,
            "answer_column": self.answer_column,
        }


@dataclass(frozen=True)
class Reward:
    """One reward of a task: the function (a `@reward` function, so its range is known), its
    default weight in the recipe, what it checks (a comment in the recipe and the README), and
    its kind: `correctness`, `format` or `length` (staged training rewards format first)."""

    func: Callable
    weight: float
    why: str = ""
    kind: str = "format"

    @property
    def name(self) -> str:
        return self.func.__name__


@dataclass(frozen=True)
class Task:
    """A task type: the pieces of the pipeline that differ between math, code, JSON, ..."""

    name: str
    data: DataDefaults
    # The system message the recipe starts from: it states the output format the rewards check.
    system_prompt: str
    # The task's rewards, in the recipe's order, with their default weights (the explicit
    # table the recipe's `reward_funcs` names are looked up in; a dotted path works too).
    rewards: tuple[Reward, ...]
    # Builds the user message from a data row, given the prompt and answer column names and the
    # task's arguments.
    user_message: Callable[[dict, str, str, object], str]
    # A completion that every reward of the task scores at the top of its range, given a training
    # row and the task's arguments; used by the reward debug command and the tests ("test each
    # reward on its own before training"). An agent task's is a whole rollout: the list of
    # assistant and tool messages after the prompt, its tool calls really executed.
    ideal_completion: Callable[[dict, object], str | list[dict]]
    # The task's recipe fields: a dataclass parsed from the recipe with the others.
    arguments: type = NoArguments
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
    # a tool call (given row, task arguments, call): see offline/tiny_model.py `teach`.
    example_rollout: Callable[[dict, object, bool], list[dict]] | None = None
    # Agent tasks: one tool call per environment the tiny offline model is taught to make (a
    # random model never writes a well-formed call), {environment: {"name", "arguments"}}.
    example_calls: Mapping = field(default_factory=dict)
    # What the offline smoke and trial runs change for this task beyond the kit's smoke layer
    # (an agent's rollouts need room for a tool call and its result).
    smoke: Mapping = field(default_factory=dict)
    # Procedural tasks: the rows of a split (its name, the task's arguments), generated instead
    # of read (grpo_kit.procedural), used while the recipe's dataset_name is `data`'s.
    generate: Callable[[str, object], list[dict]] | None = None
    # TrainerCallbacks the task adds to a training run, given (trainer, recipe): e.g. a
    # procedural task's curriculum.
    callbacks: Callable[[object, object], list] = _no_callbacks
    # Evaluation metrics as (label, reward function): the first is the task's correctness, also
    # used for pass@k and by the health monitor; each is a reward of range [0, 1].
    metrics: tuple[tuple[str, Callable], ...] = ()
    # A prompt that shows the task (make infer, the smoke run's inference step).
    example_prompt: str = ""

    @property
    def reward_table(self) -> dict[str, Callable]:
        """{name: reward function} of the task's rewards and metrics (the names the recipe's
        `reward_funcs` may use)."""
        table = {r.name: r.func for r in self.rewards}
        return {**table, **{f.__name__: f for _, f in self.metrics}}

    @property
    def correctness(self) -> str | None:
        """The name of the task's correctness reward (its first metric)."""
        return self.metrics[0][1].__name__ if self.metrics else None

    def recipe_defaults(self) -> dict:
        """The recipe values this task gives by default (below the recipe file): its data
        mapping, system prompt, rewards and weights."""
        return {
            **self.data.recipe_values(),
            "system_prompt": self.system_prompt,
            "reward_funcs": [r.name for r in self.rewards],
            "reward_weights": [float(r.weight) for r in self.rewards],
        }


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
