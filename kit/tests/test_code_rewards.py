"""Code rewards on golden completions (MBPP- and HumanEval-style tests), the judge's semantics,
and the data checks that run before any model loads."""

import ast
import dataclasses
import json
import re

import pytest
from conftest import rows_of, sample_recipe
from grpo_kit import data, sandbox
from grpo_kit.rewards import call_like_trl, resolve
from grpo_kit.starters.code.rewards import code_block_format
from grpo_kit.starters.code.task import SHOWN_TESTS, TASK, TaskArguments, reward_settings
from grpo_kit.testing import hostile
from grpo_kit.verify.code import code_blocks, parse_tests, program_for, unimplemented

TESTS = json.dumps(["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 5) == 5"])
LIMITS = sandbox.Limits(timeout=10.0, workers=1)


def answer(code: str) -> str:
    return f"<think>add them</think>\n<answer>\n```python\n{code}\n```\n</answer>"


@pytest.fixture(scope="module")
def correctness():
    return resolve(["code_correctness"], TASK.reward_table, TASK.reward_settings(TaskArguments()))[
        0
    ]


@pytest.fixture(scope="module")
def recipe(projects):
    """The code project's recipe on its sample data (MBPP rows)."""
    return sample_recipe(projects("code"))


@pytest.fixture(scope="module")
def sample_rows(recipe):
    return rows_of(recipe)


def score(func, completion: str, tests: str = TESTS, **columns):
    batch = {k: [v] for k, v in columns.items()}
    return func([completion], answer=[tests], **batch)[0]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (answer("def add(a, b):\n    return a + b"), 1.0),
        (answer("def add(a, b):\n    return a + b if a < 2 else 0"), pytest.approx(2 / 3)),
        (answer("def add(a, b):\n    return a - b"), 0.0),
        (answer("def add(a, b) return"), 0.0),  # syntax error
        ("def add(a, b):\n    return a + b", 0.0),  # no code block
        ("```python\ndef add(a, b):\n    return a + b\n```", 1.0),  # no tags: still scored
        (answer("import sys\nsys.exit(0)"), 0.0),
    ],
)
def test_code_correctness(correctness, completion, expected):
    assert score(correctness, completion) == expected


def test_setup_code_runs_before_the_tests(correctness):
    tests = json.dumps(["assert add(1, 1) == OFFSET + 2"])
    code = answer("def add(a, b):\n    return a + b + OFFSET")
    assert score(correctness, code, tests, setup="OFFSET = 10") == 1.0
    assert score(correctness, code, tests) == 0.0


def test_humaneval_style_check_function(correctness):
    tests = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
    good = answer("def square(x):\n    return x * x")
    bad = answer("def square(x):\n    return x + x")
    assert score(correctness, good, tests, entry_point="square") == 1.0
    assert score(correctness, bad, tests, entry_point="square") == 0.0


STUB = 'def double(x):\n    return 2 * x\n\n\ndef quadruple(x):\n    """Twice double(x)."""\n'
HELPER_TESTS = "def check(candidate):\n    assert candidate(3) == double(double(3))\n"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (STUB + "    return double(double(x))\n", 1.0),  # the whole function
        ("    return double(double(x))\n", 1.0),  # only its body (HumanEval completions)
        ("return double(double(x))\n", 1.0),  # a body written without indentation
        ("def quadruple(x):\n    return 4 * x\n", 1.0),  # without the stub's helper
        ("    return 0\n", 0.0),
        # Changing the helper the tests call does not help: the judge runs the stub's own.
        ("def double(x):\n    return 0\n\ndef quadruple(x):\n    return 0\n", 0.0),
    ],
    ids=["function", "body", "unindented-body", "no-helper", "wrong", "redefined-helper"],
)
def test_stub_completions_and_trusted_helpers(correctness, code, expected):
    columns = {"entry_point": "quadruple", "stub": STUB}
    assert score(correctness, answer(code), HELPER_TESTS, **columns) == expected


def test_unimplemented_functions_of_a_stub():
    assert unimplemented(STUB) == ("quadruple",)
    assert unimplemented("def f():\n    pass\n\ndef g():\n    ...\n") == ("f", "g")
    assert unimplemented("not python (") == ()
    assert program_for("x = 1\n") == "x = 1\n"
    assert program_for("def quadruple(x):\n    return 4\n", STUB, "quadruple").startswith("def q")


def test_batch_is_scored_in_order(correctness):
    completions = [answer("def add(a, b):\n    return a + b"), "no code", answer("x = 1")]
    assert correctness(completions, answer=[TESTS] * 3) == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (answer("x = 1"), 1.0),
        ("<answer>```python\nx = 1\n``` and text</answer>", 0.5),
        ("<answer>```python\nx = 1\n```\n```python\ny = 2\n```</answer>", 0.0),
        ("```python\nx = 1\n```", 0.0),  # not in an answer block
        ("<answer>no code</answer>", 0.0),
    ],
)
def test_code_block_format(completion, expected):
    assert code_block_format([completion])[0] == expected


def test_parse_tests_reads_lists_and_lines():
    assert parse_tests(TESTS) == json.loads(TESTS)
    assert parse_tests("assert f(1)\n\nassert f(2)") == ["assert f(1)", "assert f(2)"]
    assert code_blocks("<answer>```py\na\n```</answer>") == ["a\n"]


def test_every_sample_reference_solution_gets_full_credit(recipe, sample_rows, correctness):
    """The shipped MBPP rows, through the loader and the reward as TRL calls it."""
    rows = [sample_rows[i] for i in range(len(sample_rows))]
    ideal = [TASK.ideal_completion(row, recipe.task) for row in rows]
    assert call_like_trl(correctness, ideal, rows) == [1.0] * len(rows)
    wrong = [text.replace("return", "return None and") for text in ideal]
    assert max(call_like_trl(correctness, wrong, rows)) < 1.0


# --- graded on tests the prompt does not show (issue 25 #3) -------------------------------------


def shown_tests(row: dict) -> list[str]:
    """The asserts the row's prompt shows (its user message's `assert` lines)."""
    message = row["prompt"][-1]["content"]
    return [line.strip() for line in message.splitlines() if line.startswith("assert ")]


def lookup_table(tests: list[str]) -> str:
    """A program that only knows the shown `assert f(args) == value` examples: it answers those
    calls from a table and raises on any input it has not seen (what a policy learns when the
    prompt shows the tests it is graded on)."""
    table, name = [], ""
    for test in tests:
        check = ast.parse(test).body[0].test
        call, expected = check.left, check.comparators[0]
        name = call.func.id
        args = ", ".join(ast.unparse(a) for a in call.args)
        table.append(f"    if list(args) == [{args}]:\n        return {ast.unparse(expected)}\n")
    body = "".join(table)
    return f"def {name}(*args):\n{body}    raise ValueError('not in the table')\n"


def test_the_prompt_shows_one_example_and_the_grade_uses_every_test(recipe, sample_rows):
    for row in sample_rows:
        shown = shown_tests(row)
        graded = json.loads(row["answer"]) + json.loads(row["extra_tests"])
        assert len(shown) == SHOWN_TESTS == 1 and shown[0] == graded[0].strip()
        assert len(graded) >= 3 and not any(t.strip() in shown for t in graded[1:])
    challenged = [r for r in sample_rows if json.loads(r["extra_tests"])]
    assert len(challenged) == 4  # MBPP rows 11, 16, 20 and 23 have challenge tests


def test_a_lookup_table_of_the_shown_example_earns_no_full_credit(sample_rows, correctness):
    """Acceptance: on every sample MBPP row a program built from the example its prompt shows
    scores below 0.5 (it scored 1.0 on all 24 when the prompt listed every graded test), while
    the reference solutions still score 1.0
    (test_every_sample_reference_solution_gets_full_credit)."""
    rows = list(sample_rows)
    programs = [answer(lookup_table(shown_tests(row))) for row in rows]
    scores = call_like_trl(correctness, programs, rows)
    assert all(0 < value < 0.5 for value in scores), scores  # it passes its own example only


def test_challenge_tests_are_graded(correctness):
    """A program that passes `test_list` but not the hidden challenge tests loses credit."""
    tests = json.dumps(["assert remove_Occ('hello', 'l') == 'heo'"])
    extra = json.dumps(["assert remove_Occ('', 'l') == ''"])
    naive = answer("def remove_Occ(s, ch):\n    return s[:2] + s[4] if s else 1 / 0")
    assert score(correctness, naive, tests) == 1.0
    assert score(correctness, naive, tests, extra_tests=extra) == 0.5
    assert score(correctness, naive, tests, extra_tests="[]") == 1.0


def test_bad_challenge_tests_are_data_errors(recipe, tmp_path):
    good = row(["assert add(1, 1) == 2"], challenge_test_list=["assert add(0, 0) == 0"])
    bad = row(["assert add(1, 1) == 2"], challenge_test_list=["add(0, 0)"])
    path = write(tmp_path, [good, bad])
    script = dataclasses.replace(recipe.script, dataset_name=path)
    message = "row 2: column 'challenge_test_list', test 1 has no assert"
    with pytest.raises(data.DataError, match=re.escape(message)):
        data.load_training_rows(script, recipe.task, TASK)
    data.load_training_rows(dataclasses.replace(script, dataset_name=write(tmp_path, [good])),
                            recipe.task, TASK)  # fmt: skip


# --- the trainer's side of a completion cannot fail its batch (issue 25 #4) ---------------------


@pytest.mark.parametrize(
    "hostile_program",
    ["x = " + "-" * 3000 + "1", "x = " + "-" * 100_000 + "1", "(" * 300 + ")" * 300],
    ids=["RecursionError", "MemoryError", "SyntaxError"],
)
def test_a_program_python_cannot_parse_scores_zero_alone(correctness, hostile_program):
    """With a stub (HumanEval rows), the trainer parses the completion's block to see whether
    it holds the whole function; Python's parser raises RecursionError or MemoryError on some
    texts. That completion scores 0, its batch neighbours keep their scores."""
    stub = 'def square(x):\n    """The square of x."""\n'
    tests = "def check(candidate):\n    assert candidate(3) == 9\n"
    good = answer("def square(x):\n    return x * x")
    completions = [good, answer(hostile_program), good]
    metrics = []
    columns = {"entry_point": ["square"] * 3, "stub": [stub] * 3}
    log = metrics.append
    values = correctness(completions, answer=[tests] * 3, log_metric=lambda *i: log(i), **columns)
    assert values == [1.0, 0.0, 1.0]
    assert ("rewards/code_correctness/errors", 0.0) in metrics  # parsed as "does not parse"


def test_fences_followed_by_a_megabyte_of_blanks_are_read_in_linear_time():
    """Issue 25 #9: the fence patterns are possessive, so "```" and a long run of blanks without
    a newline cannot backtrack (1 MB here; the timing is test_reward_fuzz's, on these shapes)."""
    shapes = hostile(1_000_000)
    assert {"fence then blanks", "tagged fence then blanks"} <= set(shapes)
    for shape in ("fence then blanks", "tagged fence then blanks"):
        assert code_blocks(shapes[shape]) == []
        assert code_blocks(shapes[shape][:1000] + "\nx = 1\n```") == ["x = 1\n"]


# --- what the judge compares: values, whatever their type, never the program's objects ---------

JUDGE_CASES = {
    "tuple-not-list": ("def f():\n    return (1, 2)\n", ["assert f() == (1, 2)",
                                                         "assert f() != [1, 2]"]),
    "set-and-frozenset": ("def f():\n    return {1, 2}, frozenset({3})\n",
                          ["assert f() == ({2, 1}, frozenset([3]))"]),
    "dict-keys-of-any-type": ("def f():\n    return {(1, 2): [3], None: b'x'}\n",
                              ["assert f() == {(1, 2): [3], None: b'x'}"]),
    "big-int-and-floats": ("def f():\n    return 2 ** 200, float('inf'), -0.0, 0.1 + 0.2\n",
                           ["assert f()[:3] == (2 ** 200, float('inf'), 0.0)",
                            "import math\nassert math.isclose(f()[3], 0.3)",
                            "import math\nassert math.copysign(1, f()[2]) == -1"]),
    "nan": ("def f():\n    return float('nan')\n", ["assert f() != f()"]),
    "fraction-decimal": ("from fractions import Fraction\nfrom decimal import Decimal\n"
                         "def f():\n    return Fraction(1, 3), Decimal('0.1') + Decimal('0.2')\n",
                         ["from fractions import Fraction\nfrom decimal import Decimal\n"
                          "assert f() == (Fraction(2, 6), Decimal('0.3'))"]),
    "namedtuple": ("from collections import namedtuple\nP = namedtuple('P', 'x y')\n"
                   "def f():\n    return P(1, 2)\n",
                   ["assert f() == (1, 2)", "assert f().y == 2"]),
    "collections": ("from collections import Counter, OrderedDict, deque, defaultdict\n"
                    "def f():\n    d = defaultdict(list)\n    d['a'].append(1)\n"
                    "    return Counter('aab'), OrderedDict(a=1), deque([1, 2]), d\n",
                    ["from collections import Counter, deque\n"
                     "assert f() == (Counter(a=2, b=1), {'a': 1}, deque([1, 2]), {'a': [1]})"]),
    "datetime": ("import datetime\ndef f():\n    return datetime.date(2024, 2, 29) + "
                 "datetime.timedelta(days=1)\n",
                 ["import datetime\nassert f() == datetime.date(2024, 3, 1)"]),
    "in-place-mutation": ("def f(items):\n    items.sort()\n",
                          ["x = [3, 1, 2]\nf(x)\nassert x == [1, 2, 3]"]),
    "generator": ("def f(n):\n    yield from range(n)\n",
                  ["assert list(f(3)) == [0, 1, 2]", "assert sum(f(4)) == 6"]),
    "expected-exception": ("def f(x):\n    if x < 0:\n        raise ValueError('negative')\n"
                           "    return x\n",
                           ["try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n"
                            "    raise AssertionError('no error')"]),
    "program-classes": ("class Pair:\n    def __init__(self, a, b):\n"
                        "        self.a, self.b = a, b\n"
                        "def longest(pairs):\n    return max(p.b - p.a for p in pairs)\n",
                        ["assert longest([Pair(1, 5), Pair(2, 3)]) == 4",
                         "assert Pair(1, 2).b == 2"]),
    "program-constants-and-modules": ("import math\nLIMIT = 10\ndef f():\n    return math.pi\n",
                                      ["assert LIMIT == 10",
                                       "assert math.isclose(f(), 3.14159, rel_tol=1e-5)"]),
    # The tests' built-ins and standard modules are Python's, whatever the program redefines.
    "builtins-stay-builtins": ("def max(items):\n    return 'mine'\nmath = None\n",
                               ["assert max([1]) == 1", "assert math.sqrt(4) == 2"]),
    "keyword-arguments": ("def f(a, *, b=2):\n    return a * b\n", ["assert f(3, b=4) == 12"]),
    "main-guard-not-run": ("def f():\n    return 1\nif __name__ == '__main__':\n    input()\n",
                           ["assert f() == 1"]),
}  # fmt: skip


@pytest.mark.parametrize("case", JUDGE_CASES, ids=JUDGE_CASES)
def test_the_judge_compares_values_like_python(case):
    program, tests = JUDGE_CASES[case]
    run = sandbox.run_tests(program, tests, limits=LIMITS)
    assert run.verdicts == (True,) * len(tests), run


def test_program_objects_equal_only_themselves():
    program = (
        "class Point:\n    def __init__(self, x):\n        self.x = x\n"
        "    def __eq__(self, other):\n        return True\n"
        "ORIGIN = Point(0)\ndef f():\n    return ORIGIN\ndef g():\n    return Point(0)\n"
    )
    tests = ["assert f() == ORIGIN", "assert f() is ORIGIN", "assert g() == ORIGIN",
             "assert g() == 0", "assert f().x == 0"]  # fmt: skip
    run = sandbox.run_tests(program, tests, limits=LIMITS)
    assert run.verdicts == (True, True, False, False, True)


def test_tests_without_an_assert_never_pass():
    run = sandbox.run_tests("def f():\n    return 1\n", ["42", "None", "f()", "assert f()"],
                            limits=LIMITS)  # fmt: skip
    assert run.verdicts == (False, False, False, True)
    assert "no assert" in sandbox.test_problem("f()")


def test_program_errors_are_reported():
    run = sandbox.run_tests("def f(:\n", ["assert f()"], limits=LIMITS)
    assert run.passed == 0 and "SyntaxError" in run.error
    run = sandbox.run_tests("def f():\n    return 1 / 0\n", ["assert f()"], limits=LIMITS)
    assert "ZeroDivisionError: division by zero" in run.error


# --- bad test data is a data error, before any model loads -----------------------------------


def write(tmp_path, rows) -> str:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def row(tests, **extra) -> dict:
    return {"text": "Add.", "code": "def add(a, b):\n    return a + b", "test_list": tests,
            "test_setup_code": "", **extra}  # fmt: skip


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (row(["assert add(1, 1) == 2", "42"]), "row 2: column 'test_list', test 2 has no assert"),
        (row(["assert add(1, 1) == 2", "None"]), "test 2 has no assert statement"),
        (row(["assert add(1, 1) == 2 ="]), "test 1 is not valid Python"),
        (row(["assert add(1, 1) == 2"], test_setup_code="def ("), "column 'test_setup_code' is"),
        (row(["assert string('a') == 'a'"]), "test 1 calls string(), but string is a standard"),
    ],
    ids=["bare-number", "bare-None", "syntax", "setup", "module-name"],
)
def test_bad_tests_are_data_errors(recipe, tmp_path, bad, message):
    path = write(tmp_path, [row(["assert add(1, 1) == 2"]), bad])
    script = dataclasses.replace(recipe.script, dataset_name=path)
    with pytest.raises(data.DataError, match=re.escape(message)) as error:
        data.load_training_rows(script, recipe.task, TASK)
    assert path in str(error.value) and "\n" not in str(error.value)


def test_humaneval_rows_need_an_entry_point(recipe, tmp_path):
    tests = "def check(candidate):\n    assert candidate(1) == 2\n"
    path = write(tmp_path, [{"text": "def add(a, b):", "code": "", "test_list": tests,
                             "test_setup_code": ""}])  # fmt: skip
    script = dataclasses.replace(recipe.script, dataset_name=path)
    with pytest.raises(data.DataError, match="set entry_point_column"):
        data.load_training_rows(script, recipe.task, TASK)


# --- the sandbox's isolation is settled before training ----------------------------------------


def test_settings_refuse_when_no_isolation_works(monkeypatch):
    def broken(level, python, disk_mb):
        raise sandbox.isolation.IsolationError(f"{level} cannot start here")

    monkeypatch.setattr(sandbox, "_smoke", broken)
    sandbox.choose.cache_clear()
    try:
        with pytest.raises(sandbox.SandboxUnavailable) as error:
            reward_settings(TaskArguments())
    finally:
        sandbox.choose.cache_clear()
    text = str(error.value)
    assert "\n" not in text and "bubblewrap cannot start" in text and "unshare cannot" in text
    assert "install bubblewrap" in text and "sandbox_isolation: process" in text


def test_process_only_mode_is_opt_in_and_warned(monkeypatch, caplog):
    monkeypatch.setattr(sandbox, "_smoke", lambda level, python, disk_mb: None)
    sandbox.choose.cache_clear()
    try:
        limits = reward_settings(TaskArguments(sandbox_isolation="process"))["limits"]
        assert limits.describe()["isolation"] == "process"
    finally:
        sandbox.choose.cache_clear()
    assert "process-only isolation" in caplog.text


def test_describe_names_the_isolation_in_use():
    facts = sandbox.Limits().describe()
    assert facts["isolation"] in ("bubblewrap", "unshare")
    assert facts["python"].startswith("3.") and facts["seccomp"] is True


def test_the_batch_scorer_keeps_its_old_name_for_the_previous_release():
    """grpo-kit 0.2.0's code starter (a project's rewards.py) calls verify.code.run_tests; the
    name is score_batch now (sandbox.run_tests runs one program), the old one an alias."""
    from grpo_kit.verify import code as verify_code

    assert verify_code.run_tests is verify_code.score_batch
