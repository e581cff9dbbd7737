"""Rewards of the tools task, read from the whole agent rollout TRL hands over: the assistant
turns (with the `tool_calls` TRL parsed from them) and the tool results in between.

- `tool_answer_correctness` (the task's correctness, weighted highest): the final turn's
  `<answer>` equals the gold answer: read with math-verify for `python` rows (as the math task
  reads answers), compared as normalised text for the others (`lookup`: a short answer, or a
  SUPPORTED / REFUTED / NOT ENOUGH INFO label);
- `tool_call_format`: 0.5 for at least one tool call TRL could parse (a well-formed call) and 0.5
  for ending with a final answer (a last turn without calls holding an `<answer>` block);
- `tool_call_errors`: minus the share of calls whose result is an error (an unknown tool, bad
  arguments, a tool that raised: TRL's `{'error': ...}` result);
- `tool_call_cost`: `-tool_call_cost` per call past `free_tool_calls` (recipe fields), down to
  -1: calls cost time, so a model that needs none should not make them.

Each reads a text reward's contract: never raises, documented range (see rewards/base.py).
"""

from __future__ import annotations

from ..environments import is_error
from .base import extract_answer, normalise_label, reward
from .math_rewards import BUDGET_S, gold_text, gold_value, read_final

PYTHON_ENVIRONMENT = "python"  # rows whose answers are numbers (math-verify)


def rollout_calls(messages: list[dict]) -> list[dict]:
    """Every tool call of the rollout's assistant turns (TRL's parsed `tool_calls`)."""
    found = []
    for message in messages:
        if message.get("role", "assistant") == "assistant":
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                found += [c for c in calls if isinstance(c, dict)]
    return found


def tool_results(messages: list[dict]) -> list[str]:
    return [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]


def final_answer(messages: list[dict]) -> str | None:
    """The `<answer>` of the rollout's last turn, when that turn is the assistant's and makes no
    call (None otherwise: the rollout stopped before answering)."""
    if not messages:
        return None
    last = messages[-1]
    if last.get("role", "assistant") != "assistant" or last.get("tool_calls"):
        return None
    return extract_answer(str(last.get("content") or ""))


@reward(low=0.0, high=1.0, time_budget=BUDGET_S, conversation=True)
def tool_answer_correctness(messages: list[dict], answer: str, environment: str = "", **row):
    """1.0 if the final answer equals the gold answer, else 0.0."""
    region = final_answer(messages)
    if region is None:
        return 0.0
    if environment == PYTHON_ENVIRONMENT:
        gold = gold_value(str(answer))
        if gold:
            from math_verify import verify

            predicted = read_final(region)
            return (
                1.0
                if predicted and verify(list(gold), list(predicted), timeout_seconds=None)
                else 0.0
            )
    return 1.0 if normalise_label(region) == normalise_label(gold_text(str(answer))) else 0.0


@reward(low=0.0, high=1.0, conversation=True)
def tool_call_format(messages: list[dict], **row) -> float:
    """0.5 for a well-formed (parsed) tool call, 0.5 for a final answer."""
    called = any(
        isinstance(c.get("function"), dict) and c["function"].get("name")
        for c in rollout_calls(messages)
    )
    return 0.5 * called + 0.5 * (final_answer(messages) is not None)


@reward(low=-1.0, high=0.0, conversation=True)
def tool_call_errors(messages: list[dict], **row) -> float:
    """Minus the share of tool results that are errors (0 without calls)."""
    results = tool_results(messages)
    if not results:
        return 0.0
    return 0.0 - sum(is_error(r) for r in results) / len(results)


@reward(low=-1.0, high=0.0, settings=("tool_call_cost", "free_tool_calls"), conversation=True)
def tool_call_cost(
    messages: list[dict], *, tool_call_cost: float, free_tool_calls: int, **row
) -> float:
    """-tool_call_cost per call past free_tool_calls."""
    return 0.0 - tool_call_cost * max(0, len(rollout_calls(messages)) - free_tool_calls)
