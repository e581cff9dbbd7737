"""The procedural task's rewards. Yours to edit: the task's `rewards` in task.py list which ones
train and their weights (the one place they are set).

`procedural_correctness` never judges an answer itself: it hands the `<answer>` block to the
scorer of the reasoning-gym generator that made the problem (`grpo_kit.procedural.score`, the
generator's own `score_answer`, with the row's entry), so a problem scores exactly as its
generator defines (1 for its reference answer; some generators give partial credit).
`procedural_correctness` is also `make evaluate`'s accuracy.
"""

from __future__ import annotations

from grpo_kit import procedural
from grpo_kit.rewards import reward
from grpo_kit.rewards.formats import partial_format, soft_overlong, strict_format
from grpo_kit.verify.text import extract_answer

__all__ = ["partial_format", "procedural_correctness", "soft_overlong", "strict_format"]


@reward(low=0.0, high=1.0)
def procedural_correctness(completion: str, rg_entry: str = "", **row) -> float | None:
    """The generator's own score of the `<answer>` block (0.0 without one); None when the row
    carries no generator entry (the row then does not count)."""
    entry = procedural.entry_of(rg_entry)
    if entry is None:
        return None
    answer = extract_answer(completion)
    if answer is None:
        return 0.0
    return procedural.score(answer, entry)
