"""Reading math answers and comparing them with math-verify: what the math rewards build on.

An answer is read whole, never in part, the same way in the gold answer and in the completion:
- delimiters are dropped (`\\boxed{...}`, `$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]`), then a
  plain number (`18`, `-0.5`, `1,234`, `$18`, `28%`) is read as a number and anything else as
  one LaTeX expression (`\\sqrt{8}`, `(2,3)`, `[0,1)`, `\\{3,2,1\\}`, `2x+3`, `\\infty`,
  `\\text{Monday}`, `x \\geq 5`); math-verify parses it and compares it with the gold answer.
  `2^{10}` is 1024, `10!` is 3628800 and `3+2x` is 3+2x: no leading number is read off an
  expression; a comma between digits separates thousands (`1,234`) or answers (`1,2`), never
  decimals;
- several `\\boxed{}` written together (each within 10 characters of the next, or 70 with
  "and", "or", "," or ";" between them: Math-Verify's rule) are one answer, their contents as a
  list (`\\boxed{1}, \\boxed{2}` is the set {1, 2}); a box apart from the others is not;
- LaTeX math-verify cannot parse (`12:00`, equations listed with commas) is compared as its
  text, spaces and sizing commands aside: only the same LaTeX earns credit (math-verify's own
  fallback compares what is left of a failed parse, which made `1 + 1/e` equal `1 - 1/e`);
- a completion's answer of words only (`odd`, `Monday`) is read as `\\text{...}`;
- anything else reads as nothing: words outside `\\text{}` ("the answer is 18", "forty two"
  as a gold answer), two answers apart, more than 1000 characters.

What equals the gold answer (math-verify's `verify`, with two rules of the kit's own, so that one
answer never earns credit for two readings):
- a percent is its number of percent, in the gold's own scale: `18%`, `18\\%` and `18 percent`
  equal a gold `18%` and a gold `18` (GSM8K writes the gold of a "what percent" question without
  the sign), never a gold `0.18`; a gold `18%` is not `0.18` either (math-verify reads `18%` as
  both 18 and 0.18);
- a relation answers only when each of its sides is the gold answer: for a gold that is not an
  equation, `x = 18` (an assignment: a left side of symbols only) and `18 = 18` or
  `x = 3 \\cdot 6 = 18` are 18, `19 = 18` and `2x = 18` are not (math-verify reads the right
  side alone, crediting a false equation).

Where the answer is:
- in the completion, the last `<answer>` block, the whole block. Without one, after the
  reasoning (`</think>`), only an answer the completion marks as one: what follows "final answer
  ... is", or the last `\\boxed{}` group, whichever comes last; else the first number or LaTeX
  math within 50 characters after "answer" ("The answer is 18", "**Answer:** $9$"); else the
  whole text when it is one answer alone (at most 200 characters: `7,425,000`,
  `$\\frac{1}{3}$`); else its last LaTeX math (`$...$`, `\\(...\\)`, `\\[...\\]`, several
  joined by "and", "or" or commas) that stands alone. A number in running text is not an
  answer ("so $40 in all" reads as nothing): a model that writes numbers at random would earn
  credit otherwise (a random model's text ends in the right number often enough to score), and
  TRL's and open-r1's accuracy rewards read no bare number either;
- in the gold field, what follows GSM8K's `####`, else the last `\\boxed{}` group of a MATH
  solution, else the whole text, else the LaTeX after "final answer ... is" or "answer". A gold
  answer that reads as nothing makes the reward `None` for its row (not applicable); a gold
  answer of valid LaTeX always reads as something.

A reward that reads answers with these functions gives each completion a time budget (`BUDGET_S`
CPU seconds, `@reward(time_budget=...)`), however hostile the text (`\\boxed{9^{9^{9^{9}}}}`
would keep sympy busy for minutes); past it the completion scores its low value and is counted
(TRL metric `rewards/<name>/timeouts`, a warning).

Where this differs from Math-Verify's own test tables, and why: the kit's
tests/test_reward_math_verify.py (15 of 265 cases: decimal commas, numbers in running text,
a wrong answer and a false relation Math-Verify credits, and golds that are not valid LaTeX).
"""

from __future__ import annotations

import collections
import functools
import logging
import re
from typing import NamedTuple

from ..rewards.base import RewardTimeout, time_budget
from .text import after_reasoning, extract_answer, tail

__all__ = [
    "BUDGET_S",
    "equal",
    "gold_text",
    "gold_value",
    "is_prose",
    "latex_key",
    "predicted_value",
    "read_final",
    "read_free_text",
]

BUDGET_S = 1.0  # CPU s per completion: reading its answer and comparing it with the gold answer
GOLD_BUDGET_S = 2.0  # per gold answer (read once and cached; not part of a completion's budget)
WARM_UP_S = 60.0  # math-verify's first parse builds its LaTeX parser (about half a second)
MAX_ANSWER_CHARS = 1000  # a longer answer is not a final answer
WHOLE_ANSWER_CHARS = 200  # a longer text without a marked answer is not an answer alone
FREE_TEXT_CHARS = 1000  # without a marked answer, the end of the text searched for LaTeX math
BOX_GAP, BOX_SEPARATED_GAP = 10, 70  # boxes read together (Math-Verify's rule)
ANCHOR_TRIES = 16  # "answer" marks tried, from the last, for an answer after one
ANSWER_WINDOW = 50  # characters after a mark in which its answer starts (Math-Verify's)
FINAL_ANSWER = "final answer is"


@functools.cache
def _math_verify():
    """math-verify's parse and verify and the two extraction configs used here, imported on
    first use (the template reads the tasks without math-verify installed)."""
    import math_verify

    latex, number = [math_verify.LatexExtractionConfig()], [math_verify.ExprExtractionConfig()]
    return math_verify.parse, math_verify.verify, latex, number


class Text(str):
    """An answer's LaTeX as compared when math-verify cannot parse it (see `latex_key`)."""


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
# `\mathrm{e}`: the letter (latex2sympy cannot parse the command around a single letter).
_UPRIGHT_LETTER_RE = re.compile(r"\\mathrm\s*\{\s*([A-Za-z])\s*\}")
# What `latex_key` leaves out: spaces, sizing and spacing commands, a sentence's full stop.
_KEY_DROPPED_RE = re.compile(r"\s+|\\(?:left|right|[!,;:]|q?quad)(?![A-Za-z])|\\ ")
_KEY_FRACTION_RE = re.compile(r"\\[dtc]frac(?![A-Za-z])")
# Free text: blocks of LaTeX math (bounded, so a text full of openings stays cheap).
_BLOCK_RE = re.compile(
    r"\$\$(?P<display>[^$]{1,500}?)\$\$"
    r"|\\\[(?P<bracket>.{1,500}?)\\\]"
    r"|\\\((?P<paren>[^\n]{1,500}?)\\\)"
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
# The marks of an answer in free text: "final answer ... is" (the Minerva layout, "Final
# Answer: The largest $n$ is 34") and "answer" ("The answer is 18", "Answer: $9$").
_FINAL_ANSWER_RE = re.compile(r"final answer\b[^\n]{0,100}?\bis\b", re.IGNORECASE)
_ANSWER_RE = re.compile(r"\banswer\b(?:\s+is\b)?", re.IGNORECASE)
_AFTER_MARK = " \t\n:*"  # between a mark and its answer
_BOX_SEPARATOR_RE = re.compile(r"\b(?:and|or)\b|[,;]")
# Between blocks of LaTeX math that make one answer: "$1$, $2$ and $3$" (Math-Verify's rule).
_BLOCK_SEPARATOR_RE = re.compile(r"\s*(?:,?\s*(?:and|or)\b|,)\s*")
MAX_JOINED_BLOCKS = 6
# Around a number or block that stands alone: what may not touch it, and the operators that may
# not sit next to it (after spaces; `=` only after it: `x = 2` is fine, `2 = x` is not).
_GLUED_BEFORE = set("^_/\\.,([{")
_GLUED_AFTER = set("^_{([\\!*/×÷·'")
_OPERATOR = r"(?:[-+*/^×÷·]|\\(?:cdot|times|div|pm|mp|ast)(?![A-Za-z]))"
_OPERATOR_AFTER_RE = re.compile(rf"\s*(?:{_OPERATOR}|=)")
_OPERATOR_BEFORE_RE = re.compile(rf"{_OPERATOR}\s*\Z")
_CLOSING_RE = re.compile(r"(?:\s*(?:\\\)|\\\]|\$))+")  # the delimiters closing a box's block


class _OwnTimeouts(logging.Filter):
    """math-verify warns when its signal timeouts are off; they are, for this module's budget."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_OwnTimeouts())


# --- boxes ---------------------------------------------------------------------------------------


class _Box(NamedTuple):
    start: int  # of `\boxed`
    end: int  # after its closing brace
    content: str


def _boxes(text: str) -> list[_Box]:
    """The closed `\\boxed{...}` of the text that are not inside another, in order; one pass."""
    closing, stack = {}, []
    for position, char in enumerate(text):
        if char in "{}" and position and text[position - 1] == "\\":
            continue  # \\{ and \\} are braces of the mathematics, not of the LaTeX
        if char == "{":
            stack.append(position)
        elif char == "}" and stack:
            closing[stack.pop()] = position
    boxes: list[_Box] = []
    start = text.find("\\boxed")
    while start != -1:
        brace = start + len("\\boxed")
        while brace < len(text) and text[brace] == " ":
            brace += 1
        if brace in closing and not (boxes and start < boxes[-1].end):
            boxes.append(_Box(start, closing[brace] + 1, text[brace + 1 : closing[brace]]))
        start = text.find("\\boxed", start + 1)
    return boxes


def _last_group(text: str, boxes: list[_Box]) -> list[_Box]:
    """The last box and the boxes written together with it (Math-Verify's rule: each within
    BOX_GAP characters of the next, or BOX_SEPARATED_GAP with a separator between and another
    content), in order; a group stops growing past 2 x MAX_ANSWER_CHARS."""
    if not boxes:
        return []
    group = [boxes[-1]]  # from the last box backwards
    for box in reversed(boxes[:-1]):
        earliest = group[-1]
        between = text[box.end : earliest.start]
        near = len(between) < BOX_GAP
        separated = len(between) < BOX_SEPARATED_GAP and _BOX_SEPARATOR_RE.search(between)
        if not (near or (separated and box.content.strip() != earliest.content.strip())):
            break
        group.append(box)
        if boxes[-1].end - box.start > 2 * MAX_ANSWER_CHARS:
            break
    group.reverse()
    return group


def _joined(group: list[_Box]) -> str:
    """The contents of a group of boxes as one answer (a list; repeats written in a row once)."""
    contents: list[str] = []
    for box in group:
        content = box.content.strip()
        if not contents or contents[-1] != content:
            contents.append(content)
    return ", ".join(contents)


def _unbox(text: str) -> str | None:
    """The text with its group of boxes replaced by their contents (boxes in boxes too); None
    when a box stands apart from the group (two answers) or one is not closed."""
    for _ in range(8):  # \\boxed{\\boxed{...}}: a few levels
        if "\\boxed" not in text:
            return text
        boxes = _boxes(text)
        group = _last_group(text, boxes)
        if not group or len(group) != len(boxes):
            return None  # a box not closed, or two answers
        if "\\boxed" in text[: group[0].start] + text[group[-1].end :]:
            return None
        text = text[: group[0].start] + _joined(group) + text[group[-1].end :]
    return None


# --- reading one answer --------------------------------------------------------------------------


def gold_text(answer: str) -> str:
    """The final answer inside a gold field: what follows GSM8K's `####`, else the contents of
    the last group of `\\boxed{}` of a MATH solution (several: comma-separated), else the whole
    text; stripped."""
    text = str(answer)
    if "####" in text:
        return text.rsplit("####", 1)[1].strip()
    group = _last_group(text, _boxes(text))
    return (_joined(group) if group else text).strip()


def is_prose(latex: str) -> bool:
    """Words outside `\\text{}` (three letters in a row once commands are gone): prose, not math."""
    bare = _COMMAND_RE.sub(" ", _TEXT_ARGUMENT_RE.sub(" ", latex))
    return _WORD_RE.search(bare) is not None


def latex_key(latex: str) -> str:
    """LaTeX as compared when it cannot be parsed: without spaces, `\\left`/`\\right`, spacing
    commands and a final full stop; `\\dfrac`, `\\tfrac`, `\\cfrac` as `\\frac`."""
    key = _KEY_FRACTION_RE.sub(r"\\frac", _KEY_DROPPED_RE.sub("", latex))
    return key[:-1] if key.endswith(".") and not key.endswith("\\.") else key


def read_final(text: str, words: bool = True) -> tuple:
    """The value of a final answer written alone, or () when it does not read whole as
    mathematics: (math-verify's value, its `Text`), or (its `Text`,) for LaTeX math-verify cannot
    parse. See the module docstring. With `words`, an answer of words only (`odd`, `Monday`) is
    read as `\\text{...}`; a gold answer of words only is prose."""
    text = text.strip()
    if not text or len(text) > MAX_ANSWER_CHARS:
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
        read = parse(canonical, as_number, fallback_mode="no_fallback", parsing_timeout=None)
        return (*map(_percent_points, read[:1]), Text(latex_key(canonical)))
    if words and _WORDS_RE.fullmatch(text):
        text = "\\text{" + text + "}"
    text = _UPRIGHT_LETTER_RE.sub(r"\1", text)
    parse, _, as_latex, _ = _math_verify()
    read = parse(f"$${text}$$", as_latex, parsing_timeout=None)
    if len(read) == 2 and not isinstance(read[0], str) and not _undefined(read[0]):
        value = _percent_points(read[0])
        return () if is_prose(str(read[1])) else (value, Text(latex_key(text)))
    return () if is_prose(text) else (Text(latex_key(text)),)


def _percent_points(value):
    """A percent as its number of percent (`18%` is 18: the module docstring's rule), also in a
    list, tuple or interval of percents; math-verify reads `X%` as X times an unevaluated 1/100,
    which it compares both ways."""
    import sympy

    if _is_percent(value):
        return value.args[0]
    if isinstance(value, sympy.Tuple | sympy.FiniteSet):
        return type(value)(*(_percent_points(v) for v in value.args))
    if isinstance(value, sympy.Interval) and _is_percent(value.start) and _is_percent(value.end):
        start, end = value.start.args[0], value.end.args[0]
        return sympy.Interval(start, end, value.left_open, value.right_open)
    return value


def _is_percent(value) -> bool:
    import sympy

    return (
        isinstance(value, sympy.Mul)
        and len(value.args) == 2
        and value.args[1] == sympy.UnevaluatedExpr(sympy.Rational(1, 100))
    )


def _undefined(value) -> bool:
    """A value with no meaning (a division by zero: `12:00` parses as 12/0)."""
    import sympy

    has = getattr(value, "has", None)
    return callable(has) and bool(has(sympy.zoo, sympy.nan))


# --- where the answer is -------------------------------------------------------------------------


def read_free_text(text: str, completion: bool = True) -> tuple:
    """The answer a text without an `<answer>` block marks as its answer (see the module
    docstring), read with `read_final`. Reasoning (up to `</think>`) is not the answer. A gold
    field (`completion` False) is read only after a mark, as LaTeX."""
    text = after_reasoning(text)
    final = _marked(text, _FINAL_ANSWER_RE, completion)
    group = _last_group(text, _boxes(text))
    if group and (final is None or group[-1].start > final[0]):
        start, end = group[0].start, group[-1].end
        return read_final(_joined(group)) if _stands_alone(text, start, end, box=True) else ()
    if final is not None:
        return read_final(final[1], words=completion)
    answer = _marked(text, _ANSWER_RE, completion)
    if answer is not None:
        return read_final(answer[1], words=completion)
    if not completion:
        return ()
    whole = text.strip()
    bare = _DELIMITERS_RE.sub(" ", whole).strip().rstrip(".").strip()
    if len(whole) <= WHOLE_ANSWER_CHARS and (_NUMBER_RE.fullmatch(bare) or not is_prose(whole)):
        read = read_final(whole)
        if read:
            return read
    end = tail(text, FREE_TEXT_CHARS)
    blocks = list(_BLOCK_RE.finditer(end))
    if not blocks or not _stands_alone(end, blocks[-1].start(), blocks[-1].end()):
        return ()
    joined = [blocks.pop()]
    while blocks and len(joined) < MAX_JOINED_BLOCKS:  # "the roots are $1$ and $2$"
        between = end[blocks[-1].end() : joined[0].start()]
        if not _BLOCK_SEPARATOR_RE.fullmatch(between):
            break
        joined.insert(0, blocks.pop())
    return read_final(", ".join(_content(b) for b in joined))


def _content(block: re.Match) -> str:
    """The LaTeX inside a block of math (`$...$`, `\\(...\\)`, ...)."""
    return block[block.lastgroup or 0]


def _marked(text: str, mark: re.Pattern, numbers: bool) -> tuple[int, str] | None:
    """(position, text) of the answer right after the last of the text's `mark`s that has one
    (the last ANCHOR_TRIES marks are tried)."""
    marks = collections.deque(mark.finditer(text), maxlen=ANCHOR_TRIES)
    for found in reversed(marks):
        candidate = _answer_at(text, found.end(), numbers)
        if candidate is not None:
            return found.start(), candidate
    return None


def _answer_at(text: str, position: int, numbers: bool) -> str | None:
    """The first answer that starts within ANSWER_WINDOW characters of `position`, on its line:
    a block of LaTeX math, or (with `numbers`) a number, that stands alone. (A box after a mark
    is read as the text's last group of boxes.)"""
    line_end = text.find("\n", position + 1)
    window_end = min(position + ANSWER_WINDOW, len(text) if line_end == -1 else line_end)
    while position < window_end and text[position] in _AFTER_MARK:
        position += 1
    for index in range(position, window_end):
        char = text[index]
        if char in "$\\":
            block = _BLOCK_RE.match(text, index)
            if block is not None:
                blocks = [block]
                while len(blocks) < MAX_JOINED_BLOCKS:  # "$12$ and $13$": one answer
                    separator = _BLOCK_SEPARATOR_RE.match(text, blocks[-1].end())
                    after = _BLOCK_RE.match(text, separator.end()) if separator else None
                    if after is None:
                        break
                    blocks.append(after)
                alone = _stands_alone(text, block.start(), blocks[-1].end())
                return ", ".join(_content(b) for b in blocks) if alone else None
        if not numbers or not (char.isdigit() or char in "-(.") or text[index - 1].isdigit():
            continue
        token = _NUMBER_TOKEN_RE.match(text, index)
        if token is None or token[0].count("(") != token[0].count(")"):
            continue
        if _stands_alone(text, token.start(), token.end(), number=True):
            return token[0]
    return None


def _stands_alone(text: str, start: int, end: int, number: bool = False, box: bool = False) -> bool:
    """Whether text[start:end] is not glued to an expression around it: `2` in `2^{10}`, `2x`,
    `x2`, `3+2x`, `(2,3)` or `1/2` does not stand alone; `2` in `x = 2.`, `is 2 apples`,
    `**2**` or `$2$` does (as does a block, unless an expression goes on after it: `$2$^{10}`;
    a box may be followed by the delimiters of its block: `\\(\\boxed{2}\\)`)."""
    if box:
        closing = _CLOSING_RE.match(text, end)
        end = closing.end() if closing else end
    after = text[end] if end < len(text) else " "
    if text.startswith("**", end):  # markdown bold closing, unless a power goes on after it
        following = text[end + 2 : end + 3]
        if not following or not (following.isalnum() or following in "({\\"):
            end, after = end + 2, text[end + 2] if end + 2 < len(text) else " "
    if after in _GLUED_AFTER or after.isalnum() or _OPERATOR_AFTER_RE.match(text, end):
        return False
    if not number:
        return True
    before = text[start - 1] if start else " "
    if before in _GLUED_BEFORE or before.isalnum() or _continues(text, end, after):
        return False
    if _bold_before(text[max(0, start - 16) : start]):
        return True
    return _OPERATOR_BEFORE_RE.search(text, max(0, start - 16), start) is None


def _bold_before(prefix: str) -> bool:
    """Whether the `**` that ends `prefix` is markdown bold, not a power: an opening one right
    before the number ("is **18**"), or a closing one after a word ("**Answer:** 18")."""
    stripped = prefix.rstrip()
    if not stripped.endswith("**"):
        return False
    before = stripped[-3] if len(stripped) > 2 else " "
    if stripped == prefix:  # "**" right before the number: opening bold
        return before.isspace()
    return not (before.isspace() or before.isdigit() or before in ")]}")


def _continues(text: str, end: int, after: str) -> bool:
    """A number goes on after `end`: `2.5` read as `2`, `2,5` (a list, or a decimal comma)."""
    return after in ".," and end + 1 < len(text) and text[end + 1].isdigit()


# --- the answers of a row ------------------------------------------------------------------------


@functools.cache
def _warm_up() -> None:
    """Build math-verify's LaTeX parser once, outside any completion's budget (an enclosing
    budget pauses while an inner one runs)."""
    with time_budget(WARM_UP_S):
        parse, _, as_latex, _ = _math_verify()
        parse("$$\\frac{1}{2}$$", as_latex, parsing_timeout=None)


@functools.lru_cache(maxsize=8192)
def gold_value(answer: str) -> tuple:
    """The gold field's answer (`gold_text`, read with `read_final`; a solution without a box
    that does not read whole: its LaTeX after "final answer ... is" or "answer"), cached; ()
    when it reads as nothing or takes longer than GOLD_BUDGET_S."""
    _warm_up()
    try:
        with time_budget(GOLD_BUDGET_S):
            read = read_final(gold_text(answer), words=False)
            if not read and "####" not in answer and "\\boxed" not in answer:
                read = read_free_text(str(answer), completion=False)
            return read
    except RewardTimeout:
        return ()


def predicted_value(completion: str) -> tuple:
    """The completion's final answer (see the module docstring): its last `<answer>` block, else
    the answer its free text marks; () when it reads as nothing. The reward and `grpo evaluate`
    read answers with this one function."""
    region = extract_answer(completion)
    return read_final(region) if region is not None else read_free_text(completion)


def equal(gold: tuple, predicted: tuple) -> bool:
    """Whether two read answers are the same mathematics (math-verify's `verify`); a gold answer
    math-verify cannot parse equals only the same LaTeX (`latex_key`)."""
    if not (gold and predicted):
        return False
    gold_values = [v for v in gold if not isinstance(v, Text)]
    if not gold_values:
        return any(isinstance(v, Text) and v == gold[-1] for v in predicted)
    values = [v for v in predicted if not isinstance(v, Text)]
    if not values:
        return False
    verify = _math_verify()[1]
    if not any(_is_equation(v) for v in gold_values):
        sides = [s for v in values for s in (_sides(v) if _is_equation(v) else [v])]
        return bool(sides) and all(verify(gold_values, [s], timeout_seconds=None) for s in sides)
    return bool(verify(gold_values, values, timeout_seconds=None))


def _is_equation(value) -> bool:
    """An equation, or a chain of them (`x = 3 + 15 = 18` reads as several joined by And)."""
    import sympy

    if isinstance(value, sympy.And):
        return bool(value.args) and all(isinstance(a, sympy.Eq) for a in value.args)
    return isinstance(value, sympy.Eq)


def _sides(value) -> list:
    """The sides of an equation (or chain) that must each be the gold answer: all of them but a
    left side of symbols only (`x = 18` assigns; `19 = 18` and `2x = 18` do not)."""
    import sympy
    from latex2sympy2_extended.latex2sympy2 import is_expr_of_only_symbols

    chain = list(getattr(value, "_unsorted_args", None) or value.args)
    if isinstance(value, sympy.Eq):
        chain = [value]
    sides = [chain[0].lhs, *(eq.rhs for eq in chain)]
    return sides[1:] if is_expr_of_only_symbols(sides[0]) else sides
