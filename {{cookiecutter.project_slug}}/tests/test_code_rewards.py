"""Code rewards on golden completions (MBPP- and HumanEval-style tests)."""

import json

import pytest

from {{ cookiecutter.package_name }}.rewards import REGISTRY, resolve
from {{ cookiecutter.package_name }}.rewards.code_rewards import code_blocks, parse_tests
from {{ cookiecutter.package_name }}.tasks import TASK, TaskArguments

TESTS = json.dumps(["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 5) == 5"])


def answer(code: str) -> str:
    return f"<think>add them</think>\n<answer>\n```python\n{code}\n```\n</answer>"


def code_correctness():
    return resolve(["code_correctness"], TASK.reward_settings(TaskArguments()))[0]


def correctness(completion: str, tests: str = TESTS, **columns):
    batch = {k: [v] for k, v in columns.items()}
    return code_correctness()([completion], answer=[tests], **batch)[0]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (answer("def add(a, b):\n    return a + b"), 1.0),
        (answer("def add(a, b):\n    return a + b if a < 2 else 0"), pytest.approx(2 / 3)),
        (answer("def add(a, b):\n    return a - b"), 0.0),
        (answer("def add(a, b) return"), 0.0),  # syntax error
        ("def add(a, b):\n    return a + b", 0.0),  # no code block
        ("```python\ndef add(a, b):\n    return a + b\n```", 1.0),  # no tags: still scored
        (answer("import sys\nsys.exit(0)"), 0.0),
    ],
)
def test_code_correctness(completion, expected):
    assert correctness(completion) == expected


def test_setup_code_runs_before_the_tests():
    tests = json.dumps(["assert add(1, 1) == OFFSET + 2"])
    code = answer("def add(a, b):\n    return a + b + OFFSET")
    assert correctness(code, tests, setup="OFFSET = 10") == 1.0
    assert correctness(code, tests) == 0.0


def test_humaneval_style_check_function():
    tests = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
    good = answer("def square(x):\n    return x * x")
    bad = answer("def square(x):\n    return x + x")
    assert correctness(good, tests, entry_point="square") == 1.0
    assert correctness(bad, tests, entry_point="square") == 0.0


def test_batch_is_scored_in_order():
    completions = [answer("def add(a, b):\n    return a + b"), "no code", answer("x = 1")]
    scores = code_correctness()(completions, answer=[TESTS] * 3)
    assert scores == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (answer("x = 1"), 1.0),
        ("<answer>```python\nx = 1\n``` and text</answer>", 0.5),
        ("<answer>```python\nx = 1\n```\n```python\ny = 2\n```</answer>", 0.0),
        ("```python\nx = 1\n```", 0.0),  # not in an answer block
        ("<answer>no code</answer>", 0.0),
    ],
)
def test_code_block_format(completion, expected):
    assert REGISTRY["code_block_format"]([completion])[0] == expected


def test_parse_tests_reads_lists_and_lines():
    assert parse_tests(TESTS) == json.loads(TESTS)
    assert parse_tests("assert f(1)\n\nassert f(2)") == ["assert f(1)", "assert f(2)"]
    assert code_blocks("<answer>```py\na\n```</answer>") == ["a\n"]
