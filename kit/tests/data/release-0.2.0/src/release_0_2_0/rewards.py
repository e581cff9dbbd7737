"""The math task's rewards. Yours to edit: the recipe's `reward_funcs` lists which ones train
and `reward_weights` weighs them (task.py holds the defaults the recipe starts from).

Each reward follows the kit's contract (`@reward(low, high)`: it never raises, never returns NaN,
stays in its range); `make reward-debug` scores them all on the sample's ideal completions.
How an answer is read is `grpo_kit.verify.math`, tested against Math-Verify's own test tables:
the last `<answer>` block; without one, only an answer the text marks (`\\boxed{}`, "the final
answer is", "Answer:", LaTeX math, or the whole text being one answer), never a number in
running text (a random model would score); `#### 1,234`, `\\boxed{}` and LaTeX golds.
`math_correctness` is also `make evaluate`'s accuracy: the metric reads answers as the reward.
"""

from __future__ import annotations

from grpo_kit.rewards import reward
from grpo_kit.rewards.formats import partial_format, soft_overlong, strict_format
from grpo_kit.verify import math as answers

__all__ = ["math_correctness", "partial_format", "soft_overlong", "strict_format"]


@reward(low=0.0, high=1.0, time_budget=answers.BUDGET_S)
def math_correctness(completion: str, answer: str, **row) -> float | None:
    """1.0 if the completion's final answer equals the gold `answer`, else 0.0; None when the
    gold answer does not read as mathematics (the row then does not count)."""
    gold = answers.gold_value(str(answer))
    if not gold:
        return None
    return 1.0 if answers.equal(gold, answers.predicted_value(completion)) else 0.0
