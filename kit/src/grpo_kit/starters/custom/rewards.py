"""Rewards for your own task. EDIT HERE: replace `exact_answer` with what "correct" means for you.

A reward takes the completion text and the row's columns (keyword arguments named like the dataset
columns; the gold answer arrives as `answer`) and returns a float in its declared range, or None
when it does not apply to that row. Declare it with `@reward(low, high)`, and add it (with its
weight) to the task's `rewards` in task.py, the one place the rewards are listed. Test it on its own
first: `make reward-debug`. A reward that parses or runs something a completion could make slow
declares a per-completion budget, `@reward(low, high, time_budget=1.0)` (CPU seconds, so a busy
machine does not change a verdict): past it the completion scores `low` and is counted (TRL metric
`rewards/<name>/timeouts`). A completion that makes a reward raise scores `low` too, alone, and is
counted (`rewards/<name>/errors`, and a warning).
"""

from __future__ import annotations

from grpo_kit.rewards import reward
from grpo_kit.rewards.formats import partial_format, strict_format
from grpo_kit.verify.text import extract_answer, normalise_label

__all__ = ["exact_answer", "partial_format", "strict_format"]


@reward(low=0.0, high=1.0)
def exact_answer(completion: str, answer: str, **row) -> float:
    """1.0 when the `<answer>` block equals the gold answer, compared as labels are
    (`normalise_label`: case, spacing, Unicode width and quotes, emphasis and punctuation
    around the answer ignored)."""
    predicted = extract_answer(completion)
    if predicted is None:
        return 0.0
    return 1.0 if normalise_label(predicted) == normalise_label(answer) else 0.0
