"""Your code rewards on golden completions (MBPP- and HumanEval-style tests). The sandbox that
runs the programs, and its judge, are grpo_kit's (tested there under every isolation level).
Change these cases with the rewards."""

import json

import pytest
from grpo_kit import sandbox
from grpo_kit.rewards import bind

from {{ cookiecutter.package_name }} import rewards
from {{ cookiecutter.package_name }}.task import TASK, TaskArguments

TESTS = json.dumps(["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 5) == 5"])


def answer(code: str) -> str:
    return f"<think>add them</think>\n<answer>\n```python\n{code}\n```\n</answer>"


@pytest.fixture(scope="module")
def correctness():
    return bind(rewards.code_correctness, {"limits": sandbox.Limits(timeout=10.0, workers=1)})


def score(func, completion: str, tests: str = TESTS, **columns):
    return func([completion], answer=[tests], **{k: [v] for k, v in columns.items()})[0]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (answer("def add(a, b):\n    return a + b"), 1.0),
        (answer("def add(a, b):\n    return a + b if a < 2 else 0"), pytest.approx(2 / 3)),
        (answer("def add(a, b):\n    return a - b"), 0.0),
        (answer("def add(a, b) return"), 0.0),  # syntax error
        ("def add(a, b):\n    return a + b", 0.0),  # no code block
        (answer("import sys\nsys.exit(0)"), 0.0),  # exiting early passes nothing
    ],
)
def test_code_correctness(correctness, completion, expected):
    assert score(correctness, completion) == expected


def test_the_prompt_shows_one_example_and_the_grade_uses_hidden_tests(correctness):
    """A policy that could read every graded test would learn to answer them from a table:
    the prompt shows one example, the grade counts all of test_list and the hidden ones."""
    row = {"text": "Add two numbers.", "test_list": json.loads(TESTS)}
    message = TASK.user_message(row, "text", "test_list", TaskArguments())
    assert "assert add(1, 2) == 3" in message and "assert add(2, 2) == 4" not in message
    hidden = json.dumps(["assert add(-1, 1) == 0"])
    absolute = answer("def add(a, b):\n    return abs(a) + b")
    assert score(correctness, absolute, TESTS, extra_tests=hidden) == 0.75


def test_humaneval_style_check_function(correctness):
    tests = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
    good, bad = answer("def square(x):\n    return x * x"), answer("def square(x):\n    return 0")
    assert score(correctness, good, tests, entry_point="square") == 1.0
    assert score(correctness, bad, tests, entry_point="square") == 0.0


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (answer("x = 1"), 1.0),
        ("<answer>```python\nx = 1\n``` and text</answer>", 0.5),
        ("<answer>```python\nx = 1\n```\n```python\ny = 2\n```</answer>", 0.0),
        ("```python\nx = 1\n```", 0.0),  # not in an answer block
    ],
)
def test_code_block_format(completion, expected):
    assert rewards.code_block_format([completion])[0] == expected
