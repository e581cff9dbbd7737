"""The code task's rewards. Yours to edit: the task's `rewards` in task.py list which ones train
and their weights (the one place they are set).

`code_correctness` runs the completion's last code block against the row's tests in the kit's
sandbox (`grpo_kit.sandbox`: the operating system isolates every program, and a judge outside
it decides each test), MBPP-style asserts or HumanEval-style `check(candidate)` code, plus the
row's hidden `extra_tests` (MBPP's challenge tests); the prompt shows at most one of them
(task.py says why).
"""

from __future__ import annotations

from grpo_kit import sandbox
from grpo_kit.rewards import reward
from grpo_kit.rewards.formats import partial_format, soft_overlong
from grpo_kit.verify import code
from grpo_kit.verify.text import extract_answer

__all__ = ["code_block_format", "code_correctness", "partial_format", "soft_overlong"]


@reward(low=0.0, high=1.0, batched=True, settings=("limits",))
def code_correctness(
    completions: list[str], answer: list[str], *, limits: sandbox.Limits, **columns
) -> list[float]:
    """Fraction of the row's tests (its hidden extra tests included) the completion's (last)
    code block passes; 0 without code."""
    return code.score_batch(completions, answer, limits, **columns)


@reward(low=0.0, high=1.0)
def code_block_format(completion: str, **row) -> float:
    """1.0 when the answer holds exactly one fenced Python block and nothing else; 0.5 with
    text beside the block."""
    region = extract_answer(completion)
    if region is None:
        return 0.0
    blocks = code.fenced_blocks(region)
    if len(blocks) != 1 or not blocks[0].strip():
        return 0.0
    return 1.0 if not code.outside_blocks(region).strip() else 0.5
