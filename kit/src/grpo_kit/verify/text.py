"""Text helpers the rewards of several tasks share. Every one runs in time linear in the text
(str.find / rfind / one pass), whatever its shape: a policy can write `<answer>` a million times
without closing it."""

from __future__ import annotations

import unicodedata

__all__ = [
    "ANSWER_CLOSE",
    "ANSWER_OPEN",
    "after_reasoning",
    "extract_answer",
    "normalise_label",
    "tail",
]

ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
THINK_CLOSE = "</think>"


def after_reasoning(text: str) -> str:
    """The text after its last `</think>` (all of it without one): reasoning is not the answer,
    so an answer written inside `<think>` is never read when the reasoning is closed."""
    end = text.rfind(THINK_CLOSE)
    return text if end == -1 else text[end + len(THINK_CLOSE) :]


def extract_answer(text: str) -> str | None:
    """Content of the last `<answer>...</answer>` block after the reasoning (`after_reasoning`),
    stripped; `None` when there is none.

    The block is the last `<answer>` that a `</answer>` follows, up to the first `</answer>`
    after it, so stray or nested tags around it do not leak into the answer. A block inside
    `<think>` is reasoning: `<think><answer>A</answer></think> B` has no answer block."""
    text = after_reasoning(text)
    close = text.rfind(ANSWER_CLOSE)
    if close == -1:
        return None
    start = text.rfind(ANSWER_OPEN, 0, close)
    if start == -1:
        return None
    start += len(ANSWER_OPEN)
    return text[start : text.find(ANSWER_CLOSE, start)].strip()


def tail(text: str, limit: int = 4000) -> str:
    """The last `limit` characters: answers sit at the end, and this bounds parser work."""
    return text[-limit:] if len(text) > limit else text


# Characters that decorate a label without being part of it: quotes, markdown emphasis and code,
# brackets and sentence punctuation around it (`**Positive**.`, `"positive"`, `(A)`).
_LABEL_DECORATION = " \t\n\r\"'`*_~.,;:!?()[]{}<>\u00ab\u00bb\u2018\u2019\u201c\u201d"
# Invisible format characters (soft hyphen, zero-width spaces and joiners, direction marks, BOM).
_INVISIBLE = dict.fromkeys(
    [0x00AD, 0x061C, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F)]
    + [*range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF]
)


def normalise_label(text: object) -> str:
    """A label or short answer as compared by the tasks that compare labels.

    Unicode compatibility forms (full-width letters, ligatures) become plain ones (NFKC),
    zero-width characters go, whitespace collapses, case folds, and quotes, markdown emphasis,
    brackets and punctuation around the label are dropped. Inside the label nothing else
    changes, so `positive-ish` and `not entailment` stay different from `positive` and
    `entailment`."""
    value = unicodedata.normalize("NFKC", str(text)).translate(_INVISIBLE)
    return " ".join(value.split()).strip(_LABEL_DECORATION).casefold()
