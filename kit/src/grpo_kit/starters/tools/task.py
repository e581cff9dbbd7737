"""The tools task: an agent solves problems by calling tools over several turns (TRL's
`environment_factory`). Yours to edit.

Each row names its environment (`environment` column: `python` runs code in the kit's sandbox,
`lookup` searches the local knowledge base; add yours to ENVIRONMENTS below). TRL renders the
environment's tools into the prompt, parses the model's tool calls, runs them on a fresh
environment per rollout, appends the results and lets the model go on, up to
`max_tool_calling_iterations` turns; the rewards then read the whole exchange.

task.py is the one home of the task's defaults: the rewards and their weights, the system
prompt and the default data mapping. configs/grpo.yaml does not restate them (`grpo recipe
--explain` shows where each value of a run comes from); your own data goes in
configs/local.yaml, whose data keys override the defaults here.

Tool calls take time the training step waits for: the calls of one turn share
`tool_turn_seconds`, those of one rollout `tool_rollout_seconds` and those of one step
`tool_step_seconds` (recipe fields, from the kit's ToolArguments); a call made once its time is
spent is not run, its result is an error
(which `tool_call_errors` costs), and the TRL metric `tools/budget_cuts` counts such calls.
A turn's `run_python` calls run together, spread over the sandbox's workers.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

from grpo_kit.environments import (
    LookupEnvironment,
    PythonEnvironment,
    ToolArguments,
    factories,
    scripted_rollout,
    tool_calls,
    tool_settings,
)
from grpo_kit.errors import DataError, UserError
from grpo_kit.task import DataDefaults, Reward, Task, plain_user_message
from grpo_kit.verify.math import gold_text

from . import rewards

# ---- EDIT HERE: your own tools ----------------------------------------------------------------
# An environment is a class whose constructor takes `ToolSettings`, with `reset(self, **row)` and
# public methods: its tools (type hints and a Google-style docstring with `Args:` and `Returns:`;
# the model sees them as the tool's schema). See grpo_kit/environments/python_env.py. Register it
# here under a name, and put that name in the `environment` column of the rows that use it.
ENVIRONMENTS: dict[str, type] = {
    "python": PythonEnvironment,
    "lookup": LookupEnvironment,
}
# One call per environment that the tiny offline model is taught to make (smoke runs and the
# learning test: a random model never writes a well-formed call by itself).
EXAMPLE_CALLS = {
    "python": {"name": "run_python", "arguments": {"code": "print(6 * 7)"}},
    "lookup": {"name": "search", "arguments": {"query": "harbour festival"}},
}
# ---- end of EDIT HERE -------------------------------------------------------------------------
FINAL_ANSWER = "<answer>{}</answer>"  # the final turn's layout (the system prompt asks for it)


@dataclass
class TaskArguments(ToolArguments):
    """Recipe fields of the tools task: the rows' columns, the cost of a call, and the
    environments' settings (ToolArguments: the knowledge base, the tools' time budget
    `tool_turn_seconds` / `tool_rollout_seconds`, the sandbox's `sandbox_*`)."""

    environment_column: str | None = field(
        default="environment", metadata={"help": "each row's environment; null: default"}
    )
    default_environment: str = field(
        default="python", metadata={"help": "for rows without one: python or lookup"}
    )
    ideal_calls_column: str | None = field(
        default="ideal_calls", metadata={"help": "tool calls of an ideal rollout (debug)"}
    )
    tool_call_cost: float = field(
        default=0.1, metadata={"help": "reward cost of each call past free_tool_calls"}
    )
    free_tool_calls: int = field(
        default=2, metadata={"help": "calls an answer may need at no cost"}
    )


def environments(task_args) -> dict:
    """{name: factory} of every environment, for `GRPOTrainer(environment_factory=)` (TRL's
    dict form: each row's `environment` field picks one). Made once per set of recipe values, so
    the environments of one run share one sandbox pool and one search index."""
    return _environments(tuple(sorted(dataclasses.asdict(task_args).items(), key=str)))


@functools.lru_cache(maxsize=4)
def _environments(values: tuple) -> dict:
    return factories(tool_settings(TaskArguments(**dict(values))), ENVIRONMENTS)


def row_fields(row: dict, task_args) -> dict:
    """Every row's `environment`: its column's value, or the default without a column."""
    column = task_args.environment_column
    name = row.get(column) if column else None
    return {"environment": str(name).strip() if name else task_args.default_environment}


def rollout(row: dict, task_args, calls: list[dict]) -> list[dict]:
    """An agent that makes `calls` (each really executed) and then writes the gold answer."""
    name = row.get("environment") or row_fields(row, task_args)["environment"]
    environment = environments(task_args)[name]()
    return scripted_rollout(environment, row, calls, FINAL_ANSWER.format(gold_text(row["answer"])))


def ideal_completion(row: dict, task_args) -> list[dict]:
    """The rollout an ideal agent writes: the row's `ideal_calls`, then the gold answer."""
    return rollout(row, task_args, tool_calls(row.get("ideal_calls") or []))


def example_rollout(row: dict, task_args, call: bool) -> list[dict]:
    """What the tiny model is taught for a row: its environment's example call (when `call`
    and the environment has one), then the gold answer."""
    example = EXAMPLE_CALLS.get(row.get("environment", ""))
    return rollout(row, task_args, tool_calls([example]) if call and example else [])


def columns(task_args) -> dict[str, str]:
    """The extra columns the rewards read: {name they see: recipe field naming the column}."""
    wanted = {"environment": "environment_column", "ideal_calls": "ideal_calls_column"}
    return {name: field for name, field in wanted.items() if getattr(task_args, field)}


def reward_settings(task_args) -> dict:
    """The cost of a call, checked."""
    if task_args.tool_call_cost < 0 or task_args.free_tool_calls < 0:
        raise UserError("tool_call_cost and free_tool_calls must be 0 or more")
    return {
        "tool_call_cost": task_args.tool_call_cost,
        "free_tool_calls": task_args.free_tool_calls,
    }


def validate(rows, source: str, task_args, answer_column: str) -> None:
    """Every row names a registered environment, and its ideal calls (if any) are well formed."""
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
                f"not an environment; use one of: {known} (or register yours in ENVIRONMENTS in "
                "task.py)"
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
        sample="data/sample_tools.jsonl",
    ),
    system_prompt=(
        "You solve problems with tools. Call a tool whenever it helps instead of guessing: "
        "run_python to compute, search and open to look facts up in the knowledge base. When "
        "you know the answer, write only the final answer inside <answer> </answer> tags (a "
        "number, a short phrase, or SUPPORTED, REFUTED or NOT ENOUGH INFO for a claim)."
    ),
    rewards=(
        Reward(
            rewards.tool_answer_correctness,
            2.0,
            "1 if the final answer equals the gold answer (math-verify for python rows)",
            "correctness",
        ),
        Reward(
            rewards.tool_call_format, 0.5, "0.5 for a well-formed tool call, 0.5 for a final answer"
        ),
        Reward(rewards.tool_call_errors, 0.5, "minus the share of tool calls that failed"),
        Reward(
            rewards.tool_call_cost, 0.5, "-tool_call_cost per call past free_tool_calls", "length"
        ),
    ),
    user_message=plain_user_message,
    ideal_completion=ideal_completion,
    arguments=TaskArguments,
    columns=columns,
    reward_settings=reward_settings,
    validate=validate,
    row_fields=row_fields,
    environments=environments,
    example_rollout=example_rollout,
    example_calls=EXAMPLE_CALLS,
    # Room for a tool call, its result and an answer; the sample rows alternate environments and
    # are taken in order, so the two smoke steps run one of each.
    smoke={"max_completion_length": 256, "shuffle_dataset": False},
    metrics=(
        ("success", rewards.tool_answer_correctness),
        ("tool_format", rewards.tool_call_format),
    ),
    example_prompt="A box holds 12 eggs. How many eggs are in 17 boxes?",
)
