"""Your classification rewards on golden completions, built from YOUR labels: the recipe's
`labels` (configs/local.yaml once you name your data; the sample's until then), read as
training reads them. Labels compare with grpo_kit's normalise_label (case, spacing, quotes and
emphasis around the label ignored). Change these cases with the rewards."""

import pytest
from grpo_kit.rewards import bind

from {{ cookiecutter.package_name }} import rewards

# {a}: the gold label (your first), {b}: another of yours (your second).
CASES = [
    ("<answer>{a}</answer>", 1.0, 1.0, 1.0),
    ("<think>a reason</think>\n<answer> **{a_lower}** </answer>", 1.0, 1.0, 1.0),
    ("<answer>{b}</answer>", 0.0, 1.0, 1.0),  # another of the labels
    ("<answer>{a}-ish</answer>", 0.0, 0.0, 1.0),  # a different label
    ("<answer>{a}</answer> done", 1.0, 1.0, 0.5),
    ("{a}", 0.0, 0.0, 0.0),  # no answer tag
    ("<think><answer>{a}</answer></think> {b}", 0.0, 0.0, 0.5),  # reasoning: not it
]


@pytest.fixture(scope="session")
def labels(checks):
    labels = list(checks.recipe.task.labels)
    if len(labels) < 2:
        pytest.skip("the golden cases need two labels")
    return labels


def score(checks, func, completion, **columns):
    settings = checks.recipe.reward_settings()
    return bind(func, settings)([completion], **{k: [v] for k, v in columns.items()})[0]


@pytest.mark.parametrize(("template", "correct", "in_set", "layout"), CASES)
def test_label_rewards(checks, labels, template, correct, in_set, layout):
    gold, other = labels[0], labels[1]
    completion = template.format(a=gold, a_lower=gold.lower(), b=other)
    assert score(checks, rewards.label_correctness, completion, answer=gold) == correct
    assert score(checks, rewards.label_in_set, completion) == in_set
    assert score(checks, rewards.answer_tag_format, completion) == layout
