"""Format rewards for the `<think>...</think><answer>...</answer>` layout of every task.

Two signals, as in the DeepSeek-R1 recipe: a strict all-or-nothing check, and partial credit per
tag so a model that has not found the layout yet still gets a gradient (open-r1's `tag_count`).
The opening `<think>` is optional in the strict check because some chat templates pre-fill it.
"""

from __future__ import annotations

import re

from .base import reward

TAGS = ("<think>", "</think>", "<answer>", "</answer>")

_STRICT_RE = re.compile(r"(?P<think>.+?)</think>\s*<answer>(?P<answer>.+?)</answer>\s*", re.DOTALL)


@reward(low=0.0, high=1.0)
def strict_format(completion: str, **row) -> float:
    """1.0 when the completion is exactly `<think>…</think> <answer>…</answer>` (each tag once)."""
    counts = [completion.count(tag) for tag in TAGS]
    if counts[0] > 1 or counts[1:] != [1, 1, 1]:
        return 0.0
    text = completion.lstrip()
    if text.startswith("<think>"):
        text = text[len("<think>") :]
    elif counts[0]:
        return 0.0  # an opening <think> that is not at the start
    match = _STRICT_RE.fullmatch(text)
    if match is None or not match["think"].strip() or not match["answer"].strip():
        return 0.0
    return 1.0


@reward(low=-0.5, high=1.0)
def partial_format(completion: str, **row) -> float:
    """0.25 per tag that appears exactly once, minus 0.001 per character after `</answer>`
    (at most 0.5)."""
    score = sum(0.25 for tag in TAGS if completion.count(tag) == 1)
    end = completion.rfind("</answer>")
    if end != -1:
        trailing = completion[end + len("</answer>") :].strip()
        score -= min(0.5, 0.001 * len(trailing))
    return score


@reward(low=-1.0, high=0.0, settings=("max_completion_length",))
def soft_overlong(
    completion: str, completion_ids=None, *, max_completion_length: int, **row
) -> float:
    """DAPO's soft overlong punishment: 0 up to the last quarter of max_completion_length, then
    falling linearly to -1 at the limit (truncated completions). Token counts come from TRL's
    `completion_ids`; without them (reward debug) they are estimated as characters / 4."""
    limit = max_completion_length
    buffer = max(1, limit // 4)
    length = len(completion_ids) if completion_ids is not None else len(completion) // 4
    if length <= limit - buffer:
        return 0.0
    return max(-1.0, (limit - buffer - length) / buffer)
