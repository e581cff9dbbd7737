"""The classification task's rewards. Yours to edit: the task's `rewards` in task.py list which ones
train and their weights (the one place they are set).

Labels compare with `normalise_label` (grpo_kit.verify.text): case, Unicode width and zero-width
characters, runs of whitespace, and quotes, markdown emphasis and punctuation around the label
are ignored (`**Positive**.` is `positive`); anything else inside the label counts, so
`positive-ish` is not `positive`. Reasoning before the answer is optional (inside `<think>` or
not); the label goes in the last `<answer>` block.
"""

from __future__ import annotations

from grpo_kit.rewards import reward
from grpo_kit.rewards.formats import soft_overlong
from grpo_kit.verify.text import ANSWER_CLOSE, ANSWER_OPEN, extract_answer, normalise_label

__all__ = ["answer_tag_format", "label_correctness", "label_in_set", "soft_overlong"]


@reward(low=0.0, high=1.0)
def label_correctness(completion: str, answer: str, **row) -> float:
    """1.0 when the answered label equals the gold label."""
    predicted = extract_answer(completion)
    if predicted is None:
        return 0.0
    return 1.0 if normalise_label(predicted) == normalise_label(answer) else 0.0


@reward(low=0.0, high=1.0, settings=("labels",))
def label_in_set(completion: str, *, labels: tuple[str, ...], **row) -> float:
    """1.0 when the answer is one of the labels (right or wrong): it learned the label set."""
    predicted = extract_answer(completion)
    if predicted is None:
        return 0.0
    return 1.0 if normalise_label(predicted) in {normalise_label(x) for x in labels} else 0.0


@reward(low=0.0, high=1.0)
def answer_tag_format(completion: str, **row) -> float:
    """1.0 for one `<answer>` block holding one line, at the very end; 0.5 when text follows it
    or it spans lines; 0 without one."""
    if completion.count(ANSWER_OPEN) != 1 or completion.count(ANSWER_CLOSE) != 1:
        return 0.0
    start, end = completion.find(ANSWER_OPEN), completion.find(ANSWER_CLOSE)
    if end < start:
        return 0.0
    content = completion[start + len(ANSWER_OPEN) : end].strip()
    if completion[end + len(ANSWER_CLOSE) :].strip():
        return 0.5
    return 1.0 if content and "\n" not in content else 0.5
