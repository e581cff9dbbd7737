"""Code correctness: run the completion's Python against the row's tests in the local sandbox.

The gold `answer` holds the tests: MBPP-style (a JSON list of `assert ...` lines, one test each)
or HumanEval-style (test code defining `check(candidate)`, run as `check(<entry_point>)`). The
reward is the fraction of tests passed. Programs of one batch run in parallel (`sandbox_workers`).
"""

from __future__ import annotations

import json
import re

from .. import sandbox
from .base import extract_answer, reward

_FENCE_RE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)


def code_blocks(text: str) -> list[str]:
    """Fenced code blocks in the answer (the `<answer>` block when there is one)."""
    region = extract_answer(text)
    return _FENCE_RE.findall(region if region is not None else text)


def parse_tests(answer: str, entry_point: str | None = None) -> list[str]:
    """The gold field as a list of test snippets."""
    text = str(answer).strip()
    if text.startswith("["):
        try:
            tests = json.loads(text)
        except json.JSONDecodeError:
            tests = None
        if isinstance(tests, list) and all(isinstance(t, str) for t in tests):
            return [t for t in tests if t.strip()]
    if entry_point and "def check(" in text:
        return [f"{text}\ncheck({entry_point})"]
    return [line for line in text.splitlines() if line.strip()]


@reward(low=0.0, high=1.0, batched=True, settings=("limits",))
def code_correctness(
    completions: list[str], answer: list[str], *, limits: sandbox.Limits, **columns
) -> list[float]:
    """Fraction of the row's tests the completion's (last) code block passes; 0 without code."""
    setups = columns.get("setup") or [""] * len(completions)
    entry_points = columns.get("entry_point") or [None] * len(completions)
    jobs, positions = [], []
    for i, (text, gold) in enumerate(zip(completions, answer, strict=True)):
        blocks = code_blocks(text)
        tests = parse_tests(gold, entry_points[i])
        if blocks and tests:
            jobs.append((blocks[-1], tests, str(setups[i] or "")))
            positions.append(i)
    scores = [0.0] * len(completions)
    for i, run in zip(positions, sandbox.run_many(jobs, limits), strict=True):
        scores[i] = run.fraction
    return scores


@reward(low=0.0, high=1.0)
def code_block_format(completion: str, **row) -> float:
    """1.0 when the answer holds exactly one fenced Python block and nothing else."""
    region = extract_answer(completion)
    if region is None:
        return 0.0
    blocks = _FENCE_RE.findall(region)
    if len(blocks) != 1 or not blocks[0].strip():
        return 0.0
    outside = _FENCE_RE.sub("", region).strip()
    return 1.0 if not outside else 0.5
