"""Your agent's rewards on golden rollouts (TRL's message format: assistant turns with their
parsed `tool_calls`, tool results between them). Change these cases with the rewards."""

from grpo_kit.environments import ToolSettings, budget_cut_message, execute
from grpo_kit.rewards import bind, call_like_trl

from {{ cookiecutter.package_name }} import rewards


def call(name: str, **arguments) -> dict:
    calls = [{"type": "function", "function": {"name": name, "arguments": arguments}}]
    return {"role": "assistant", "content": "", "tool_calls": calls}


def result(text: str, name: str = "run_python") -> dict:
    return {"role": "tool", "name": name, "content": text}


def answer(text: str) -> dict:
    return {"role": "assistant", "content": f"<answer>{text}</answer>"}


def score(func, rollout, **row):
    return call_like_trl(func, [rollout], [{"answer": "42", "environment": "python", **row}])[0]


def test_the_answer_is_read_with_math_verify_for_python_rows():
    rollout = [call("run_python", code="print(6 * 7)"), result("42"), answer("42.0")]
    assert score(rewards.tool_answer_correctness, rollout) == 1.0
    assert score(rewards.tool_answer_correctness, [answer("41")]) == 0.0
    assert score(rewards.tool_answer_correctness, [answer("41 = 42")]) == 0.0  # a false relation
    assert score(rewards.tool_answer_correctness, [answer("42%")], answer="0.42") == 0.0


def test_lookup_answers_and_labels_compare_as_normalised_text():
    row = {"answer": "SUPPORTED", "environment": "lookup"}
    assert score(rewards.tool_answer_correctness, [answer("**Supported**.")], **row) == 1.0
    assert score(rewards.tool_answer_correctness, [answer("not supported")], **row) == 0.0


def test_format_errors_and_cost():
    rollout = [call("search", query="x"), result("hits"), answer("a")]
    assert score(rewards.tool_call_format, rollout) == 1.0
    assert score(rewards.tool_call_format, [answer("a")]) == 0.5
    unknown = execute({}, {"type": "function", "function": {"name": "nope", "arguments": {}}})
    assert score(rewards.tool_call_errors, [call("nope"), unknown, *rollout]) == -0.5
    cost = bind(rewards.tool_call_cost, {"tool_call_cost": 0.25, "free_tool_calls": 1})
    assert score(cost, [call("a"), call("b"), call("c"), answer("1")]) == -0.5


def test_a_call_cut_by_the_tools_time_budget_is_a_failed_call():
    cut = result(str({"error": budget_cut_message(ToolSettings())}))
    rollout = [call("run_python", code="while 1: 0"), cut, answer("42")]
    assert score(rewards.tool_call_errors, rollout) == -1.0
