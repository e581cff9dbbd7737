"""Property test: no completion makes a reward raise, return NaN/inf or leave its range; and
1 MB completions in the shapes that make text handling slow are scored in linear time.

`GRPO_FUZZ_EXAMPLES` sets the examples per reward (1000 by default; more for a slow run, e.g.
`GRPO_FUZZ_EXAMPLES=20000 make test`).
"""

import math
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from {{ cookiecutter.package_name }}.rewards import REGISTRY, bind, call_like_trl

EXAMPLES = int(os.environ.get("GRPO_FUZZ_EXAMPLES", "1000"))

FRAGMENTS = [
    "<think>", "</think>", "<answer>", "</answer>", "```", "```python\n", "```json\n", "\n",
    "\\boxed{", "}", "{", "[", "]", '"', ":", ",", "42", "-3.5", "1/2", "\\frac{1}{2}", "$",
    "def f(x):\n    return x\n", "assert True\n", "import os\n", "while True: pass\n",
    '{"a": 1}', "null", "true", "World", "Sports", "\x00", "é", "答", "🤖", " " * 50,
]  # fmt: skip

completions = st.one_of(
    st.text(max_size=2000),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=40).map("".join),
    st.binary(max_size=500).map(lambda b: b.decode("utf-8", "replace")),
    # one fragment many times over: unclosed tags, fences, brackets by the thousand
    st.builds(lambda f, n: f * n, st.sampled_from(FRAGMENTS), st.integers(100, 2000)),
)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_reward_never_fails_on_any_completion(name, sample_rows, recipe):
    func = bind(REGISTRY[name], recipe.reward_settings())
    row = sample_rows[0]
    low, high = func.reward_range.low, func.reward_range.high

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(completion=completions)
    def check(completion):
        [value] = call_like_trl(func, [completion], [row])
        if value is not None:
            assert math.isfinite(value)
            assert low <= value <= high

    check()


MB = 1_000_000


def hostile(size: int) -> dict[str, str]:
    """Completions of about `size` characters in the shapes that make text handling slow when it
    scans back and forth: unclosed, nested and stray tags, fences, deep brackets, LaTeX openings."""

    def repeat(unit: str) -> str:
        return unit * max(1, size // len(unit))

    half = size // 2
    return {
        "unclosed answer": repeat("<answer>"),
        "unclosed think": repeat("<think>"),
        "nested tags": repeat("<answer><think>"),
        "closing tags": repeat("</answer></think>"),
        "closed then unclosed": "<answer>1</answer>" + repeat("<answer>"),
        "long answer": "<think>x</think><answer>" + repeat("x") + "</answer>",
        "json fences": repeat("```json\n"),
        "python fences": repeat("```python\n"),
        "bare fences": repeat("```"),
        "deep brackets": "[" * half + "]" * half,
        "deep objects": repeat('{"a": '),
        "boxed": repeat("\\boxed{"),
        "dollars": repeat("$"),
        "display math": repeat("\\["),
        "exponents": repeat("2^{"),
        "numbers": repeat("1,"),
        "words": repeat("word "),
    }


# Rewards whose work is running programs (the code sandbox, with its own time limit), left out
# of the timings below.
NOT_TEXT_HANDLING = {"code_correctness"}
SLACK_S = 1.0  # over a reward's time budget (or none), for a loaded machine


@pytest.mark.parametrize("shape", sorted(hostile(1)))
def test_every_reward_scores_1mb_hostile_completions(shape, sample_rows, recipe):
    """In range, and within the reward's time budget (math-verify's work included)."""
    row = sample_rows[0]
    completion = hostile(MB)[shape]
    for name, func in sorted(REGISTRY.items()):
        start = time.perf_counter()
        [value] = call_like_trl(bind(func, recipe.reward_settings()), [completion], [row])
        elapsed = time.perf_counter() - start
        if value is not None:
            assert math.isfinite(value), name
            assert func.reward_range.low <= value <= func.reward_range.high, (name, value)
        if name not in NOT_TEXT_HANDLING:
            assert elapsed < (func.time_budget or 0.0) + SLACK_S, (name, elapsed)


def _best_time(func, completion: str, row: dict, repeats: int = 3) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call_like_trl(func, [completion], [row])
        best = min(best, time.perf_counter() - start)
    return best


def test_text_handling_is_linear_in_the_completion(sample_rows, recipe, monkeypatch):
    """Every reward scores each 1 MB hostile completion fast, math-verify's work aside (the
    target is 50 ms; the bound here is looser, for loaded machines), and 4x the text never takes
    anywhere near 16x the time (a quadratic scan would)."""
    from {{ cookiecutter.package_name }} import rewards

    row = sample_rows[0]
    math_rewards = getattr(rewards, "math_rewards", None)
    if math_rewards is not None:
        math_rewards.gold_value(str(row["answer"]))  # read (and cached) before the stubs
        monkeypatch.setattr(math_rewards, "parse", lambda *args, **kwargs: [])
        monkeypatch.setattr(math_rewards, "verify", lambda *args, **kwargs: False)
    small, large = hostile(MB // 4), hostile(MB)
    timings = []
    for name, func in sorted(REGISTRY.items()):
        if name in NOT_TEXT_HANDLING:
            continue
        bound = bind(func, recipe.reward_settings())
        for shape in large:
            quarter = _best_time(bound, small[shape], row)
            whole = _best_time(bound, large[shape], row)
            timings.append((whole, name, shape))
            assert whole < 8 * quarter + 0.02, (name, shape, quarter, whole)
    slowest = max(timings)
    assert slowest[0] < 0.5, slowest
