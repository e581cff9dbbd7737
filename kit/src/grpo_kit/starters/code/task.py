"""The code task: Python problems checked by running unit tests (MBPP- or HumanEval-style).
Yours to edit.

How a data row becomes the prompt (`user_message`), the tests the rewards run (`gold`, and the
hidden `extra_tests` of `row_fields`), what a perfect completion looks like
(`ideal_completion`), and the rewards with the weights they train with, the system prompt and
the default data.

task.py is the one home of the task's defaults: the rewards and their weights, the system
prompt and the default data mapping. configs/grpo.yaml does not restate them (`grpo recipe
--explain` shows where each value of a run comes from); your own data goes in
configs/local.yaml, whose data keys override the defaults here.

The tests a completion is graded on are never all in its prompt: a policy that can read the
tests it is graded on learns to answer them from a lookup table (GRPO reinforces that as soon as
it stumbles on it), and such a program fails every input it has not seen.
- MBPP rows: the prompt shows SHOWN_TESTS of the row's `test_list` (the first: it names the
  function and shows its arguments); `code_correctness` grades on all of `test_list` plus the
  row's `challenge_test_list` (MBPP's harder hidden tests, in the `full` config; rows and data
  without that column are graded on `test_list`). With 3 tests a row, a program that only
  knows the shown example passes 1 of 3.
- HumanEval-style rows: the prompt is the stub (signature and docstring, with its examples);
  the grade is the row's hidden `test` code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from grpo_kit.rewards import formats
from grpo_kit.sandbox import SandboxArguments, sandbox_limits
from grpo_kit.task import DataDefaults, Reward, Task, message_text, think_answer
from grpo_kit.verify import code

from . import rewards


@dataclass
class TaskArguments(SandboxArguments):
    """Recipe fields of the code task: the sandbox (`sandbox_*`) and the optional columns."""

    solution_column: str | None = field(
        default="code", metadata={"help": "reference solution (ideal completions only)"}
    )
    setup_column: str | None = field(
        default="test_setup_code", metadata={"help": "code run before the tests; null if none"}
    )
    entry_point_column: str | None = field(
        default=None, metadata={"help": "HumanEval: column naming the checked function"}
    )
    stub_column: str | None = field(
        default=None, metadata={"help": "HumanEval: `prompt`, the code the solution completes"}
    )
    challenge_tests_column: str | None = field(
        default="challenge_test_list",
        metadata={"help": "MBPP: hidden tests graded beside test_list (used where present)"},
    )


# Tests of an MBPP row's list shown in its prompt as examples (the grade uses all of them).
SHOWN_TESTS = 1


def user_message(row: dict, prompt_column: str, answer_column: str, task_args) -> str:
    """MBPP: the problem plus SHOWN_TESTS example test(s) (they name the function and its
    arguments). HumanEval: the stub."""
    text = message_text(row[prompt_column])
    tests = row.get(answer_column)
    if isinstance(tests, list) and tests:
        shown = "\n".join(str(t) for t in tests[:SHOWN_TESTS])
        return (
            f"{text}\n\nYour code is tested on hidden tests; it should pass this example "
            f"test:\n{shown}"
        )
    return f"Complete this Python function:\n```python\n{text}\n```"


def gold(value) -> str:
    """Tests as text: a JSON list of asserts, or HumanEval test code as is."""
    return json.dumps(list(value)) if isinstance(value, list) else str(value)


def ideal_completion(row: dict, task_args) -> str:
    """The reference solution in a code block; with a stub (HumanEval), stub + solution body."""
    column = task_args.solution_column
    solution = str(row.get(column) or "") if column else ""
    stub = row.get("stub")
    if stub is None and task_args.stub_column:
        stub = row.get(task_args.stub_column)
    program = (stub if isinstance(stub, str) else "") + solution
    return think_answer("Write the function the tests call.", f"```python\n{program}\n```")


def row_fields(row: dict, task_args) -> dict:
    """Every row's hidden `extra_tests` (a JSON list): its challenge tests, where the data has
    them."""
    column = task_args.challenge_tests_column
    value = row.get(column) if column else None
    return {"extra_tests": json.dumps(code.extra_tests(value))}


def columns(task_args) -> dict[str, str]:
    """The extra columns the rewards read: {name they see: recipe field naming the column}."""
    wanted = {"setup": "setup_column", "entry_point": "entry_point_column", "stub": "stub_column"}
    return {name: field for name, field in wanted.items() if getattr(task_args, field)}


def reward_settings(task_args) -> dict:
    """The sandbox, checked now: without its isolation the run stops before any model loads."""
    return {"limits": sandbox_limits(task_args)}


def validate(rows, source: str, task_args, answer_column: str) -> None:
    """Every row's tests (challenge tests included) can be judged, and its setup code and stub
    compile."""
    code_columns = (task_args.setup_column, task_args.stub_column)
    code.check_rows(
        rows, source, answer_column, gold, task_args.entry_point_column, code_columns,
        task_args.challenge_tests_column,
    )  # fmt: skip


TASK = Task(
    name="code",
    data=DataDefaults(
        dataset_name="google-research-datasets/mbpp",
        dataset_config="full",
        train_split="train",
        test_split="test",
        prompt_column="text",
        answer_column="test_list",
        sample="data/sample_code.jsonl",
    ),
    system_prompt=(
        f"You write Python. {formats.FORMAT_INSTRUCTIONS} The answer is one ```python code "
        "block that defines the function the tests call, without tests or example usage."
    ),
    rewards=(
        Reward(
            rewards.code_correctness,
            2.0,
            "fraction of the row's tests passed in the sandbox, hidden ones included",
            "correctness",
        ),
        Reward(rewards.code_block_format, 0.5, "1 for exactly one ```python block in the answer"),
        Reward(rewards.partial_format, 0.5, formats.PARTIAL_WHY),
        Reward(rewards.soft_overlong, 0.5, formats.OVERLONG_WHY, "length"),
    ),
    user_message=user_message,
    ideal_completion=ideal_completion,
    arguments=TaskArguments,
    gold=gold,
    columns=columns,
    reward_settings=reward_settings,
    validate=validate,
    row_fields=row_fields,
    metrics=(("pass_rate", rewards.code_correctness),),
    example_prompt="Write a function to return the largest of three numbers.",
)
