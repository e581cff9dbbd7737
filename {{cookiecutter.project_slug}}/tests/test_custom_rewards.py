"""The custom task's example reward. EDIT HERE alongside rewards/custom_rewards.py."""

import pytest

from {{ cookiecutter.package_name }}.rewards import REGISTRY


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>recall</think><answer>Paris</answer>", 1.0),
        ("<answer> paris. </answer>", 1.0),
        ("<answer>Lyon</answer>", 0.0),
        ("Paris", 0.0),
    ],
)
def test_exact_answer(completion, expected):
    assert REGISTRY["exact_answer"]([completion], answer=["Paris"])[0] == expected
