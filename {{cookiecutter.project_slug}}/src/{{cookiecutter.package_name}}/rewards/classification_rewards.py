"""Classification / fact-checking: the answer must be exactly one label of the recipe's set.

Labels compare case-insensitively with whitespace collapsed. Reasoning before the answer is
optional (inside `<think>` or not); the label goes in the last `<answer>` block.
"""

from __future__ import annotations

import re

from .base import extract_answer, reward

_ANSWER_BLOCK_RE = re.compile(r"<answer>(.*?)</answer>\s*\Z", re.DOTALL)


def normalise(label: str) -> str:
    return " ".join(str(label).split()).casefold()


@reward(low=0.0, high=1.0)
def label_correctness(completion: str, answer: str, **row) -> float:
    """1.0 when the answered label equals the gold label."""
    predicted = extract_answer(completion)
    if predicted is None:
        return 0.0
    return 1.0 if normalise(predicted) == normalise(answer) else 0.0


@reward(low=0.0, high=1.0, settings=("labels",))
def label_in_set(completion: str, *, labels: tuple[str, ...], **row) -> float:
    """1.0 when the answer is one of the labels (right or wrong): it learned the label set."""
    predicted = extract_answer(completion)
    if predicted is None:
        return 0.0
    return 1.0 if normalise(predicted) in {normalise(label) for label in labels} else 0.0


@reward(low=0.0, high=1.0)
def answer_tag_format(completion: str, **row) -> float:
    """1.0 for one `<answer>` block holding one line, at the very end; 0.5 when text follows it
    or it spans lines; 0 without one."""
    if completion.count("<answer>") != 1 or completion.count("</answer>") != 1:
        return 0.0
    match = _ANSWER_BLOCK_RE.search(completion)
    if match is None:
        return 0.5
    content = match.group(1).strip()
    return 1.0 if content and "\n" not in content else 0.5
