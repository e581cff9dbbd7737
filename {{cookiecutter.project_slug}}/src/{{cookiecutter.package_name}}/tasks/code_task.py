"""Python programming problems checked by running unit tests (MBPP- or HumanEval-style)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .. import sandbox
from ..sandbox.arguments import SandboxArguments, sandbox_limits
from .base import DataDefaults, Task, message_text, think_answer


@dataclass
class TaskArguments(SandboxArguments):
    """Recipe fields of the code task: the sandbox (`sandbox_*`) and the optional dataset
    columns."""

    solution_column: str | None = "code"  # reference solution, for ideal completions only
    setup_column: str | None = "test_setup_code"  # code run before the program (MBPP)
    entry_point_column: str | None = None  # HumanEval: the function `check()` receives
    stub_column: str | None = None  # HumanEval: `prompt`, the code the solution completes


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


def _stub(row: dict, task_args) -> str:
    """The stub of a row: under the name rewards read, or its source column (raw rows)."""
    value = row.get("stub")
    if value is None and task_args.stub_column:
        value = row.get(task_args.stub_column)
    return value if isinstance(value, str) else ""


def ideal_completion(row: dict, task_args) -> str:
    """The reference solution in a code block; with a stub (HumanEval), stub + solution body."""
    column = task_args.solution_column
    solution = str(row.get(column) or "") if column else ""
    program = _stub(row, task_args) + solution
    return think_answer("Write the function the tests call.", f"```python\n{program}\n```")


def columns(task_args) -> dict[str, str]:
    wanted = {"setup": "setup_column", "entry_point": "entry_point_column", "stub": "stub_column"}
    return {name: field for name, field in wanted.items() if getattr(task_args, field)}


def reward_settings(task_args) -> dict:
    """The sandbox, checked now (see `sandbox_limits`)."""
    return {"limits": sandbox_limits(task_args)}


def _compiles(code: str) -> str | None:
    try:
        compile(code, "<data>", "exec")
    except (SyntaxError, ValueError) as err:
        return f"{type(err).__name__}: {getattr(err, 'msg', err)}"
    return None


def validate(rows, source: str, task_args, answer_column: str) -> None:
    """Every row's tests can be judged: at least one test, each valid Python with an `assert`
    (a bare `42` or `None` line would pass without checking anything), HumanEval `check()`
    code with an entry point, setup code and stubs that compile."""
    from ..errors import DataError
    from ..rewards.code_rewards import parse_tests

    entry_column = task_args.entry_point_column
    entry_points = list(rows[entry_column]) if entry_column else None
    extra = {c: list(rows[c]) for c in (task_args.setup_column, task_args.stub_column) if c}
    for index, value in enumerate(rows[answer_column]):
        where = f"{source} row {index + 1}: column '{answer_column}'"
        entry_point = entry_points[index] if entry_points is not None else None
        text = gold(value)
        if "def check(" in text and not text.lstrip().startswith("[") and not entry_point:
            raise DataError(
                f"{where} holds HumanEval-style check(candidate) code, but no entry point: "
                "set entry_point_column (HumanEval: entry_point)"
            )
        if entry_point is not None and not str(entry_point).isidentifier():
            raise DataError(
                f"{source} row {index + 1}: column '{task_args.entry_point_column}' is "
                f"{entry_point!r}, not a Python name"
            )
        tests = parse_tests(text, entry_point)
        if not tests:
            raise DataError(f"{where} holds no tests")
        for number, test in enumerate(tests, start=1):
            problem = sandbox.test_problem(test, [entry_point] if entry_point else [])
            if problem:
                raise DataError(f"{where}, test {number} {problem}: {test[:120]!r}")
        for column, values in extra.items():
            problem = _compiles(str(values[index] or ""))
            if problem:
                raise DataError(
                    f"{source} row {index + 1}: column '{column}' is not valid Python ({problem})"
                )


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
    validate=validate,
    metrics=(("pass_rate", "code_correctness"),),
)
