"""Reading a completion's program and the row's tests, and turning them into sandbox jobs: what
the code rewards build on.

The gold answer holds the tests: MBPP-style (a JSON list of `assert ...` lines, one test each)
or HumanEval-style (test code defining `check(candidate)`, run as `check(<entry_point>)`); a
row's `extra_tests` column (a JSON list, MBPP's `challenge_test_list`) adds tests the prompt
never shows. The reward is the fraction of tests passed, judged outside the program (see
`sandbox`). With a stub
(HumanEval's prompt), the stub's helpers the tests call run on the judge's side, so a program
cannot change them, and a completion may hold the whole function or only its body. Programs of
one batch run in parallel (`sandbox_workers`).

Reading a completion's program in the trainer never raises: Python's parser gives up on some
texts with RecursionError (about 3,000 `-` signs in a row) or MemoryError, and such a program
is treated as one that does not parse.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap

from .. import sandbox
from .text import extract_answer

__all__ = [
    "check_rows",
    "code_blocks",
    "extra_tests",
    "fenced_blocks",
    "job_for",
    "outside_blocks",
    "parse_tests",
    "program_for",
    "run_tests",  # the 0.2.0 name of score_batch, kept for projects that import it
    "score_batch",
    "unimplemented",
]

# Possessive blanks (`*+`): a fence followed by a long run of blanks and no newline is rejected
# in linear time (backtracking through the blanks made it quadratic: 32k blanks took seconds).
_FENCE_RE = re.compile(r"```[ \t]*+(?:(?:python3|python|py)[ \t]*+)?\n(.*?)```", re.DOTALL)


def code_blocks(text: str) -> list[str]:
    """Fenced code blocks in the answer (the `<answer>` block when there is one)."""
    region = extract_answer(text)
    return _FENCE_RE.findall(region if region is not None else text)


def parse_tests(answer: str, entry_point: str | None = None) -> list[str]:
    """The gold field as a list of test snippets."""
    text = str(answer).strip()
    if text.startswith("["):
        try:
            tests = json.loads(text)
        except json.JSONDecodeError:
            tests = None
        if isinstance(tests, list) and all(isinstance(t, str) for t in tests):
            return [t for t in tests if t.strip()]
    if entry_point and "def check(" in text:
        return [f"{text}\ncheck({entry_point})"]
    return [line for line in text.splitlines() if line.strip()]


# What Python's parser and compiler raise on text they cannot handle (not only bad syntax: a
# deep nesting exhausts the recursion limit or the parser's memory).
_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


def _parses(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except _UNPARSABLE:
        return None


def _compiles(code: str) -> bool:
    try:
        compile(code, "<program>", "exec", dont_inherit=True)
    except _UNPARSABLE:
        return False
    return True


def _defines(tree: ast.Module | None, name: str) -> bool:
    if tree is None:
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign | ast.Import | ast.ImportFrom):
            targets = node.targets if isinstance(node, ast.Assign) else node.names
            for target in targets:
                found = getattr(target, "id", None) or getattr(target, "asname", None)
                if (found or getattr(target, "name", "")) == name:
                    return True
    return False


def unimplemented(stub: str) -> tuple[str, ...]:
    """Functions a stub declares without a body (only a docstring, `pass` or `...`): the
    program provides them; the stub's other functions are trusted helpers."""
    tree = _parses(stub)
    names = []
    for node in tree.body if tree else []:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = [n for n in node.body if not isinstance(n, ast.Pass)]
            if all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body):
                names.append(node.name)
    return tuple(names)


def program_for(block: str, stub: str = "", entry_point: str | None = None) -> str:
    """The program to run: the block, or the stub followed by the block when the block is only
    the function's body (HumanEval completions may be either)."""
    if not stub or not entry_point or _defines(_parses(block), entry_point):
        return block
    head = stub if stub.endswith("\n") else stub + "\n"
    for body in (block, textwrap.indent(textwrap.dedent(block), "    ")):
        if _compiles(head + body):
            return head + body
    return block


def job_for(block: str, tests: list[str], setup: str, stub: str, entry_point: str | None):
    remote = tuple(dict.fromkeys([*unimplemented(stub), *([entry_point] if entry_point else [])]))
    return sandbox.Job(
        program=program_for(block, stub, entry_point),
        tests=tuple(tests),
        setup=setup,
        prelude=stub if remote else "",  # helpers the tests call, run by the judge
        remote=remote,
    )


def fenced_blocks(text: str) -> list[str]:
    """The fenced Python (or untagged) code blocks of a text, in order."""
    return _FENCE_RE.findall(text)


def outside_blocks(text: str) -> str:
    """The text with its fenced code blocks removed."""
    return _FENCE_RE.sub("", text)


def extra_tests(value) -> list[str]:
    """A row's extra tests (MBPP's `challenge_test_list`): a list of asserts, or its JSON text;
    nothing (an empty list) for an empty cell."""
    if value is None or value == "":
        return []
    tests = json.loads(value) if isinstance(value, str) else value
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise ValueError("expected a list of test snippets")
    return [t for t in tests if t.strip()]


def score_batch(
    completions: list[str], answer: list[str], limits: sandbox.Limits, **columns
) -> list[float]:
    """For each completion, the fraction of its row's tests that its last code block passes in
    the sandbox (0 without code). `columns` may hold the rows' `setup` code, `entry_point`
    (HumanEval), `stub` (the code the solution completes) and `extra_tests` (tests beyond the
    gold answer's, see `extra_tests`); the programs of one call run in parallel
    (`limits.workers`)."""
    n = len(completions)
    setups = columns.get("setup") or [""] * n
    entry_points = columns.get("entry_point") or [None] * n
    stubs = columns.get("stub") or [""] * n
    extras = columns.get("extra_tests") or [None] * n
    jobs, positions = [], []
    for i, (text, gold) in enumerate(zip(completions, answer, strict=True)):
        blocks = code_blocks(text)
        entry_point = str(entry_points[i]) if entry_points[i] else None
        tests = parse_tests(gold, entry_point) + extra_tests(extras[i])
        if blocks and tests:
            stub = stubs[i] if isinstance(stubs[i], str) else ""
            jobs.append(job_for(blocks[-1], tests, str(setups[i] or ""), stub, entry_point))
            positions.append(i)
    scores = [0.0] * n
    for i, run in zip(positions, sandbox.run_many(jobs, limits), strict=True):
        scores[i] = run.fraction
    return scores


# Deprecated: the name before 0.3.0 (grpo-kit 0.2.0's code starter, rewards.py, imports it);
# `sandbox.run_tests` runs one program, this scores a batch of completions.
run_tests = score_batch


def _compile_problem(code: str) -> str | None:
    try:
        compile(code, "<data>", "exec")
    except (SyntaxError, ValueError) as err:
        return f"{type(err).__name__}: {getattr(err, 'msg', err)}"
    return None


def check_rows(
    rows, source: str, answer_column: str, gold, entry_column=None, code_columns=(),
    extra_column=None,
) -> None:  # fmt: skip
    """Every row's tests can be judged: at least one test, each valid Python with an `assert`
    (a bare `42` or `None` line would pass without checking anything), HumanEval `check()`
    code with an entry point, the extra tests (`extra_column`, when the data has it) likewise,
    and the code columns (setup, stub) compile. `gold` turns a cell of the answer column into
    the tests' text. Raises DataError naming the row."""
    from ..errors import DataError

    entry_points = list(rows[entry_column]) if entry_column else None
    extra = {c: list(rows[c]) for c in code_columns if c}
    has_extra = extra_column is not None and extra_column in rows.column_names
    extra_cells = list(rows[extra_column]) if has_extra else []
    for index, value in enumerate(extra_cells):
        where = f"{source} row {index + 1}: column '{extra_column}'"
        try:
            tests = extra_tests(value)
        except ValueError as err:
            raise DataError(f"{where} is not a list of tests ({err})") from err
        for number, test in enumerate(tests, start=1):
            problem = sandbox.test_problem(test, [])
            if problem:
                raise DataError(f"{where}, test {number} {problem}: {test[:120]!r}")
    for index, value in enumerate(rows[answer_column]):
        where = f"{source} row {index + 1}: column '{answer_column}'"
        entry_point = entry_points[index] if entry_points is not None else None
        text = gold(value)
        if "def check(" in text and not text.lstrip().startswith("[") and not entry_point:
            raise DataError(
                f"{where} holds HumanEval-style check(candidate) code, but no entry point: "
                "set entry_point_column (HumanEval: entry_point)"
            )
        if entry_point is not None and not str(entry_point).isidentifier():
            raise DataError(
                f"{source} row {index + 1}: column '{entry_column}' is {entry_point!r}, not a "
                "Python name"
            )
        tests = parse_tests(text, entry_point)
        if not tests:
            raise DataError(f"{where} holds no tests")
        for number, test in enumerate(tests, start=1):
            problem = sandbox.test_problem(test, [entry_point] if entry_point else [])
            if problem:
                raise DataError(f"{where}, test {number} {problem}: {test[:120]!r}")
        for column, values in extra.items():
            problem = _compile_problem(str(values[index] or ""))
            if problem:
                raise DataError(
                    f"{source} row {index + 1}: column '{column}' is not valid Python ({problem})"
                )
