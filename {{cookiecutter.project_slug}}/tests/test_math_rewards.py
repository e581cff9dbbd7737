"""Math correctness on real GSM8K rows and on MATH-style LaTeX answers."""

import json
from pathlib import Path

import pytest

from {{ cookiecutter.package_name }}.rewards import REGISTRY
from {{ cookiecutter.package_name }}.rewards.math_rewards import gold_text

ROOT = Path(__file__).resolve().parents[1]


def gsm8k_rows() -> list[dict]:
    """Real GSM8K test rows shipped as the sample data."""
    path = ROOT / "data" / "sample_math.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def correctness(completion: str, answer: str):
    return REGISTRY["math_correctness"]([completion], answer=[answer])[0]


def test_gold_text_reads_the_number_after_hashes():
    assert gold_text("She sells 9 eggs.\n#### 18") == "18"
    assert gold_text("#### 1,234") == "1,234"
    assert gold_text("\\frac{1}{2}") == "\\frac{1}{2}"


def test_every_gsm8k_gold_answer_as_boxed_gets_full_credit_and_a_wrong_number_none():
    rows = gsm8k_rows()
    assert len(rows) >= 32
    for row in rows:
        gold = gold_text(row["answer"])
        number = float(gold.replace(",", ""))
        assert correctness("\\boxed{" + gold + "}", row["answer"]) == 1.0, gold
        wrong = number + 1
        wrong_text = str(int(wrong)) if wrong.is_integer() else str(wrong)
        assert correctness("\\boxed{" + wrong_text + "}", row["answer"]) == 0.0, gold


@pytest.mark.parametrize(
    ("completion", "answer", "expected"),
    [
        ("<think>9*2</think><answer>18</answer>", "#### 18", 1.0),
        ("<think>..</think><answer>$18</answer>", "#### 18", 1.0),
        ("<think>..</think><answer>1,234</answer>", "#### 1,234", 1.0),
        ("The answer is 70,000.", "#### 70000", 1.0),
        ("<answer>17</answer>", "#### 18", 0.0),
        ("<answer>\\frac{2}{4}</answer>", "\\frac{1}{2}", 1.0),
        ("<answer>0.5</answer>", "\\frac{1}{2}", 1.0),
        ("\\boxed{\\sqrt{2}}", "\\sqrt{2}", 1.0),
        ("<answer>no idea</answer>", "#### 18", 0.0),
        ("", "#### 18", 0.0),
        ("<answer>18</answer> then <answer>19</answer>", "#### 18", 0.0),
    ],
)
def test_math_correctness_golden(completion, answer, expected):
    assert correctness(completion, answer) == expected


def test_unparseable_gold_is_not_applicable():
    assert correctness("<answer>1</answer>", "#### ") is None
