"""Property test, for every starter task's rewards and metrics: no completion makes a reward
raise, return NaN/inf or leave its range; and 1 MB completions in the shapes that make text
handling slow are scored in linear time (grpo_kit.testing's checks, the ones a project's own
tests run).

`GRPO_FUZZ_EXAMPLES` sets the examples per reward (1000 by default; more for a slow run, e.g.
`GRPO_FUZZ_EXAMPLES=20000 python -m pytest tests/test_reward_fuzz.py`).
"""

import pytest
from conftest import TASKS, chdir
from grpo_kit.testing import EXAMPLES, MB, ProjectChecks, best_time, hostile
from grpo_kit.verify import math as math_answers

# Rewards whose work is running programs (the code sandbox, with its own time limit), left out
# of the timings.
NOT_TEXT_HANDLING = ("code_correctness",)


@pytest.fixture(scope="module")
def checks(projects):
    """`checks(task)`: grpo_kit.testing's checks of that task's project."""
    made = {}

    def get(task: str) -> ProjectChecks:
        if task not in made:
            made[task] = ProjectChecks(projects(task))
        return made[task]

    return get


@pytest.mark.parametrize("task", TASKS)
def test_rewards_never_fail_on_any_completion(task, checks):
    """Random text, fragments of every task's syntax, broken UTF-8, one fragment by the
    thousand: never an exception, NaN or a value out of range."""
    found = checks(task)
    assert set(found.rewards()) == set(found.project.task.reward_table)
    found.rewards_never_fail(EXAMPLES)


@pytest.mark.parametrize("task", TASKS)
def test_every_reward_scores_1mb_hostile_completions(task, checks):
    """In range, and within the reward's time budget (math-verify's work included); rewards
    without a budget also in linear time."""
    assert {"unclosed answer", "deep brackets", "boxed", "words"} <= set(hostile(1))
    assert {"fence then blanks", "tagged fence then blanks"} <= set(hostile(1))  # issue 25 #9
    checks(task).large_completions_are_fast()


@pytest.mark.parametrize("task", TASKS)
def test_only_the_code_tasks_correctness_runs_programs(task, checks):
    """The rewards that run programs (left out of the timings) are found from their settings,
    so a project's test_project.py names none (every bake once skipped code_correctness)."""
    expected = set(NOT_TEXT_HANDLING) if task == "code" else set()
    assert checks(task).runs_programs() == expected


@pytest.mark.parametrize("task", TASKS)
def test_text_handling_is_linear_in_the_completion(task, checks, monkeypatch):
    """Every reward, the budgeted ones included, scores each 1 MB hostile completion fast with
    math-verify's work aside (the target is 50 ms; the bound here is looser, for loaded
    machines), and 4x the text never takes anywhere near 16x the time (a quadratic scan
    would)."""
    found = checks(task)
    row = found.rows[0]
    math_answers.gold_value(str(row["answer"]))  # read (and cached) before the stubs
    read_nothing = (lambda *args, **kwargs: [], lambda *args, **kwargs: False, [], [])
    monkeypatch.setattr(math_answers, "_math_verify", lambda: read_nothing)
    small, large = hostile(MB // 4), hostile(MB)
    timings = []
    with chdir(found.root):
        for name, func in sorted(found.rewards().items()):
            if name in NOT_TEXT_HANDLING:
                continue
            for shape in large:
                quarter = best_time(func, small[shape], row)
                whole = best_time(func, large[shape], row)
                timings.append((whole, name, shape))
                assert whole < 8 * quarter + 0.02, (name, shape, quarter, whole)
    slowest = max(timings)
    assert slowest[0] < 0.5, slowest
