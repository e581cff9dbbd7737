"""The tools task's rewards on agent rollouts shaped as TRL 1.16 hands them over: assistant
turns whose `tool_calls` TRL parsed, tool results (`{'error': ...}` when a call failed), then
the final turn."""

import pytest
from conftest import chdir, rows_of, sample_recipe
from grpo_kit.environments import execute
from grpo_kit.rewards import bind, call_like_trl, resolve
from grpo_kit.starters.tools.rewards import (
    tool_answer_correctness,
    tool_call_cost,
    tool_call_errors,
    tool_call_format,
)
from grpo_kit.starters.tools.task import TASK


@pytest.fixture(scope="module")
def recipe(projects):
    """The tools project's recipe on its sample data."""
    return sample_recipe(projects("tools"))


@pytest.fixture(scope="module")
def sample_rows(recipe):
    return rows_of(recipe)


def call(name: str, **arguments) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": name, "arguments": arguments}}
    ]}  # fmt: skip


def result(text: str, name: str = "run_python") -> dict:
    return {"role": "tool", "name": name, "content": text}


def answer(text: str) -> dict:
    return {"role": "assistant", "content": f"<answer>{text}</answer>"}


def score(func, rollout, **row):
    row = {"answer": "42", "environment": "python", **row}
    return call_like_trl(func, [rollout], [row])[0]


def test_the_answer_is_read_with_math_verify_for_python_rows():
    rollout = [call("run_python", code="print(6 * 7)"), result("42"), answer("42.0")]
    assert score(tool_answer_correctness, rollout) == 1.0
    assert score(tool_answer_correctness, rollout, answer="Natalia sold 48 #### 42") == 1.0
    assert score(tool_answer_correctness, [answer("41")]) == 0.0


def test_python_answers_earn_no_credit_for_a_percent_or_a_false_relation():
    """The math task's rules hold in the final turn: `42%` is 42 (never 0.42), `41 = 42` is
    false, `x = 42` assigns; an answer inside the turn's reasoning does not count."""
    assert score(tool_answer_correctness, [answer("42%")]) == 1.0
    assert score(tool_answer_correctness, [answer("42%")], answer="0.42") == 0.0
    assert score(tool_answer_correctness, [answer("41 = 42")]) == 0.0
    assert score(tool_answer_correctness, [answer("x = 42")]) == 1.0
    hedged = {"role": "assistant", "content": "<think><answer>42</answer></think> 41"}
    assert score(tool_answer_correctness, [hedged]) == 0.0


def test_lookup_answers_and_labels_compare_as_normalised_text():
    assert score(tool_answer_correctness, [answer("**Supported**.")], answer="SUPPORTED",
                 environment="lookup") == 1.0  # fmt: skip
    assert score(tool_answer_correctness, [answer("not supported")], answer="SUPPORTED",
                 environment="lookup") == 0.0  # fmt: skip


def test_an_answer_only_counts_in_the_final_turn():
    # A rollout cut off after a call (its last message a tool result) has not answered.
    assert score(tool_answer_correctness, [answer("42"), call("run_python", code="1"),
                                           result("1")]) == 0.0  # fmt: skip
    assert score(tool_call_format, [call("run_python", code="1"), result("1")]) == 0.5


def test_format_gives_half_for_a_parsed_call_and_half_for_a_final_answer():
    assert score(tool_call_format, [call("search", query="x"), result("hits"), answer("a")]) == 1.0
    assert score(tool_call_format, [answer("a")]) == 0.5
    # A call TRL could not parse stays text in the content: no call credit.
    malformed = {"role": "assistant", "content": '<tool_call>{"name": "search"</tool_call>'}
    assert score(tool_call_format, [malformed]) == 0.0


def test_failed_calls_cost_their_share(recipe):
    unknown = execute({}, {"type": "function", "function": {"name": "nope", "arguments": {}}})
    assert unknown["content"] == str({"error": "Tool nope not found."})  # TRL's exact text
    rollout = [call("nope"), unknown, call("run_python", code="1"), result("1"), answer("1")]
    assert score(tool_call_errors, rollout) == -0.5
    assert score(tool_call_errors, [answer("1")]) == 0.0


def test_calls_past_the_free_ones_cost(recipe):
    cost = bind(tool_call_cost, {"tool_call_cost": 0.25, "free_tool_calls": 1})
    one, three = [call("a")], [call("a"), call("b"), call("c")]
    assert score(cost, one + [answer("1")]) == 0.0
    assert score(cost, three + [answer("1")]) == -0.5
    assert score(cost, [call("a")] * 40) == -1.0  # clamped to the range


@pytest.mark.parametrize("junk", [None, "", "text", 7, [{"role": "tool"}], [{"tool_calls": 3}]])
def test_junk_completions_score_in_range(junk):
    for func in (tool_answer_correctness, tool_call_format, tool_call_errors):
        value = score(func, junk)
        assert func.reward_range.low <= value <= func.reward_range.high


def test_every_ideal_rollout_maxes_every_reward_and_runs_its_calls(recipe, sample_rows):
    """The sample rows' ideal rollouts: their calls really ran (no error results), and every
    reward of the recipe gives them the top of its range."""
    rows = [dict(row) for row in sample_rows]
    with chdir(recipe.project.root):  # the lookup environment's corpus is the project's
        ideal = [TASK.ideal_completion(row, recipe.task) for row in rows]
    for row, rollout in zip(rows, ideal, strict=True):
        results = [m["content"] for m in rollout if m["role"] == "tool"]
        assert results and not any(r.startswith("{'error'") for r in results), (row, results)
    funcs = resolve(recipe.script.reward_funcs, TASK.reward_table, recipe.reward_settings())
    assert [f.__name__ for f in funcs] == [r.name for r in TASK.rewards]
    for func in funcs:
        values = call_like_trl(func, ideal, rows)
        assert values == [func.reward_range.high] * len(rows), func.__name__
