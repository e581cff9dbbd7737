"""Your procedural task on golden cases: for each generator in task.py's PROBLEMS, its reference
answers score 1 through `procedural_correctness` (the generator's own scorer) and wrong ones 0;
and the held-out problems `make evaluate` scores are none of the training ones. Change them with
the task."""

import json

import pytest
from grpo_kit.rewards import call_like_trl

from {{ cookiecutter.package_name }} import rewards
from {{ cookiecutter.package_name }}.task import PROBLEMS, TASK

pytest.importorskip("reasoning_gym", reason="make install installs grpo-kit[procedural]")


@pytest.fixture(scope="module")
def train_rows():
    return PROBLEMS.rows("train")


def score(completions: list[str], rows: list[dict]) -> list:
    return call_like_trl(rewards.procedural_correctness, completions, rows)


def wrong(gold: str) -> str:
    """An answer that is not the gold and does not contain it (some scorers give partial
    credit to an answer containing the reference)."""
    try:
        return str(int(gold) + 1)
    except ValueError:
        return "nothing"


@pytest.mark.parametrize("generator", [g.name for g in PROBLEMS.generators])
def test_reference_answers_score_one_and_wrong_ones_zero(generator, train_rows):
    rows = [row for row in train_rows if row["generator"] == generator][:20]
    assert rows, f"{generator} made none of the training problems"
    ideal = [TASK.ideal_completion(row, None) for row in rows]
    assert score(ideal, rows) == [1.0] * len(rows)
    guesses = [f"<think>A guess.</think>\n<answer>{wrong(r['answer'])}</answer>" for r in rows]
    assert score(guesses, rows) == [0.0] * len(rows)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>7 + 5 = 12</think>\n<answer>12</answer>", 1.0),
        ("<answer> 12 </answer>", 1.0),
        ("<answer>13</answer>", 0.0),
        ("12", 0.0),  # no answer block
        ("<think><answer>12</answer></think> 13", 0.0),  # an answer in the reasoning
    ],
)
def test_procedural_correctness(completion, expected):
    entry = {"question": "Calculate 7 + 5.", "answer": "12", "metadata": {}}
    entry["metadata"]["source_dataset"] = "basic_arithmetic"  # its scorer reads the answer
    row = {"question": entry["question"], "answer": "12", "rg_entry": json.dumps(entry)}
    assert score([completion], [row]) == [expected]


def test_held_out_problems_are_not_training_problems(train_rows):
    """No held-out problem is a training problem: not the same question, nor the same
    `same_problem` fields (e.g. one expression in another wording)."""
    held = PROBLEMS.rows("test")
    assert len(held) == PROBLEMS.held_out

    def problems(rows: list[dict]) -> set:
        return {key for r in rows for key in PROBLEMS.problem_keys(json.loads(r["rg_entry"]))}

    assert not problems(train_rows) & problems(held)
