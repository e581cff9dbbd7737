"""Your math rewards on golden cases: real GSM8K rows, MATH-style LaTeX answers, and answers that
try to earn credit they do not deserve. (How answers are read is grpo_kit.verify.math, tested in
the kit against Math-Verify's own tables; these cases check the rewards as this project has them.)
Change them with the rewards."""

import json
from pathlib import Path

import pytest
from grpo_kit.rewards import call_like_trl

from {{ cookiecutter.package_name }} import rewards
from {{ cookiecutter.package_name }}.task import TASK

ROOT = Path(__file__).resolve().parents[1]


def score(func, completion, answer: str = "#### 18", **columns):
    return call_like_trl(func, [completion], [{"answer": answer, **columns}])[0]


def answered(answer: str) -> str:
    return f"<think>Work it out.</think>\n<answer>{answer}</answer>"


def test_every_sample_gold_answer_gets_full_credit_and_a_wrong_number_none():
    lines = (ROOT / TASK.data.sample).read_text(encoding="utf-8").splitlines()
    for row in [json.loads(line) for line in lines if line.strip()]:
        ideal = TASK.ideal_completion(row, None)
        assert score(rewards.math_correctness, ideal, row["answer"]) == 1.0
        wrong = answered(str(float(row["answer"].rsplit("####", 1)[1].replace(",", "")) + 1))
        assert score(rewards.math_correctness, wrong, row["answer"]) == 0.0


@pytest.mark.parametrize(
    ("completion", "answer", "expected"),
    [
        ("<think>9*2</think><answer>18</answer>", "#### 18", 1.0),
        ("<think>..</think><answer>$18</answer>", "#### 18", 1.0),
        ("<think>..</think><answer>1,234</answer>", "#### 1,234", 1.0),
        ("The answer is 70,000.", "#### 70000", 1.0),
        ("He pays $5 an hour, so $40 in all.", "#### 40", 0.0),  # not marked as the answer
        ("<answer>\\frac{2}{4}</answer>", "\\frac{1}{2}", 1.0),
        ("<answer>(2, 3)</answer>", "\\left( 2, 3 \\right)", 1.0),
        ("<answer>17</answer>", "#### 18", 0.0),
        ("<answer>The answer is 18</answer>", "#### 18", 0.0),  # only the answer in the block
        ("<answer>2^{10}</answer>", "2", 0.0),  # no leading number read off an expression
        ("<think>it is \\boxed{18}</think> no idea", "#### 18", 0.0),  # reasoning is not it
        ("<think><answer>18</answer></think> The answer is 19", "#### 18", 0.0),  # nor in it
        ("<answer>18%</answer>", "#### 18", 1.0),  # a percent in the gold's own scale
        ("<answer>18%</answer>", "0.18", 0.0),  # never in another
        ("<answer>19 = 18</answer>", "#### 18", 0.0),  # a relation: each side must be the answer
        ("<answer>x = 18</answer>", "#### 18", 1.0),  # an assignment
        ("<answer>42</answer>", "forty two", None),  # a gold answer in words does not apply
    ],
)
def test_math_correctness(completion, answer, expected):
    assert score(rewards.math_correctness, completion, answer) == expected


@pytest.mark.parametrize(
    ("completion", "strict", "partial"),
    [
        ("<think>steps</think><answer>42</answer>", 1.0, 1.0),
        ("steps</think>\n<answer>42</answer>", 1.0, 1.0),  # <think> prefilled by the template
        ("<answer>42</answer>", 0.0, 0.5),
        ("<think>steps</think><answer>42</answer> and more", 0.0, 0.992),
        ("no tags", 0.0, 0.0),
    ],
)
def test_format_rewards(completion, strict, partial):
    assert score(rewards.strict_format, completion) == strict
    assert score(rewards.partial_format, completion) == pytest.approx(partial)
