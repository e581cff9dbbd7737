"""The judge task's rewards. Yours to edit: the task's `rewards` in task.py list which ones train
and their weights (the one place they are set).

`rubric_grade` is a judge model's grade of the `<answer>` block against `RUBRIC` below
(`grpo_kit.rewards.judge`): each criterion scored 0 to 10 by the judge, their weighted mean
placed in [0, 1]. The judge is any OpenAI-compatible server (vLLM on a GPU, `transformers serve`
on a laptop, a hosted API): its URL, model name and the environment variable holding its key
are task arguments (`judge_base_url`, `judge_model`, `judge_api_key_env` in
configs/local.yaml or on the command line), read when the reward is first called. A judgement
that fails (the server down, a reply that is not one `name: score` line per criterion, the
batch's time budget spent) is None for that completion: the row does not count. The judge reads
the answer block (`graded_text`), not the reasoning; a completion that addresses the grader (a
fake score line, "ignore the rubric", a turn marker) scores 0 unasked. EDIT HERE: the rubric's
criteria and weights, its graded examples, and the judge's options (workers, budget, ...).
"""

from __future__ import annotations

from grpo_kit.rewards.formats import soft_overlong, strict_format
from grpo_kit.rewards.judge import Criterion, Endpoint, Example, Judge, Rubric, judge_reward
from grpo_kit.verify.text import after_reasoning, extract_answer

__all__ = [
    "RUBRIC",
    "build_judge",
    "graded_text",
    "rubric_grade",
    "soft_overlong",
    "strict_format",
]

RUBRIC = Rubric(
    (
        Criterion("correct", "every fact and causal link in the explanation is right", 2.0),
        Criterion("complete", "it answers what the question asks, all of it, no more"),
        Criterion("clear", "short, plain words a curious teenager follows"),
    ),
    scale=(0, 10),
    task="short explanations of everyday science for a curious reader",
    # Two graded examples anchor the scale and show the reply's format (small judges need them).
    examples=(
        Example(
            "Why is grass green?",
            "Grass is green because it is full of water.",
            {"correct": 0, "complete": 3, "clear": 8},
        ),
        Example(
            "Why is grass green?",
            "Its leaves hold chlorophyll, which absorbs red and blue light for photosynthesis "
            "and reflects green light back to our eyes.",
            {"correct": 10, "complete": 10, "clear": 9},
        ),
    ),
)


def build_judge(judge_base_url: str, judge_model: str, judge_api_key_env: str) -> Judge:
    """The judge, from the recipe's task arguments (called on the reward's first use)."""
    endpoint = Endpoint(judge_base_url, judge_model, api_key_env=judge_api_key_env or None)
    return Judge(RUBRIC, endpoint, workers=8, batch_budget_s=120.0)


def graded_text(completion: str) -> str:
    """What the judge reads: the `<answer>` block, or where none is written, the text after
    the reasoning (the format rewards score the layout; the judge, the explanation)."""
    answer = extract_answer(completion)
    return answer if answer is not None else after_reasoning(completion).strip()


rubric_grade = judge_reward(
    build_judge,
    name="rubric_grade",
    settings=("judge_base_url", "judge_model", "judge_api_key_env"),
    graded=graded_text,  # the explanation, not the reasoning before it
)
