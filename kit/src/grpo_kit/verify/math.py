"""Reading math answers and comparing them with math-verify: what the math rewards build on.

An answer is read whole, never in part, the same way in the gold answer and in the completion:
- delimiters are dropped (`\\boxed{...}`, `$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]`), then a
  plain number (`18`, `-0.5`, `1,234`, `$18`, `28%`) is read as a number and anything else as
  one LaTeX expression (`\\sqrt{8}`, `(2,3)`, `[0,1)`, `\\{3,2,1\\}`, `2x+3`, `\\infty`,
  `\\text{Monday}`); math-verify parses it and compares it with the gold answer. `2^{10}` is
  1024, `10!` is 3628800 and `3+2x` is 3+2x: no leading number is read off an expression;
- a completion's answer of words only (`odd`, `Monday`) is read as `\\text{...}`;
- anything else reads as nothing: words outside `\\text{}` ("the answer is 18", "forty two"
  as a gold answer), two `\\boxed{}` (two answers), more than 1000 characters, LaTeX that
  math-verify cannot parse (its fallback of comparing the raw strings is not used: it compares
  what is left after a failed normalisation, which can make different answers equal).

Where the answer is:
- in the completion, the last `<answer>` block; without one, the end of the text after the
  reasoning (`</think>`): what follows "final answer is", else the last `\\boxed{}`, else the
  last `$...$`, `\\(...\\)`, `\\[...\\]` block or number that stands alone (not glued to an
  expression, like the `2` of `2^{10}` or `2x`);
- in the gold field, what follows GSM8K's `####`, else the `\\boxed{}` of a MATH solution
  (several: together, as a list), else the whole text. A gold answer that reads as nothing
  makes the reward `None` for its row (not applicable).

A reward that reads answers with these functions gives each completion a time budget (`BUDGET_S`,
`@reward(time_budget=...)`), however hostile the text (`\\boxed{9^{9^{9^{9}}}}` would keep sympy
busy for minutes); past it the completion scores its low value and is counted (TRL metric
`rewards/<name>/timeouts`, a warning).
"""

from __future__ import annotations

import functools
import logging
import re

from ..rewards.base import RewardTimeout, time_budget
from .text import extract_answer, tail

BUDGET_S = 1.0  # per completion: reading its answer and comparing it with the gold answer
GOLD_BUDGET_S = 2.0  # per gold answer (read once and cached; not part of a completion's budget)
WARM_UP_S = 60.0  # math-verify's first parse builds its LaTeX parser (about half a second)
MAX_ANSWER_CHARS = 1000  # a longer answer is not a final answer
FREE_TEXT_CHARS = 1000  # without an <answer> block, the end of the text that is searched
FINAL_ANSWER = "final answer is"
THINK_CLOSE = "</think>"


@functools.cache
def _math_verify():
    """math-verify's parse and verify and the two extraction configs used here, imported on
    first use (the template reads the tasks without math-verify installed)."""
    import math_verify

    latex, number = [math_verify.LatexExtractionConfig()], [math_verify.ExprExtractionConfig()]
    return math_verify.parse, math_verify.verify, latex, number


# Delimiters of LaTeX math (an escaped `\$` is a dollar sign, kept).
_DELIMITERS_RE = re.compile(r"(?<!\\)\$|\\[()\[\]]")
# A number written alone: sign, currency, thousands separators, decimals, percent.
_NUMBER_RE = re.compile(
    r"(?P<sign>[-+]?)\s*(?:(?:\\?\$|[€£¥])\s*)?"
    r"(?P<digits>\d{1,3}(?:[, ]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s*(?P<percent>\\?%|percent(?:age)?|pct))?"
)
# Words outside \text{}: a run of three letters once text arguments, subscripts and commands
# are gone.
_TEXT_ARGUMENT_RE = re.compile(
    r"\\(?:text\w*|math(?:rm|bf|it|sf|tt)|mbox|operatorname|begin|end)\s*\{[^{}]*\}|_\{[^{}]*\}"
)
_WORDS_RE = re.compile(r"[A-Za-z][A-Za-z' -]*")
_COMMAND_RE = re.compile(r"\\[A-Za-z]+")
_WORD_RE = re.compile(r"[A-Za-z]{3,}")
# Free text: blocks of LaTeX math (bounded, so a text full of openings stays cheap) and numbers.
_BLOCK_RE = re.compile(
    r"\$\$(?P<display>[^$]{1,500}?)\$\$"
    r"|\\\[(?P<bracket>.{1,500}?)\\\]"
    r"|\\\((?P<paren>.{1,500}?)\\\)"
    r"|(?<!\\)\$(?P<inline>(?:[^$\n\\]|\\.){1,500}?)\$"
    r"|(?P<fraction>-?\\[dt]?frac\{-?\d+(?:\.\d+)?\}\{-?\d+(?:\.\d+)?\})",
    re.DOTALL,
)
_DIGITS = r"(?:\d{1,3}(?:[, ]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_OPERAND = rf"\(?-?{_DIGITS}\)?"
# A number, or arithmetic on numbers only (`2/3`, `(1/2) * (4/3)`), with an optional percent.
_NUMBER_TOKEN_RE = re.compile(
    rf"-?{_OPERAND}(?:\s*[-+*/×÷]\s*{_OPERAND})*(?:\s*(?:\\?%|percent(?:age)?\b|pct\b))?"
)
# Around a number or block that stands alone: what may not touch it, and the operators that may
# not sit next to it (after spaces; `=` only after it: `x = 2` is fine, `2 = x` is not).
_GLUED_BEFORE = set("^_/\\.,([{")
_GLUED_AFTER = set("^_{([\\!*/×÷·'")
_OPERATOR = r"(?:[-+*/^×÷·]|\\(?:cdot|times|div|pm|mp|ast)(?![A-Za-z]))"
_OPERATOR_AFTER_RE = re.compile(rf"\s*(?:{_OPERATOR}|=)")
_OPERATOR_BEFORE_RE = re.compile(rf"{_OPERATOR}\s*\Z")


class _OwnTimeouts(logging.Filter):
    """math-verify warns when its signal timeouts are off; they are, for this module's budget."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_OwnTimeouts())


def gold_text(answer: str) -> str:
    """The final answer inside a gold field: what follows GSM8K's `####`, else the content of the
    `\\boxed{}` of a MATH solution (several: all of them, comma-separated), else the whole
    text; stripped."""
    text = str(answer)
    if "####" in text:
        return text.rsplit("####", 1)[1].strip()
    boxed = boxed_contents(text)
    return (", ".join(boxed) if boxed else text).strip()


def boxed_contents(text: str) -> list[str]:
    """Contents of the `\\boxed{...}` groups of the text (braces matched), in order."""
    contents, start = [], text.find("\\boxed")
    while start != -1:
        span = _braced(text, start + len("\\boxed"))
        if span is None:
            break
        contents.append(text[span[0] + 1 : span[1] - 1])
        start = text.find("\\boxed", span[1])
    return contents


def _braced(text: str, index: int) -> tuple[int, int] | None:
    """(start, end) of the `{...}` group opening at `index` (spaces skipped), or None."""
    while index < len(text) and text[index] == " ":
        index += 1
    if index >= len(text) or text[index] != "{":
        return None
    depth = 0
    for position in range(index, len(text)):
        char = text[position]
        if char == "{" and text[position - 1] != "\\":
            depth += 1
        elif char == "}" and text[position - 1] != "\\":
            depth -= 1
            if depth == 0:
                return index, position + 1
    return None


def _unbox(text: str) -> str | None:
    """The text with its one `\\boxed{...}` replaced by the content; None if unbalanced."""
    start = text.find("\\boxed")
    if start == -1:
        return text
    span = _braced(text, start + len("\\boxed"))
    if span is None:
        return None
    return text[:start] + text[span[0] + 1 : span[1] - 1] + text[span[1] :]


def is_prose(latex: str) -> bool:
    """Words outside `\\text{}` (three letters in a row once commands are gone): prose, not math."""
    bare = _COMMAND_RE.sub(" ", _TEXT_ARGUMENT_RE.sub(" ", latex))
    return _WORD_RE.search(bare) is not None


def read_final(text: str, words: bool = True) -> tuple:
    """The value of a final answer written alone (math-verify objects), or () when it does not
    read whole as mathematics. See the module docstring. With `words`, an answer of words only
    (`odd`, `Monday`) is read as `\\text{...}`; a gold answer of words only is prose."""
    text = text.strip()
    if not text or len(text) > MAX_ANSWER_CHARS or text.count("\\boxed") > 1:
        return ()
    unboxed = _unbox(text)
    if unboxed is None:
        return ()
    text = _DELIMITERS_RE.sub(" ", unboxed).strip()
    if text.endswith(".") and not text.endswith("\\."):
        text = text[:-1].strip()  # the end of a sentence
    if not text:
        return ()
    number = _NUMBER_RE.fullmatch(text)
    if number is not None:
        canonical = f"{number['sign']}{number['digits']}{'%' if number['percent'] else ''}"
        parse, _, _, as_number = _math_verify()
        return tuple(parse(canonical, as_number, fallback_mode="no_fallback", parsing_timeout=None))
    if words and _WORDS_RE.fullmatch(text):
        text = "\\text{" + text + "}"
    parse, _, as_latex, _ = _math_verify()
    read = parse(f"$${text}$$", as_latex, parsing_timeout=None)
    if len(read) != 2 or isinstance(read[0], str) or is_prose(read[1]):
        return ()
    return (read[0],)


def read_free_text(text: str) -> tuple:
    """The answer at the end of a completion without an `<answer>` block (see the module
    docstring), read with `read_final`. Reasoning (up to `</think>`) is not the answer."""
    reasoning_end = text.rfind(THINK_CLOSE)
    if reasoning_end != -1:
        text = text[reasoning_end + len(THINK_CLOSE) :]
    text = tail(text, FREE_TEXT_CHARS)
    boxes = _boxes(text)
    blocks = [(m.start(), m.end(), m[m.lastgroup or 0]) for m in _BLOCK_RE.finditer(text)]
    covered = bytearray(len(text))  # inside a box or a block: not a number of its own
    for start, end, _ in boxes + blocks:
        covered[start:end] = b"\x01" * (end - start)
    candidates = [block for block in blocks if _stands_alone(text, block[0], block[1])]
    candidates += [
        (match.start(), match.end(), match[0])
        for match in _NUMBER_TOKEN_RE.finditer(text)
        if not covered[match.start()]
        and _stands_alone(text, match.start(), match.end(), number=True)
    ]
    # "The final answer is X" (the Minerva layout) first, then the last \\boxed{}, then the
    # last candidate.
    anchor = text.lower().rfind(FINAL_ANSWER)
    if anchor != -1:
        after = anchor + len(FINAL_ANSWER)
        after += len(text[after:]) - len(text[after:].lstrip(" :"))
        for start, _, candidate in candidates + boxes:
            if start == after:
                return read_final(candidate)
    if boxes:
        start, end, content = boxes[-1]
        return read_final(content) if _stands_alone(text, start, end) else ()
    if not candidates:
        return ()
    return read_final(max(candidates, key=lambda candidate: candidate[1])[2])


def _boxes(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of each closed `\\boxed{...}` of the text, in order; one pass."""
    closing, stack = {}, []
    for position, char in enumerate(text):
        if char in "{}" and position and text[position - 1] == "\\":
            continue  # \\{ and \\} are braces of the mathematics, not of the LaTeX
        if char == "{":
            stack.append(position)
        elif char == "}" and stack:
            closing[stack.pop()] = position
    boxes, start = [], text.find("\\boxed")
    while start != -1:
        brace = start + len("\\boxed")
        while brace < len(text) and text[brace] == " ":
            brace += 1
        if brace in closing:
            boxes.append((start, closing[brace] + 1, text[brace + 1 : closing[brace]]))
        start = text.find("\\boxed", start + 1)
    return boxes


def _stands_alone(text: str, start: int, end: int, number: bool = False) -> bool:
    """Whether text[start:end] is not glued to an expression around it: `2` in `2^{10}`, `2x`,
    `x2`, `3+2x`, `(2,3)` or `1/2` does not stand alone; `2` in `x = 2.`, `is 2 apples` or
    `$2$` does (as does a block, unless an expression goes on after it: `$2$^{10}`)."""
    after = text[end] if end < len(text) else " "
    if after in _GLUED_AFTER or after.isalnum() or _OPERATOR_AFTER_RE.match(text, end):
        return False
    if not number:
        return True
    before = text[start - 1] if start else " "
    if before in _GLUED_BEFORE or before.isalnum() or (after == "." and _digit_at(text, end + 1)):
        return False
    return _OPERATOR_BEFORE_RE.search(text, max(0, start - 16), start) is None


def _digit_at(text: str, index: int) -> bool:
    return index < len(text) and text[index].isdigit()


@functools.cache
def _warm_up() -> None:
    """Build math-verify's LaTeX parser once, outside any completion's budget (an enclosing
    budget pauses while an inner one runs)."""
    with time_budget(WARM_UP_S):
        parse, _, as_latex, _ = _math_verify()
        parse("$$\\frac{1}{2}$$", as_latex, parsing_timeout=None)


@functools.lru_cache(maxsize=8192)
def gold_value(answer: str) -> tuple:
    """The gold field's answer read with `read_final` (cached; () when it reads as nothing or
    takes longer than GOLD_BUDGET_S)."""
    _warm_up()
    try:
        with time_budget(GOLD_BUDGET_S):
            return read_final(gold_text(answer), words=False)
    except RewardTimeout:
        return ()


def predicted_value(completion: str) -> tuple:
    """The completion's final answer (see the module docstring): its last `<answer>` block, else
    the end of its free text; () when it reads as nothing."""
    region = extract_answer(completion)
    return read_final(region) if region is not None else read_free_text(completion)


def equal(gold: tuple, predicted: tuple) -> bool:
    """Whether two read answers are the same mathematics (math-verify's `verify`)."""
    return bool(gold and predicted) and bool(
        _math_verify()[1](list(gold), list(predicted), timeout_seconds=None)
    )
