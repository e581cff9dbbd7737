"""Your rewards on golden completions. EDIT HERE with your rewards: a few completions each must
score as you mean them to (`make reward-debug` shows them on your data)."""

import pytest

from {{ cookiecutter.package_name }} import rewards


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>x</think><answer>Paris</answer>", 1.0),
        ("<answer> **paris**. </answer>", 1.0),  # case, spacing and emphasis ignored
        ("<answer>Lyon</answer>", 0.0),
        ("Paris", 0.0),  # no answer block
        ("<think><answer>Paris</answer></think> Lyon", 0.0),  # an answer in the reasoning
    ],
)
def test_exact_answer(completion, expected):
    assert rewards.exact_answer([completion], answer=["Paris"])[0] == expected
