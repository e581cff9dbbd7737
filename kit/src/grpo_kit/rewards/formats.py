"""Rewards several tasks share: the `<think>...</think><answer>...</answer>` layout, and DAPO's
soft overlong punishment (TRL's).

Two format signals, as in the DeepSeek-R1 recipe: a strict all-or-nothing check, and partial
credit per tag so a model that has not found the layout yet still gets a gradient (open-r1's
`tag_count`).
The opening `<think>` is optional in the strict check because some chat templates pre-fill it.
"""

from __future__ import annotations

import functools

from .base import reward

__all__ = [
    "FORMAT_INSTRUCTIONS",
    "OVERLONG_WHY",
    "PARTIAL_WHY",
    "STRICT_WHY",
    "TAGS",
    "partial_format",
    "soft_overlong",
    "strict_format",
]

TAGS = ("<think>", "</think>", "<answer>", "</answer>")
# The system prompt's words for the layout these rewards check (the tasks that use it say so).
FORMAT_INSTRUCTIONS = (
    "First think step by step inside <think> </think> tags. Then write only the final answer "
    "inside <answer> </answer> tags."
)
STRICT_WHY = "1 for exactly <think>...</think><answer>...</answer>"
PARTIAL_WHY = "0.25 per tag, minus text after </answer>"
OVERLONG_WHY = "0 until the last quarter of max_completion_length, then down to -1"


@reward(low=0.0, high=1.0)
def strict_format(completion: str, **row) -> float:
    """1.0 when the completion is exactly `<think>…</think> <answer>…</answer>` (each tag once,
    both non-empty, only whitespace between and after them)."""
    counts = [completion.count(tag) for tag in TAGS]
    if counts[0] > 1 or counts[1:] != [1, 1, 1]:
        return 0.0
    text = completion.lstrip()
    if text.startswith("<think>"):
        text = text[len("<think>") :]
    elif counts[0]:
        return 0.0  # an opening <think> that is not at the start
    think_end, answer_start, answer_end = (text.find(tag) for tag in TAGS[1:])
    if not think_end < answer_start < answer_end:
        return 0.0
    think = text[:think_end]
    between = text[think_end + len("</think>") : answer_start]
    answer = text[answer_start + len("<answer>") : answer_end]
    after = text[answer_end + len("</answer>") :]
    if not think.strip() or between.strip() or not answer.strip() or after.strip():
        return 0.0
    return 1.0


@reward(low=-0.5, high=1.0)
def partial_format(completion: str, **row) -> float:
    """0.25 per tag that appears exactly once, minus 0.001 per character after `</answer>`
    (at most 0.5). A missing opening `<think>` counts as present when `</think>` appears once:
    thinking models' chat templates open it in the prompt (Qwen3.5 4B/9B, Nemotron), so the
    completion starts inside the thinking block (open-r1's `tag_count_reward` gives 0.75)."""
    counts = [completion.count(tag) for tag in TAGS]
    if counts[0] == 0 and counts[1] == 1:  # the template prefilled <think>
        counts[0] = 1
    score = sum(0.25 for count in counts if count == 1)
    end = completion.rfind("</answer>")
    if end != -1:
        trailing = completion[end + len("</answer>") :].strip()
        score -= min(0.5, 0.001 * len(trailing))
    return score


@functools.lru_cache(maxsize=16)
def _dapo_overlong(limit: int, buffer: int):
    from trl.rewards import get_soft_overlong_punishment  # here: trl loads after the backend

    return get_soft_overlong_punishment(max_completion_len=limit, soft_punish_cache=buffer)


@reward(low=-1.0, high=0.0, settings=("max_completion_length",))
def soft_overlong(
    completion: str, completion_ids=None, *, max_completion_length: int, **row
) -> float:
    """DAPO's soft overlong punishment (TRL's `get_soft_overlong_punishment`, the buffer being
    the last quarter of max_completion_length): 0 up to the buffer, then falling linearly to -1
    at the limit (truncated completions). Token counts come from TRL's `completion_ids`; without
    them (reward debug) they are estimated as characters / 4."""
    limit = max_completion_length
    buffer = max(1, limit // 4)
    length = len(completion_ids) if completion_ids is not None else len(completion) // 4
    return _dapo_overlong(limit, buffer)([range(length)])[0]
