"""Math correctness: the final answer must equal the gold answer, checked with math-verify.

Gold answers may be GSM8K solutions ending in `#### 1,234`, plain numbers, or LaTeX (MATH-style,
`\\boxed{\\frac{1}{2}}`). The completion's answer is read from its last `<answer>` block, or from
the end of the text when there is none, so `\\boxed{18}`, `18` and `$18` all count.
"""

from __future__ import annotations

import functools
import threading

from math_verify import parse, verify

from .base import extract_answer, reward, tail


def _timeout() -> int | None:
    # math-verify's timeouts use SIGALRM, which only works in the main thread.
    return 5 if threading.current_thread() is threading.main_thread() else None


def gold_text(answer: str) -> str:
    """The final answer inside a gold field: what follows GSM8K's `####`, else the whole text."""
    text = str(answer)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    return text.strip()


@functools.lru_cache(maxsize=8192)
def _parse_gold(answer: str) -> tuple:
    text = gold_text(answer)
    if not text:
        return ()
    if "\\boxed" in text or text.startswith("$"):
        candidates = [text]
    else:
        candidates = [f"${text}$", text.replace(",", "")]
    for candidate in candidates:
        parsed = parse(candidate, parsing_timeout=_timeout())
        if parsed:
            return tuple(parsed)
    return ()


@reward(low=0.0, high=1.0)
def math_correctness(completion: str, answer: str, **row) -> float | None:
    """1.0 if the completion's final answer equals the gold `answer`, else 0.0; `None` if the gold
    answer cannot be parsed (that row then does not count)."""
    gold = _parse_gold(str(answer))
    if not gold:
        return None
    region = extract_answer(completion)
    region = tail(region if region is not None else completion, 1000)
    predicted = parse(region, parsing_timeout=_timeout())
    if not predicted:
        return 0.0
    return 1.0 if verify(list(gold), predicted, timeout_seconds=_timeout()) else 0.0
