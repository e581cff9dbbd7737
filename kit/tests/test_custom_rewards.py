"""The custom task's example reward (a project edits it alongside its rewards.py)."""

import pytest
from grpo_kit.starters.custom.rewards import exact_answer
from grpo_kit.starters.custom.task import TASK


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>recall</think><answer>Paris</answer>", 1.0),
        ("<answer> paris. </answer>", 1.0),
        ("<answer>**Paris**</answer>", 1.0),
        ('<answer>"Paris".</answer>', 1.0),
        ("<answer>\uff30\uff41\uff52\uff49\uff53</answer>", 1.0),  # full-width letters
        ("<answer>Lyon</answer>", 0.0),
        ("<answer>Paris, Texas</answer>", 0.0),
        ("<answer>not Paris</answer>", 0.0),
        ("Paris", 0.0),
        # An answer inside the reasoning is reasoning: only what follows the last </think> counts.
        ("<think><answer>Paris</answer></think><answer>Lyon</answer>", 0.0),
        ("<think><answer>Paris</answer></think> Lyon", 0.0),
        ("<think><answer>Lyon</answer></think><answer>Paris</answer>", 1.0),
    ],
)
def test_exact_answer(completion, expected):
    assert TASK.reward_table["exact_answer"] is exact_answer
    assert exact_answer([completion], answer=["Paris"])[0] == expected
