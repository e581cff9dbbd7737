"""The tools task's rewards, read from the whole agent rollout TRL hands over: the assistant
turns (with the `tool_calls` TRL parsed from them) and the tool results in between. Yours to
edit: the task's `rewards` in task.py list which ones train and their weights (the one place
they are set).

- `tool_answer_correctness` (the task's correctness, weighted highest): the final turn's
  `<answer>` equals the gold answer: read with math-verify for `python` rows (as the math task
  reads answers), compared as normalised text for the others (`lookup`: a short answer, or a
  SUPPORTED / REFUTED / NOT ENOUGH INFO label);
- `tool_call_format`: 0.5 for at least one tool call TRL could parse (a well-formed call) and 0.5
  for ending with a final answer (a last turn without calls holding an `<answer>` block);
- `tool_call_errors`: minus the share of calls whose result is an error (an unknown tool, bad
  arguments, a tool that raised, a call cut because the tools' time was spent: TRL's
  `{'error': ...}` result); it also logs the TRL metric `tools/budget_cuts` (calls cut by the
  time budget, per rollout);
- `tool_call_cost`: `-tool_call_cost` per call past `free_tool_calls` (recipe fields), down to
  -1: calls cost time, so a model that needs none should not make them.
"""

from __future__ import annotations

from grpo_kit.environments import (
    budget_figures,
    final_turn,
    is_error,
    rollout_calls,
    tool_results,
)
from grpo_kit.rewards import reward
from grpo_kit.verify import math as math_answers
from grpo_kit.verify.text import extract_answer, normalise_label

PYTHON_ENVIRONMENT = "python"  # rows whose answers are numbers (math-verify)


def final_answer(messages: list[dict]) -> str | None:
    """The `<answer>` of the rollout's last turn (None: no final turn, or no answer in it)."""
    turn = final_turn(messages)
    return None if turn is None else extract_answer(turn)


@reward(low=0.0, high=1.0, time_budget=math_answers.BUDGET_S, conversation=True)
def tool_answer_correctness(messages: list[dict], answer: str, environment: str = "", **row):
    """1.0 if the final answer equals the gold answer, else 0.0."""
    region = final_answer(messages)
    if region is None:
        return 0.0
    if environment == PYTHON_ENVIRONMENT:
        gold = math_answers.gold_value(str(answer))
        if gold:
            return 1.0 if math_answers.equal(gold, math_answers.read_final(region)) else 0.0
    gold_text = math_answers.gold_text(str(answer))
    return 1.0 if normalise_label(region) == normalise_label(gold_text) else 0.0


@reward(low=0.0, high=1.0, conversation=True)
def tool_call_format(messages: list[dict], **row) -> float:
    """0.5 for a well-formed (parsed) tool call, 0.5 for a final answer."""
    called = any(
        isinstance(c.get("function"), dict) and c["function"].get("name")
        for c in rollout_calls(messages)
    )
    return 0.5 * called + 0.5 * (final_answer(messages) is not None)


@reward(low=-1.0, high=0.0, conversation=True, metrics=budget_figures)
def tool_call_errors(messages: list[dict], **row) -> float:
    """Minus the share of tool results that are errors (0 without calls); calls cut by the
    tools' time budget are errors too."""
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
