"""The recipe's rewards, for every starter task: in the task's table with a range, maxed by
ideal completions, TRL's contract, hostile input; the shared format rewards and text helpers;
time budgets."""

import contextlib
import logging
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import CPU_RECIPE, TASKS, TOOLS_RECIPE, chdir, make_project, rows_of, sample_recipe
from grpo_kit.commands import reward_debug
from grpo_kit.errors import UserError
from grpo_kit.rewards import base, bind, call_like_trl, resolve, reward, time_budget
from grpo_kit.rewards.base import RewardTimeout
from grpo_kit.rewards.formats import partial_format, soft_overlong, strict_format
from grpo_kit.testing import ProjectChecks
from grpo_kit.verify.text import extract_answer, normalise_label

# The format rewards several tasks share, as a reward table (`resolve` looks names up in one).
FORMATS = {f.__name__: f for f in (strict_format, partial_format, soft_overlong)}


@pytest.fixture(scope="module")
def task_recipe(projects):
    """`task_recipe(task)`: (recipe, training rows) of that task's project, on its sample data."""
    made = {}

    def get(task: str):
        if task not in made:
            recipe = sample_recipe(projects(task))
            made[task] = (recipe, rows_of(recipe))
        return made[task]

    return get


NASTY = [
    "",
    " ",
    "\x00\x00",
    "<answer>",
    "</answer></answer><answer>",
    "<think><think><answer>1</answer>",
    "<answer>" + "9" * 5000 + "</answer>",
    "\\boxed{" * 200,
    "\\frac{\\frac{\\frac{1}{2}}{3}}{" * 50,
    "ünïcödé 答案 🤖 <answer>∞</answer>",
    "x" * 1_000_000,
    '{"a": ' * 500,
    "[" * 5000 + "]" * 5000,
    "```python\n" + "(" * 500 + "\n```",
    '<answer>```json\n{"a": 1\n```</answer>',
    "<think>" + "<answer>" * 1000,
]


@pytest.mark.parametrize("task", TASKS)
def test_every_recipe_reward_is_in_the_tasks_table_with_a_range(task, task_recipe):
    recipe, _ = task_recipe(task)
    table = recipe.project.task.reward_table
    assert recipe.script.reward_funcs
    for name in recipe.script.reward_funcs:
        assert name in table, name
        bounds = table[name].reward_range
        assert bounds.low < bounds.high


# The suite's CPU recipe keeps completions to 64 tokens, shorter than the code sample's reference
# solutions (soft_overlong counts characters / 4 without token ids); a generated project's recipe
# allows its task's answer length (the template gives code 768 tokens).
ANSWER_ROOM = CPU_RECIPE.replace("max_completion_length: 64", "max_completion_length: 768")


@pytest.mark.parametrize("task", TASKS)
def test_ideal_completions_reach_the_top_of_every_range(task, tmp_path):
    """The reward debug command on the sample data: every ideal completion maxes every reward
    (and grpo_kit.testing's check, which a project's own tests run, agrees)."""
    assert "max_completion_length: 768" in ANSWER_ROOM
    recipe = ANSWER_ROOM + (TOOLS_RECIPE if task == "tools" else "")
    root = make_project(tmp_path / task, task, recipe=recipe)
    with chdir(root):
        assert reward_debug.debug(["--limit", "2"])  # raises UserError when one is not
    ProjectChecks(root).ideal_completions_reach_the_top()


@pytest.mark.parametrize("task", TASKS)
def test_rewards_follow_trls_contract(task, task_recipe):
    recipe, rows = task_recipe(task)
    row = rows[0]
    table = recipe.project.task.reward_table
    with chdir(recipe.project.root):  # an agent's ideal rollout runs its tools there
        funcs = resolve(recipe.script.reward_funcs, table, recipe.reward_settings())
        ideal = recipe.project.task.ideal_completion(row, recipe.task)
        for func in funcs:
            values = call_like_trl(func, [ideal, "", "junk"], [row] * 3)
            assert len(values) == 3
            assert all(v is None or isinstance(v, float) for v in values)


@pytest.mark.parametrize("completion", NASTY, ids=range(len(NASTY)))
@pytest.mark.parametrize("task", TASKS)
def test_rewards_never_raise_and_stay_in_range(task, completion, task_recipe):
    recipe, rows = task_recipe(task)
    row = rows[0]
    with chdir(recipe.project.root):
        for name, func in recipe.project.task.reward_table.items():
            value = call_like_trl(bind(func, recipe.reward_settings()), [completion], [row])[0]
            if value is None:
                continue
            assert math.isfinite(value), name
            assert func.reward_range.low <= value <= func.reward_range.high, (name, value)


@pytest.mark.parametrize("task", TASKS)
def test_a_missing_column_is_a_configuration_error(task, task_recipe):
    recipe, _ = task_recipe(task)
    for func in recipe.project.task.reward_table.values():
        if func.required_columns:
            with pytest.raises(KeyError, match="needs dataset column"):
                bind(func, recipe.reward_settings())(["text"])


def test_resolve_table_names_and_dotted_paths(recipe):
    table = recipe.project.task.reward_table
    assert resolve(["partial_format"], table) == [table["partial_format"]]
    assert resolve(["os.path.basename"], table)[0].__name__ == "basename"
    with pytest.raises(UserError, match="unknown reward"):
        resolve(["no_such_reward"], table)
    with pytest.raises(UserError, match="cannot import"):
        resolve(["no_such_module.func"], table)
    with pytest.raises(UserError, match="has no function"):
        resolve(["os.no_such_function"], table)
    with pytest.raises(UserError, match="reward_funcs is empty"):
        resolve([], table)


def score(name: str, completion: str, **columns):
    return FORMATS[name]([completion], **{k: [v] for k, v in columns.items()})[0]


# --- format rewards shared by the tasks -------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>\nsteps\n</think>\n<answer>\n42\n</answer>", 1.0),
        ("<think>steps</think><answer>42</answer>", 1.0),
        ("steps</think>\n<answer>42</answer>", 1.0),  # <think> pre-filled by the chat template
        ("<answer>42</answer>", 0.0),
        ("<think>steps</think><answer>42</answer> and more", 0.0),
        ("<think>a</think><answer>1</answer><answer>2</answer>", 0.0),
        ("<think></think><answer>42</answer>", 0.0),
        ("<think>steps</think><answer>  </answer>", 0.0),
        ("x <think>steps</think><answer>42</answer>", 0.0),
    ],
)
def test_strict_format(completion, expected):
    assert score("strict_format", completion) == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>a</think><answer>1</answer>", 1.0),
        ("<think>a</think>", 0.5),
        ("<answer>1</answer>", 0.5),
        ("nothing", 0.0),
        ("<think>a</think><answer>1</answer>" + "z" * 100, 0.9),
        ("<think>a</think><answer>1</answer>" + "z" * 5000, 0.5),
        ("<answer>1</answer>" + "z" * 5000, 0.0),
    ],
)
def test_partial_format(completion, expected):
    assert score("partial_format", completion) == pytest.approx(expected)


# Cases of open-r1's tests/test_rewards.py (huggingface/open-r1): `format_reward` for the strict
# layout, `tag_count_reward` for the per-tag credit.
OPEN_R1_FORMAT = [
    ("<think>\nSome reasoning\n</think>\n<answer>\nThe answer\n</answer>", 1.0),
    ("<think>Only thinking</think>", 0.0),
    ("<answer>Only answer</answer>", 0.0),
    ("No tags at all", 0.0),
    ("<think>Missing closing</think><answer>Missing closing", 0.0),
    ("<think>Wrong order</answer><answer>Wrong order</think>", 0.0),
    (
        "<think>\nI will count each distinct object in the image:\n1. Purple scooter\n2. Red "
        "bicycle\n\nThere are 9 distinct objects in total.\n</think>\n<answer>\n9\n</answer>",
        1.0,
    ),
]
OPEN_R1_TAG_COUNT = [
    ("<think>\nSome reasoning\n</think>\n<answer>\nThe answer\n</answer>", 1.0),
    # Deliberate difference: open-r1 gives 0.75 here; thinking templates prefill `<think>` in the
    # prompt, so a completion that starts inside the block is complete (formats.partial_format).
    ("Some reasoning\n</think>\n<answer>\nThe answer\n</answer>", 1.0),
    ("<think>\nSome reasoning\n<answer>\nThe answer\n</answer>", 0.75),
    ("<think>\nSome reasoning\n</think>\nThe answer\n</answer>", 0.75),
    ("<think>\nSome reasoning\n</think>\n<answer>\nThe answer", 0.75),
    ("Some reasoning\nThe answer", 0.0),
]


@pytest.mark.parametrize(("completion", "expected"), OPEN_R1_FORMAT)
def test_strict_format_agrees_with_open_r1(completion, expected):
    assert score("strict_format", completion) == expected


@pytest.mark.parametrize(("completion", "expected"), OPEN_R1_TAG_COUNT)
def test_partial_format_agrees_with_open_r1_tag_count(completion, expected):
    assert score("partial_format", completion) == expected


@pytest.mark.parametrize(
    ("tokens", "expected"), [(0, 0.0), (96, 0.0), (112, -0.5), (128, -1.0), (500, -1.0)]
)
def test_soft_overlong(tokens, expected):
    func = resolve(["soft_overlong"], FORMATS, {"max_completion_length": 128})[0]
    value = func(["x"], completion_ids=[[1] * tokens])[0]
    assert value == pytest.approx(expected)


def test_soft_overlong_is_trls_dapo_punishment():
    """Numerically TRL's get_soft_overlong_punishment with the buffer a quarter of
    max_completion_length, at every length around the buffer and the limit; and the cases of
    TRL's and open-r1's own tests (max 100, cache 20: 50 -> 0, 90 -> -0.5, 110 -> -1), which
    are max_completion_length 80 here (80 // 4 = 20)."""
    from trl.rewards import get_soft_overlong_punishment

    for limit in (1, 2, 7, 80, 128, 1000, 4096):
        ours = resolve(["soft_overlong"], FORMATS, {"max_completion_length": limit})[0]
        trls = get_soft_overlong_punishment(limit, max(1, limit // 4))
        lengths = sorted({0, 1, *range(max(0, limit - limit // 4 - 3), limit + 4), 2 * limit})
        ids = [[7] * n for n in lengths]
        assert ours(["x"] * len(ids), completion_ids=ids) == trls(ids), limit
    at_80 = resolve(["soft_overlong"], FORMATS, {"max_completion_length": 80})[0]
    values = at_80(["x"] * 3, completion_ids=[[1] * 50, [1] * 70, [1] * 90])
    assert values == [0.0, pytest.approx(-0.5), -1.0]


# --- shared text handling --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer> 42 </answer>", "42"),
        ("<think>x</think><answer>1</answer> then <answer>2</answer>", "2"),
        ("<answer>1</answer><answer>2", "1"),  # the last block that is closed
        ("<answer>a<answer>b</answer>", "b"),  # an unclosed opening before it is not content
        ("<answer><answer>x</answer></answer>", "x"),
        ("<answer>x</answer></answer>", "x"),
        ("</answer><answer>", None),
        ("<answer>unclosed", None),
        ("no tags", None),
        ("<answer></answer>", ""),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("written", "label"),
    [
        ("Positive", "positive"),
        ("  positive.  ", "positive"),
        ('"positive"', "positive"),
        ("**positive**", "positive"),
        ("`Sci/Tech`", "sci/tech"),
        ("\uff50\uff4f\uff53\uff49\uff54\uff49\uff56\uff45", "positive"),
        ("po\u200bsi\u00adtive", "positive"),
        ("not   entailment", "not entailment"),
        ("positive-ish", "positive-ish"),
        ("NOT ENOUGH INFO", "not enough info"),
    ],
)
def test_normalise_label(written, label):
    """The one normaliser of the tasks that compare labels (classification, custom)."""
    assert normalise_label(written) == label


# --- time budgets ----------------------------------------------------------------------------


def _busy(seconds: float) -> None:
    """Work for `seconds` of this thread's CPU time (what budgets count)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_time_budget_interrupts_work_in_the_main_thread():
    start = time.monotonic()
    with pytest.raises(RewardTimeout), time_budget(0.2):
        _busy(30)
    assert time.monotonic() - start < 5
    with time_budget(0.5):  # no time left over from the last one
        _busy(0.3)


def test_time_budget_gets_through_code_that_swallows_exceptions():
    def stubborn():
        for _ in range(5):
            with contextlib.suppress(Exception):  # what libraries do; a budget gets through
                _busy(30)

    with pytest.raises(RewardTimeout), time_budget(0.2):
        stubborn()


def test_budgets_ending_as_their_timer_fires_leave_nothing_behind(monkeypatch):
    """Thousands of budgets whose timer fires about when the block ends or starts (on a busy
    machine, even inside `__enter__`): each ends in time or as RewardTimeout, nothing else
    escapes, no "signal ignored" report, no timer left running, the previous handler back."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    handler = signal.getsignal(signal.SIGALRM)
    rng = random.Random(0)
    escaped = []
    for _ in range(4000):
        try:
            with time_budget(0.0002):
                _busy(rng.uniform(0.00015, 0.00025))
        except RewardTimeout:
            pass
        except BaseException as err:  # the failure being tested for
            escaped.append(err)
            signal.setitimer(signal.ITIMER_REAL, 0)
    _busy(0.2)  # a timer left running would interrupt this
    assert not escaped
    assert not unraisable
    assert signal.getsignal(signal.SIGALRM) == handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_inner_budget_pauses_the_outer_one():
    with time_budget(0.6):
        with time_budget(0.5):
            _busy(0.4)
        _busy(0.4)  # 0.8 s in all: the inner block's time was not the outer's
    with pytest.raises(RewardTimeout), time_budget(0.3):
        with time_budget(1.0):
            _busy(0.1)
        _busy(30)


def test_time_budget_outside_the_main_thread_checks_afterwards():
    outcome = []

    def work():
        try:
            with time_budget(0.05):
                _busy(0.2)
        except RewardTimeout:
            outcome.append("timeout")
        with time_budget(5):
            outcome.append("ok")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert outcome == ["timeout", "ok"]


def test_a_reward_over_its_budget_scores_low_and_is_counted(caplog):
    @reward(low=-1.0, high=1.0, time_budget=0.2)
    def budget_probe(completion: str, **row) -> float:
        _busy(30 if completion == "slow" else 0)
        return 1.0

    logger = logging.getLogger(base.__name__)  # caught here even if logging was set up to
    logger.addHandler(caplog.handler)  # stop at the package (as training does)
    try:
        metrics = []
        values = budget_probe(
            ["fast", "slow", "fast"], log_metric=lambda *item: metrics.append(item)
        )
        assert values == [1.0, -1.0, 1.0]
        assert metrics == [
            ("rewards/budget_probe/timeouts", 1.0),
            ("rewards/budget_probe/errors", 0.0),
        ]
        assert "1 of 3 completion(s) ran past their time budget" in caplog.text
        metrics.clear()
        assert budget_probe(["fast"], log_metric=lambda *item: metrics.append(item)) == [1.0]
        assert metrics == [
            ("rewards/budget_probe/timeouts", 0.0),
            ("rewards/budget_probe/errors", 0.0),
        ]
    finally:
        logger.removeHandler(caplog.handler)


@contextlib.contextmanager
def loaded_cpu(loaders: int = 3):
    """This process and `loaders` busy processes pinned to one CPU: the host as loaded as it
    gets (this thread gets about 1/(loaders + 1) of the CPU), whatever the machine."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    spin = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(loaders)]
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.3)  # the loaders are spinning
        yield
    finally:
        os.sched_setaffinity(0, before)
        for process in busy:
            process.kill()
            process.wait()


def test_a_loaded_host_does_not_flip_a_verdict():
    """Issue 11: a budget counts the work's own CPU time, not the wall clock, so a completion
    whose work fits its budget on an idle machine still fits when the host is busy (here the
    work takes about 4x its CPU time on the wall clock, well past the budget)."""

    @reward(low=0.0, high=1.0, time_budget=0.3)
    def steady(completion: str, **row) -> float:
        _busy(0.15)  # half the budget, on an idle machine and on a busy one
        return 1.0

    metrics = []
    idle = steady(["a", "b"], log_metric=lambda *item: metrics.append(item))
    with loaded_cpu():
        start = time.monotonic()
        busy = steady(["a", "b"], log_metric=lambda *item: metrics.append(item))
        wall = time.monotonic() - start
    assert idle == busy == [1.0, 1.0]
    assert ("rewards/steady/timeouts", 1.0) not in metrics
    assert wall > 2 * 0.3, "the host was not loaded: the test proves nothing"


@pytest.mark.slow
def test_no_reward_verdict_changes_on_a_loaded_host(task_recipe):
    """Every task's rewards and metrics on the sample rows' ideal completions and on a few
    hostile ones: the same scores with the host idle and with this process sharing one CPU with
    three busy processes (the code sandbox's programs included)."""
    cases = []
    for task in TASKS:
        recipe, rows = task_recipe(task)
        project = recipe.project
        with chdir(project.root):
            funcs = ProjectChecks(project.root).rewards()
            chosen = [rows[i] for i in range(min(4, len(rows)))]
            ideal = [project.task.ideal_completion(row, recipe.task) for row in chosen]
        completions = [*ideal, *NASTY[:6]]
        cases.append((project.root, funcs, completions, [*chosen, *[chosen[0]] * 6]))

    def verdicts():
        found = []
        for root, funcs, completions, rows in cases:
            with chdir(root):
                for name, func in sorted(funcs.items()):
                    found.append((name, call_like_trl(func, completions, rows)))
        return found

    idle = verdicts()
    with loaded_cpu():
        busy = verdicts()
    assert busy == idle


def test_a_budget_still_stops_work_that_waits():
    """Work that blocks instead of computing is stopped at WALL_FACTOR x its budget."""
    start = time.monotonic()
    with pytest.raises(RewardTimeout), time_budget(0.05):
        time.sleep(30)
    assert time.monotonic() - start < 0.05 * base.WALL_FACTOR + 2


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_failing_completion_scores_low_alone_and_every_failure_is_counted():
    """Issue 25 #4: a batched scorer that raises on one completion is called again on each
    completion alone, so its batch neighbours keep their scores; every call's failures are a
    TRL metric and a warning (not one warning per process)."""
    seen = []

    @reward(low=0.0, high=1.0, batched=True)
    def fragile_batch(completions: list[str], answer: list[str], **columns) -> list[float]:
        seen.append(len(completions))
        if any(c == "boom" for c in completions):
            raise RecursionError("maximum recursion depth exceeded")
        return [1.0 if c == a else 0.0 for c, a in zip(completions, answer, strict=True)]

    @reward(low=0.0, high=1.0)
    def fragile_one(completion: str, **row) -> float:
        if completion == "boom":
            raise MemoryError
        return 1.0

    logger, lines = logging.getLogger(base.__name__), _Lines()
    logger.addHandler(lines)
    try:
        for func in (fragile_batch, fragile_one):
            for _ in range(2):
                metrics = []
                values = func(
                    ["x", "boom", "y"],
                    answer=["x", "boom", "z"],
                    log_metric=lambda *item, m=metrics: m.append(item),
                )
                assert values == [1.0, 0.0, 1.0 if func is fragile_one else 0.0]
                assert (f"rewards/{func.__name__}/errors", 1.0) in metrics
            failed = [
                line for line in lines.lines if f"reward {func.__name__} failed on 1 of 3" in line
            ]
            assert len(failed) == 2
        assert seen[:4] == [3, 1, 1, 1]  # the batch, then each completion alone
        wrong_size = reward(low=0.0, high=1.0, batched=True)(lambda completions, **c: [1.0])
        assert wrong_size(["a", "b"]) == [1.0, 1.0]  # alone, each gets its one score
    finally:
        logger.removeHandler(lines)


def test_per_completion_figures_are_logged_as_metrics():
    def figures(text: str) -> dict:
        if text == "odd":
            raise ValueError("no figures")
        return {"probe/length": len(text), "probe/junk": "not a number"}

    @reward(low=0.0, high=1.0, metrics=figures)
    def measured(completion: str, **row) -> float:
        return 1.0

    metrics = []
    assert measured(["ab", "abcd", "odd", ""], log_metric=lambda *i: metrics.append(i)) == [1.0] * 4
    assert ("probe/length", 1.5) in metrics  # (2 + 4 + 0 + 0) / 4: a failure counts 0
    assert not any(name == "probe/junk" for name, _ in metrics)


def test_recipe_settings_are_passed_in_never_module_state():
    """A reward with parameters refuses to run without them, and no module of the kit (its
    starters included) keeps settings in a global that an earlier call could have left behind."""
    import ast
    from pathlib import Path

    import grpo_kit as package

    with pytest.raises(TypeError, match="needs the settings"):
        soft_overlong(["x"], completion_ids=[[1]])
    with pytest.raises(UserError, match="needs the settings"):
        resolve(["soft_overlong"], FORMATS, {})
    for path in Path(package.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not any(isinstance(node, ast.Global) for node in ast.walk(tree)), path
