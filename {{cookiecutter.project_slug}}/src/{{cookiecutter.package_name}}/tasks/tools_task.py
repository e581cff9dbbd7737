"""Agents: solve problems by calling tools over several turns (TRL's `environment_factory`).

Each row names its environment (`environment` column: `python` runs code in the sandbox,
`lookup` searches the local knowledge base; yours in environments/__init__.py). TRL renders the
environment's tools into the prompt, parses the model's tool calls, runs them on a fresh
environment per rollout, appends the results and lets the model go on, up to
`max_tool_calling_iterations` turns; the rewards then read the whole exchange.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ..sandbox.arguments import SandboxArguments, sandbox_limits
from .base import DataDefaults, Task, plain_user_message

# The final turn's answer layout (the system prompt asks for it; rewards read it).
FINAL_ANSWER = "<answer>{}</answer>"


@dataclass
class TaskArguments(SandboxArguments):
    """Recipe fields of the tools task: the environments, the knowledge base, the tools' limits
    and the cost of a call (the sandbox's `sandbox_*` fields run `run_python`)."""

    environment_column: str | None = "environment"  # each row's environment; null: the default
    default_environment: str = "python"  # for every row when environment_column is null
    ideal_calls_column: str | None = "ideal_calls"  # an ideal rollout's calls (debug, tests)
    corpus: str = "data/sample_corpus.jsonl"  # the lookup tools' documents (JSONL or CSV)
    corpus_id_column: str = "id"
    corpus_title_column: str = "title"
    corpus_text_column: str = "text"
    search_results: int = 3  # hits one search returns
    tool_output_chars: int = 600  # longest tool result the model sees (cut with a marker)
    tool_call_cost: float = 0.1  # reward cost per call past free_tool_calls (tool_call_cost)
    free_tool_calls: int = 2  # calls an answer may need at no cost


def tool_settings(task_args):
    """The environments' settings from the recipe (the sandbox checked now)."""
    from ..environments import ToolSettings

    return ToolSettings(
        sandbox=sandbox_limits(task_args),
        corpus=task_args.corpus,
        corpus_id_column=task_args.corpus_id_column,
        corpus_title_column=task_args.corpus_title_column,
        corpus_text_column=task_args.corpus_text_column,
        search_results=task_args.search_results,
        tool_output_chars=task_args.tool_output_chars,
    )


def environments(task_args) -> dict:
    """{name: factory} of every registered environment, for `GRPOTrainer(environment_factory=)`
    (TRL's dict form: each row's `environment` field picks one). Made once per set of recipe
    values, so the environments of one run share one sandbox pool and one search index."""
    return _environments(tuple(sorted(dataclasses.asdict(task_args).items(), key=str)))


@functools.lru_cache(maxsize=4)
def _environments(values: tuple) -> dict:
    from ..environments import factories

    return factories(tool_settings(TaskArguments(**dict(values))))


def row_fields(row: dict, task_args) -> dict:
    """Every row's `environment`: its column's value, or the default without a column."""
    column = task_args.environment_column
    name = row.get(column) if column else None
    return {"environment": str(name).strip() if name else task_args.default_environment}


def rollout(row: dict, task_args, calls: list[dict]) -> list[dict]:
    """The messages after the prompt of an agent that makes `calls` (TRL's tool-call form, each
    really executed on a fresh environment as TRL runs it) and then writes the gold answer."""
    from ..environments import execute, tool_dict
    from ..rewards.math_rewards import gold_text

    name = row.get("environment") or row_fields(row, task_args)["environment"]
    environment = environments(task_args)[name]()
    environment.reset(**row)
    tools = tool_dict(environment)
    messages: list[dict] = []
    for call in calls:
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append(execute(tools, call))
    messages.append({"role": "assistant", "content": FINAL_ANSWER.format(gold_text(row["answer"]))})
    return messages


def ideal_completion(row: dict, task_args) -> list[dict]:
    """The rollout an ideal agent writes: the row's `ideal_calls`, then the gold answer."""
    from ..environments import tool_calls

    return rollout(row, task_args, tool_calls(row.get("ideal_calls") or []))


# One call per shipped environment that the tiny offline model is taught to make (smoke runs
# and the learning test: a random model never writes a well-formed call by itself).
EXAMPLE_CALLS = {
    "python": {"name": "run_python", "arguments": {"code": "print(6 * 7)"}},
    "lookup": {"name": "search", "arguments": {"query": "harbour festival"}},
}


def example_rollout(row: dict, task_args, call: bool) -> list[dict]:
    """What the tiny model is taught for a row: its environment's example call (when `call`
    and the environment has one), then the gold answer."""
    from ..environments import tool_calls

    example = EXAMPLE_CALLS.get(row.get("environment", ""))
    return rollout(row, task_args, tool_calls([example]) if call and example else [])


def columns(task_args) -> dict[str, str]:
    wanted = {"environment": "environment_column", "ideal_calls": "ideal_calls_column"}
    return {name: field for name, field in wanted.items() if getattr(task_args, field)}


def reward_settings(task_args) -> dict:
    if task_args.tool_call_cost < 0 or task_args.free_tool_calls < 0:
        from ..errors import UserError

        raise UserError("tool_call_cost and free_tool_calls must be 0 or more")
    return {
        "tool_call_cost": task_args.tool_call_cost,
        "free_tool_calls": task_args.free_tool_calls,
    }


def validate(rows, source: str, task_args, answer_column: str) -> None:
    """Every row names a registered environment, and its ideal calls (if any) are well formed."""
    from ..environments import ENVIRONMENTS, tool_calls
    from ..errors import DataError

    known = ", ".join(ENVIRONMENTS)
    if task_args.environment_column is None and task_args.default_environment not in ENVIRONMENTS:
        raise DataError(
            f"default_environment '{task_args.default_environment}' is not an environment; use "
            f"one of: {known}"
        )
    names = list(rows[task_args.environment_column]) if task_args.environment_column else []
    for index, name in enumerate(names):
        if str(name).strip() not in ENVIRONMENTS:
            raise DataError(
                f"{source} row {index + 1}: column '{task_args.environment_column}' is {name!r}, "
                f"not an environment; use one of: {known} (or register yours in "
                "environments/__init__.py)"
            )
    column = task_args.ideal_calls_column
    for index, value in enumerate(rows[column] if column else []):
        tool_calls(value, f"{source} row {index + 1}: column '{column}'")


TASK = Task(
    name="tools",
    data=DataDefaults(
        dataset_name="data/sample_tools.jsonl",
        dataset_config=None,
        train_split="train",
        test_split="test",
        prompt_column="question",
        answer_column="answer",
    ),
    user_message=plain_user_message,
    ideal_completion=ideal_completion,
    columns=columns,
    reward_settings=reward_settings,
    validate=validate,
    row_fields=row_fields,
    environments=environments,
    example_rollout=example_rollout,
    # Room for a tool call, its result and an answer; the sample rows alternate environments and
    # are taken in order, so the two smoke steps run one of each.
    smoke={"max_completion_length": 256, "shuffle_dataset": False},
    metrics=(("success", "tool_answer_correctness"), ("tool_format", "tool_call_format")),
)
