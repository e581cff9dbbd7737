"""Your judge task on golden cases: what the judge reads of a completion, the format reward, the
labelled completions `make reward-debug` measures agreement on, and the judge reward answering
through a real local server (`transformers serve` on a tiny random judge, as `make smoke`
serves it; its replies are noise, so this checks the plumbing, not judgement). Change them
with the task."""

import json
from pathlib import Path

import pytest
from grpo_kit.rewards import call_like_trl

from {{ cookiecutter.package_name }} import rewards
from {{ cookiecutter.package_name }}.task import TASK

LABELLED = Path("data/labelled_judge.jsonl")


@pytest.mark.parametrize(
    ("completion", "graded"),
    [
        ("<think>plan</think><answer>Air scatters blue.</answer>", "Air scatters blue."),
        ("<think>plan</think> Air scatters blue.", "Air scatters blue."),  # no block: the rest
        ("<think><answer>in the reasoning</answer></think>", ""),  # reasoning is not graded
    ],
)
def test_the_judge_reads_the_answer_not_the_reasoning(completion, graded):
    assert rewards.graded_text(completion) == graded


def test_the_labelled_completions_name_the_rewards_and_the_format_scores_are_exact():
    table = TASK.reward_table
    for line in map(json.loads, LABELLED.read_text(encoding="utf-8").splitlines()):
        assert set(line["reference"]) <= set(table), line["reference"]
        expected = line["reference"].get("strict_format")
        if expected is not None:
            [value] = call_like_trl(rewards.strict_format, [line["completion"]], [{}])
            assert value == expected, line["completion"]


@pytest.mark.slow
def test_the_judge_answers_through_a_real_local_server(checks):
    found = checks.judged_locally(["<think>a</think><answer>Air scatters blue.</answer>", "x"])
    scores, logged = found["rubric_grade"]
    assert all(s is None or 0.0 <= s <= 1.0 for s in scores)
    assert logged["rewards/rubric_grade/judge_requests"] == 2  # asked, for real
    assert logged["rewards/rubric_grade/judge_failures"] == 0  # and the server answered
