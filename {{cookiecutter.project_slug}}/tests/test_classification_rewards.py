"""Your classification rewards on golden completions. Labels compare with grpo_kit's
normalise_label (case, spacing, quotes and emphasis around the label ignored). Change these
cases with the rewards."""

import pytest
from grpo_kit.rewards import bind

from {{ cookiecutter.package_name }} import rewards
from {{ cookiecutter.package_name }}.task import TASK, TaskArguments

SETTINGS = TASK.reward_settings(TaskArguments(labels=["World", "Sports", "Business", "Sci/Tech"]))


def score(func, completion, **columns):
    return bind(func, SETTINGS)([completion], **{k: [v] for k, v in columns.items()})[0]


@pytest.mark.parametrize(
    ("completion", "correct", "in_set", "layout"),
    [
        ("<answer>Sports</answer>", 1.0, 1.0, 1.0),
        ("<think>a match</think>\n<answer> **sports** </answer>", 1.0, 1.0, 1.0),
        ("<answer>World</answer>", 0.0, 1.0, 1.0),
        ("<answer>Sports-ish</answer>", 0.0, 0.0, 1.0),  # a different label
        ("<answer>Sports</answer> done", 1.0, 1.0, 0.5),
        ("Sports", 0.0, 0.0, 0.0),  # no answer tag
        ("<think><answer>Sports</answer></think> World", 0.0, 0.0, 0.5),  # reasoning: not it
    ],
)
def test_label_rewards(completion, correct, in_set, layout):
    assert score(rewards.label_correctness, completion, answer="Sports") == correct
    assert score(rewards.label_in_set, completion) == in_set
    assert score(rewards.answer_tag_format, completion) == layout
