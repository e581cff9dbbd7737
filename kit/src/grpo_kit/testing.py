"""The checks a project's own tests run on its task and rewards (and the kit's tests run on every
starter): the recipe parses against the installed TRL, every reward's ideal completion reaches
the top of its range, no completion makes a reward raise, return NaN or leave its range, 1 MB
completions in the shapes that make text handling slow are scored in linear time, and the whole
pipeline runs offline.

    checks = ProjectChecks(project_root)
    checks.ideal_completions_reach_the_top()

Hypothesis (a dev dependency of every project) drives the fuzzing; `GRPO_FUZZ_EXAMPLES` sets the
examples per reward (1000 by default; more for a slow run).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from .project import Project
from .project import load as load_project
from .rewards.judge import is_judge

__all__ = [
    "EXAMPLES",
    "ProjectChecks",
    "hostile",
    "share_cores_among_test_workers",
]

EXAMPLES = int(os.environ.get("GRPO_FUZZ_EXAMPLES", "1000"))
MB = 1_000_000
SLACK_S = 1.0  # over a reward's time budget (or none)

FRAGMENTS = [
    "<think>", "</think>", "<answer>", "</answer>", "```", "```python\n", "```json\n", "\n",
    "\\boxed{", "}", "{", "[", "]", '"', ":", ",", "42", "-3.5", "1/2", "\\frac{1}{2}", "$",
    "def f(x):\n    return x\n", "assert True\n", "import os\n", "while True: pass\n",
    '{"a": 1}', "null", "true", "World", "Sports", "\x00", "é", "答", "🤖", " " * 50,
]  # fmt: skip


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
        "fence then blanks": "```" + " " * (size - 3),
        "tagged fence then blanks": "```python" + " \t" * ((size - 9) // 2),
        "deep brackets": "[" * half + "]" * half,
        "deep objects": repeat('{"a": '),
        "boxed": repeat("\\boxed{"),
        "dollars": repeat("$"),
        "display math": repeat("\\["),
        "exponents": repeat("2^{"),
        "numbers": repeat("1,"),
        "minus signs": repeat("-"),
        "words": repeat("word "),
    }


class ProjectChecks:
    """The checks, for the project in `root` (its pyproject.toml [tool.grpo], its recipe), on its
    shipped sample data read with the sample's own columns."""

    def __init__(self, root: Path | str = ".", recipe_file: str = "configs/grpo.yaml") -> None:
        self.root = Path(root)
        self.recipe_file = recipe_file

    @cached_property
    def project(self) -> Project:
        return load_project(self.root)

    @cached_property
    def recipe(self):
        """The project's recipe (configs/grpo.yaml + configs/local.yaml), read as a CPU would read
        a GPU recipe, on the data the offline commands read: your own once the recipe names it
        (your columns, labels, schema), else the shipped sample with its own columns."""
        from .recipe import parse_recipe

        argv = ["--config", str(self.root / self.recipe_file)]
        return _in(self.root, lambda: parse_recipe(argv, read_only=True, project=self.project,
                                                   offline_data=True))  # fmt: skip

    @cached_property
    def rows(self) -> list[dict]:
        """The data's rows as training rows: chat prompt, gold answer, the task's columns."""
        from . import data

        recipe, task = self.recipe, self.project.task

        def load():
            rows = data.load_training_rows(recipe.script, recipe.task, task)
            return [dict(r) for r in data.to_conversations(rows, recipe.script, recipe.task, task)]

        return _in(self.root, load)

    def rewards(self) -> dict[str, Callable]:
        """{name: reward} of the task's rewards and metrics, with the recipe's settings bound."""
        from .rewards import bind

        settings = self.recipe.reward_settings()
        return {name: bind(f, settings) for name, f in self.project.task.reward_table.items()}

    def recipe_rewards(self) -> dict[str, Callable]:
        """The recipe's `reward_funcs`, resolved as training resolves them."""
        from .rewards import resolve

        names = self.recipe.script.reward_funcs
        table, settings = self.project.task.reward_table, self.recipe.reward_settings()
        return dict(zip(names, resolve(names, table, settings), strict=True))

    def ideal_completions_reach_the_top(self, limit: int = 64) -> None:
        """Every recipe reward gives every row's ideal completion the top of its range
        (a reward a perfect answer cannot max is a bug). A judge reward is left out: its grade
        is a model's opinion, checked by its agreement with your reference scores
        (`make reward-debug`), and its guarantees by grpo-kit's own tests."""
        from .rewards import call_like_trl

        rows = self.rows[:limit]
        task, args = self.project.task, self.recipe.task
        ideal = _in(self.root, lambda: [task.ideal_completion(row, args) for row in rows])
        for name, func in self.recipe_rewards().items():
            if is_judge(func):
                continue
            top = func.reward_range.high
            values = _in(self.root, lambda f=func: call_like_trl(f, ideal, rows))
            below = [(i, v) for i, v in enumerate(values) if v is not None and v != top]
            assert not below, f"{name}: ideal completions below {top:g}: {below[:5]}"
            assert any(v is not None for v in values), f"{name}: applied to no row"

    def rewards_never_fail(self, examples: int = EXAMPLES) -> None:
        """Random and hostile completions: never an exception, NaN or a value out of range."""
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        from .rewards import call_like_trl

        texts = st.one_of(
            st.text(max_size=2000),
            st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=40).map("".join),
            st.binary(max_size=500).map(lambda b: b.decode("utf-8", "replace")),
            st.builds(lambda f, n: f * n, st.sampled_from(FRAGMENTS), st.integers(100, 2000)),
        )
        row = self.rows[0]

        def property_of(name: str, func: Callable):
            low, high = func.reward_range.low, func.reward_range.high

            @settings(max_examples=examples, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))  # fmt: skip
            @given(completion=texts)
            def check(completion):
                [value] = call_like_trl(func, [completion], [row])
                if value is not None:
                    assert math.isfinite(value), name
                    assert low <= value <= high, (name, value)

            return check

        for name, func in self.rewards().items():
            if not is_judge(func):  # a judge asks a server: grpo-kit tests its guarantees
                _in(self.root, property_of(name, func))

    def runs_programs(self) -> set[str]:
        """The rewards whose work is running programs: they take the sandbox's limits (a
        `sandbox.Limits` among their recipe settings), whose time limit bounds them."""
        from .sandbox import Limits

        settings = self.recipe.reward_settings()
        return {
            name
            for name, func in self.project.task.reward_table.items()
            if any(isinstance(settings.get(k), Limits) for k in getattr(func, "settings", ()))
        }

    def large_completions_are_fast(self, size: int = MB, skip: tuple[str, ...] = ()) -> None:
        """Every reward scores each hostile shape of `size` characters within its time budget
        (plus SLACK_S), and 4x the text never takes anywhere near 16x the time (a quadratic scan
        would). Times are the CPU time of the thread scoring (what budgets count), so a loaded
        machine does not fail the check. The rewards that run programs (`runs_programs`: the
        sandbox's time limit bounds them) and those in `skip` are scored but not timed."""
        from .rewards import call_like_trl

        skip = (*skip, *self.runs_programs())
        row = self.rows[0]
        small, large = hostile(size // 4), hostile(size)
        for name, func in self.rewards().items():
            if is_judge(func):  # a server's time, not a parser's (its batch budget bounds it)
                continue
            low, high = func.reward_range.low, func.reward_range.high
            for shape, completion in large.items():
                start = time.thread_time()
                [value] = _in(self.root, lambda f=func, c=completion: call_like_trl(f, [c], [row]))
                elapsed = time.thread_time() - start
                if value is not None:
                    assert math.isfinite(value) and low <= value <= high, (name, shape, value)
                if name in skip:
                    continue
                assert elapsed < (func.time_budget or 0.0) + SLACK_S, (name, shape, elapsed)
                if func.time_budget is None:  # budgeted parsers are bounded by their budget
                    quarter = best_time(func, small[shape], row)
                    whole = best_time(func, completion, row)
                    assert whole < 8 * quarter + 0.02, (name, shape, quarter, whole)

    def judged_locally(self, completions: list[str]) -> dict[str, tuple[list, dict[str, float]]]:
        """The task's judge rewards (those reading their server from the recipe:
        `rewards.judge.ENDPOINT_SETTINGS`) scoring `completions` (one per data row, from the
        first) through a real `transformers serve` on a tiny random judge, as `make smoke`
        serves them, never a mock: {name: (scores, the metrics it logged)}. The tiny judge's
        replies are noise (parse errors, rows None): this checks the plumbing and the
        metrics, not judgement. Needs `grpo-kit[judge]`."""
        from .offline.judge_server import local_judge_rewards, serve_task_judges
        from .recipe import parse_recipe
        from .rewards import bind

        argv = ["--config", str(self.root / self.recipe_file), "--smoke"]
        project, rows = self.project, self.rows[: len(completions)]
        names = local_judge_rewards(project.task)

        def score() -> dict:
            found = {}
            with serve_task_judges(project) as served:
                served_recipe = parse_recipe(
                    [*argv, *served], read_only=True, project=project, offline_data=True
                )
                settings = served_recipe.reward_settings()
                for name in names:
                    func = bind(project.task.reward_table[name], settings)
                    logged: dict[str, float] = {}
                    scores = func(
                        prompts=[row.get("prompt", []) for row in rows],
                        completions=[[{"role": "assistant", "content": c}] for c in completions],
                        log_metric=logged.__setitem__,
                    )
                    found[name] = (scores, logged)
            return found

        return _in(self.root, score)

    def smoke(self, output_dir: Path, *overrides: str) -> list:
        """The offline pipeline (grpo smoke): train 2 steps -> merge -> infer on the tiny model,
        into `output_dir`; returns the answers."""
        from .commands import smoke

        argv = ["--config", self.recipe_file, "--output_dir", str(output_dir), *overrides]
        return _in(self.root, lambda: smoke.pipeline(argv))


def share_cores_among_test_workers(environ=None, cores: int | None = None) -> int | None:
    """Under pytest-xdist, set OMP_NUM_THREADS to the cores shared among the workers (at least
    1) unless it is set; returns the count set, else None. Call it from a conftest before
    anything imports torch (torch reads it once; child processes inherit it). torch takes every
    core in each process by default, so two workers on two cores ran four busy threads and
    every training test ran two to three times slower than alone."""
    environ = os.environ if environ is None else environ
    workers = environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not workers.isdigit() or environ.get("OMP_NUM_THREADS"):
        return None
    threads = max(1, (cores or os.cpu_count() or 1) // max(1, int(workers)))
    environ["OMP_NUM_THREADS"] = str(threads)
    return threads


def best_time(func, completion: str, row: dict, repeats: int = 3) -> float:
    """The least CPU time (of this thread, what the reward budgets count) of `repeats`
    scorings."""
    from .rewards import call_like_trl

    best = math.inf
    for _ in range(repeats):
        start = time.thread_time()
        call_like_trl(func, [completion], [row])
        best = min(best, time.thread_time() - start)
    return best


def _in(folder: Path, work: Callable):
    """Run `work()` with `folder` as the current directory (recipes name relative paths)."""
    previous = Path.cwd()
    os.chdir(folder)
    try:
        return work()
    finally:
        os.chdir(previous)
