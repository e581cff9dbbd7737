"""Python programming problems checked by running unit tests (MBPP- or HumanEval-style)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .. import sandbox
from . import DataDefaults, Task, message_text, think_answer


@dataclass
class TaskArguments:
    """Recipe fields of the code task: sandbox limits and optional dataset columns."""

    sandbox_workers: int = 2  # programs run in parallel per reward call
    sandbox_timeout: float = 5.0  # wall-clock seconds per program (all its tests)
    sandbox_memory_mb: int = 512  # address-space limit per program
    solution_column: str | None = "code"  # reference solution, for ideal completions only
    setup_column: str | None = "test_setup_code"  # code run before the tests (MBPP)
    entry_point_column: str | None = None  # HumanEval: the function `check()` receives


def user_message(row: dict, prompt_column: str, answer_column: str, task_args) -> str:
    """MBPP: the problem plus the tests to pass (they name the function). HumanEval: the stub."""
    text = message_text(row[prompt_column])
    tests = row.get(answer_column)
    if isinstance(tests, list) and tests:
        listing = "\n".join(str(t) for t in tests)
        return f"{text}\n\nYour code should pass these tests:\n{listing}"
    return f"Complete this Python function:\n```python\n{text}\n```"


def gold(value) -> str:
    """Tests as text: a JSON list of asserts, or HumanEval test code as is."""
    return json.dumps(list(value)) if isinstance(value, list) else str(value)


def ideal_completion(row: dict, task_args) -> str:
    column = task_args.solution_column
    solution = str(row.get(column) or "") if column else ""
    return think_answer("Write the function the tests call.", f"```python\n{solution}\n```")


def columns(task_args) -> dict[str, str]:
    wanted = {"setup": "setup_column", "entry_point": "entry_point_column"}
    return {name: field for name, field in wanted.items() if getattr(task_args, field)}


def reward_settings(task_args) -> dict:
    limits = sandbox.Limits(
        timeout=task_args.sandbox_timeout,
        memory_mb=task_args.sandbox_memory_mb,
        workers=task_args.sandbox_workers,
    )
    return {"limits": limits}


TASK = Task(
    name="code",
    data=DataDefaults(
        dataset_name="google-research-datasets/mbpp",
        dataset_config="full",
        train_split="train",
        test_split="test",
        prompt_column="text",
        answer_column="test_list",
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    gold=gold,
    columns=columns,
    reward_settings=reward_settings,
    metrics=(("pass_rate", "code_correctness"),),
)
