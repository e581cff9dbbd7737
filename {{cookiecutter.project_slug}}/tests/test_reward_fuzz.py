"""Property test: no completion makes a reward raise, return NaN/inf or leave its range.

`GRPO_FUZZ_EXAMPLES` sets the examples per reward (1000 by default; more for a slow run, e.g.
`GRPO_FUZZ_EXAMPLES=20000 make test`).
"""

import math
import os

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
