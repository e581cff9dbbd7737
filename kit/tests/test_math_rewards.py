"""Math correctness: real GSM8K rows, MATH-style LaTeX answers, peers' published expectations
(Math-Verify's test tables, TRL's and open-r1's reward tests), answers that try to earn credit
they do not deserve, and the time budget."""

import json
import threading
import time

import pytest
from conftest import STARTERS
from grpo_kit import heldout
from grpo_kit.rewards import call_like_trl
from grpo_kit.starters.math.rewards import math_correctness
from grpo_kit.starters.math.task import TASK
from grpo_kit.verify.math import BUDGET_S, gold_text, gold_value


def gsm8k_rows() -> list[dict]:
    """Real GSM8K test rows shipped as the sample data."""
    path = STARTERS / "data" / "sample_math.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def correctness(completion: str, answer: str):
    return math_correctness([completion], answer=[answer])[0]


def answered(answer: str) -> str:
    return f"<think>Work it out.</think>\n<answer>{answer}</answer>"


def test_gold_text_reads_the_final_answer():
    assert gold_text("She sells 9 eggs.\n#### 18") == "18"
    assert gold_text("#### 1,234") == "1,234"
    assert gold_text("\\frac{1}{2}") == "\\frac{1}{2}"
    assert gold_text("so the answer is $\\boxed{\\frac{1}{2}}$.") == "\\frac{1}{2}"
    assert gold_text("\\boxed{1} and \\boxed{\\{2, 3\\}}") == "1, \\{2, 3\\}"


def test_every_gsm8k_gold_answer_as_boxed_gets_full_credit_and_a_wrong_number_none():
    rows = gsm8k_rows()
    assert len(rows) >= 32
    for row in rows:
        gold = gold_text(row["answer"])
        number = float(gold.replace(",", ""))
        assert correctness("\\boxed{" + gold + "}", row["answer"]) == 1.0, gold
        assert correctness(answered(gold), row["answer"]) == 1.0, gold
        wrong = number + 1
        wrong_text = str(int(wrong)) if wrong.is_integer() else str(wrong)
        assert correctness("\\boxed{" + wrong_text + "}", row["answer"]) == 0.0, gold


@pytest.mark.parametrize(
    ("completion", "answer", "expected"),
    [
        ("<think>9*2</think><answer>18</answer>", "#### 18", 1.0),
        ("<think>..</think><answer>$18</answer>", "#### 18", 1.0),
        ("<think>..</think><answer>1,234</answer>", "#### 1,234", 1.0),
        ("<think>..</think><answer>18.</answer>", "#### 18", 1.0),
        ("<think>..</think><answer>-7</answer>", "#### -7", 1.0),
        ("The answer is 70,000.", "#### 70000", 1.0),
        # A number in running text is not marked as the answer (see test_free_text_...).
        ("He pays $5 an hour, so $40 in all.", "#### 40", 0.0),
        ("He pays $5 an hour, so the answer is $40.", "#### 40", 1.0),
        ("<answer>17</answer>", "#### 18", 0.0),
        ("<answer>\\frac{2}{4}</answer>", "\\frac{1}{2}", 1.0),
        ("<answer>0.5</answer>", "\\frac{1}{2}", 1.0),
        ("\\boxed{\\sqrt{2}}", "\\sqrt{2}", 1.0),
        ("<answer>no idea</answer>", "#### 18", 0.0),
        ("<answer>The answer is 18</answer>", "#### 18", 0.0),  # only the answer goes in the block
        ("", "#### 18", 0.0),
        ("<answer>18" + " \\;" * 400 + "</answer>", "#### 18", 0.0),  # over 1000 characters
        ("<answer>18</answer> then <answer>19</answer>", "#### 18", 0.0),
        ("<think>it is \\boxed{18}</think> no idea", "#### 18", 0.0),  # reasoning is not the answer
        # An answer block inside the reasoning is reasoning too, whatever follows it.
        ("<think><answer>18</answer></think> The answer is 19", "#### 18", 0.0),
        ("<think><answer>19</answer></think> The answer is 18", "#### 18", 1.0),
        ("<think><answer>18</answer></think><answer>19</answer>", "#### 18", 0.0),
        # A percent is its number of percent, in the gold's own scale (verify/math.py's rule).
        ("<answer>18%</answer>", "#### 18", 1.0),
        ("<answer>18\\%</answer>", "18\\%", 1.0),
        ("<answer>18 percent</answer>", "18\\%", 1.0),
        ("<answer>18%</answer>", "0.18", 0.0),
        ("<answer>0.18</answer>", "18\\%", 0.0),
        ("<answer>12.5%</answer>", "12.5", 1.0),
        ("<answer>18\\%, 20\\%</answer>", "0.18, 0.2", 0.0),  # in a list too
        ("<answer>18\\%, 20\\%</answer>", "18, 20", 1.0),
        # A relation answers only when each side is the gold answer.
        ("<answer>19 = 18</answer>", "#### 18", 0.0),
        ("<answer>2x = 18</answer>", "#### 18", 0.0),
        ("<answer>x = 18</answer>", "#### 18", 1.0),  # an assignment
        ("<answer>18 = 18</answer>", "#### 18", 1.0),
        ("<answer>x = 3 \\cdot 6 = 18</answer>", "#### 18", 1.0),
        ("<answer>x = 3 \\cdot 7 = 18</answer>", "#### 18", 0.0),
        ("The answer is $19 = 18$.", "#### 18", 0.0),
        ("<answer>x = 18</answer>", "x = 18", 1.0),
        ("<answer>y = 18</answer>", "x = 18", 0.0),
    ],
)
def test_math_correctness_golden(completion, answer, expected):
    assert correctness(completion, answer) == expected


# --- MATH-style answers written inside <answer> without $ (the recipe's layout) --------------


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("\\sqrt{8}", "2\\sqrt{2}"),
        ("(2,3)", "(2,3)"),
        ("(2, 3)", "\\left( 2, 3 \\right)"),
        ("[0,1)", "[0,1)"),
        ("\\{3,2,1\\}", "\\{1,2,3\\}"),
        ("2x+3", "3+2x"),
        ("\\infty", "\\infty"),
        ("\\text{Monday}", "\\text{Monday}"),
        ("Monday", "\\text{Monday}"),  # an answer of words is read as text
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\frac{\\sqrt3}{2}}"),
        ("x^2+2x+1", "(x+1)^2"),
        ("x = 5", "5"),
        ("1024", "2^{10}"),
        ("3628800", "10!"),
        ("$2$^{10}", "1024"),  # delimiters go, the expression stays whole
        ("\\boxed{\\frac{1}{3}}", "\\frac{1}{3}"),
        ("90^\\circ", "90"),
        ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"),
    ],
)
def test_bare_latex_in_the_answer_block_is_read_whole(answer, gold):
    assert correctness(answered(answer), gold) == 1.0


# Wrong answers whose leading number is the gold answer: reading that number off the expression
# would pay a policy for writing anything that starts with the right digits.
LEADING_NUMBER = [
    ("2^{10}", "2"),
    ("10!", "10"),
    ("3+2x", "3"),
    ("2x+3", "2"),
    ("5\\sqrt{2}", "5"),
    ("7/2", "7"),
    ("4 - 1", "4"),
    ("12(3)", "12"),
    ("2 \\cdot 3", "2"),
    ("(2,3)", "2"),
    ("3.5x", "3.5"),
    ("1e5", "1"),
    ("[0,1)", "0"),
]


@pytest.mark.parametrize(("answer", "gold"), LEADING_NUMBER)
def test_a_leading_number_earns_no_credit(answer, gold):
    completions = [
        answered(answer),
        answered(f"${answer}$"),
        answered("\\boxed{" + answer + "}"),
        answer,
        f"The answer is {answer}",
        f"so we get $${answer}$$",
    ]
    if answer.startswith(gold):  # the number delimited alone, the expression going on after it
        rest = answer[len(gold) :]
        completions += [f"${gold}${rest}", "\\boxed{" + gold + "}" + rest]
    for completion in completions:
        assert correctness(completion, gold) == 0.0, completion


def test_prose_golds_are_not_applicable():
    """A gold answer in words reads as nothing: the row does not count (TRL's accuracy_reward
    returns None too), and no prediction can match it, `$two forty$` included."""
    for gold in ("forty two", "Answer is forty two.", "The answer is 18 apples", "Monday"):
        assert gold_value(gold) == ()
        for completion in ("<answer>42</answer>", "<answer>$two forty$</answer>", answered(gold)):
            assert correctness(completion, gold) is None, (gold, completion)
    assert correctness(answered("$two forty$"), "\\text{forty two}") == 0.0
    assert correctness(answered("two forty"), "42") == 0.0


def test_two_boxed_answers_in_the_block_are_no_answer():
    assert correctness(answered("\\boxed{5} or \\boxed{6}"), "5") == 0.0
    assert correctness(answered("\\boxed{5}\\boxed{6}"), "6") == 0.0


def test_a_math_solution_as_gold_is_read_at_its_box():
    solution = "We have $x = 3$, so the polar coordinates are $\\boxed{(3, \\frac{\\pi}{2})}$."
    assert correctness(answered("\\left( 3, \\frac{\\pi}{2} \\right)"), solution) == 1.0
    assert correctness(answered("3"), solution) == 0.0


@pytest.mark.parametrize(
    "gold",
    [
        "#### 18",
        "\\left( 3, \\frac{\\pi}{2} \\right)",
        "Hence $\\boxed{\\{-1\\} \\cup [0,7)}$.",
        "\\text{Monday}",
        "$x \\in [0,1)$",
        "\\boxed{1} and \\boxed{2}",
        "\\frac{\\sqrt{3}}{2}",
        "\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}",
    ],
)
def test_the_ideal_completion_of_a_math_style_gold_gets_full_credit(gold):
    assert correctness(TASK.ideal_completion({"answer": gold}, None), gold) == 1.0


# --- peers' expectations ---------------------------------------------------------------------

# Math-Verify's own test tables: test_reward_math_verify.py (all of them, ported as data).


# --- where a completion without an <answer> block has its answer ------------------------------

# What a random model writes (the tiny offline model's text, its tokenizer trained on GSM8K):
# numbers everywhere, one of them last. Read as answers, they scored 0.062 in `make evaluate
# SMOKE=1` (issue 29 #6).
RANDOM_TEXT = [
    (" how was bur aso rati an makes 8ame 99he= 18", "#### 18"),
    (" add330 40% whop p Fir540hor 3", "#### 3"),
    (" speedice mon sal on / Seat oneees is -T 70,000.", "#### 70000"),
    ("g55 rem drin every 18 Uirstchas Jillgh customers muow 540 meters", "#### 540"),
    ("<think> 12 eggs </think> boxes 17 of 204", "#### 204"),
]


@pytest.mark.parametrize(
    ("completion", "gold"),
    [
        *RANDOM_TEXT,
        ("The answer is 2 ** 18", "#### 18"),  # a power, not markdown bold
        ("Answer: 18**2", "#### 18"),
        ("the answer: since 3 + 4 = 7, it is 7", "#### 3"),  # the first number after the mark
    ],
)
def test_a_number_in_running_text_is_not_an_answer(completion, gold):
    assert correctness(completion, gold) == 0.0


@pytest.mark.parametrize(
    ("completion", "gold"),
    [
        ("So the final answer is 18.", "#### 18"),
        ("Final Answer: The largest $n$ is 34.", "34"),
        ("The answer is $\\frac{1}{3}$ of the cake.", "\\frac{1}{3}"),
        ("Answer: 204", "#### 204"),
        ("**Answer:** 18", "#### 18"),
        ("The answer is **18** eggs.", "#### 18"),
        ("She has 5 apples, so she has $\\boxed{18}$ in all.", "#### 18"),
        ("7,425,000", "7425000"),  # the whole text is the answer
        ("$\\frac13 $", "1/3"),
        ("Therefore $x \\geq 5$ is the solution.", "x \\geq 5"),  # its last LaTeX math
        ("The roots are $1$ and $-2$.", "\\boxed{1, -2}"),  # blocks written together
        ("<think>it is 9</think>\\boxed{18}", "#### 18"),
    ],
)
def test_an_answer_the_text_marks_is_read(completion, gold):
    assert correctness(completion, gold) == 1.0


def test_a_random_model_scores_zero(tiny_model_dir, tmp_path, capsys):
    """`make evaluate SMOKE=1` on the random tiny model, sampled: accuracy 0 (evaluate reads
    answers with the reward itself, `verify.math.predicted_value`)."""
    from grpo_kit.commands import evaluate
    from grpo_kit.starters.math.task import TASK as MATH

    assert MATH.metrics[0][1] is math_correctness
    argv = ["--smoke", "--model", str(tiny_model_dir), "--no-base", "--output-dir",
            str(tmp_path), "--temperature", "1.0", "--seed", "3"]  # fmt: skip
    results = evaluate.evaluate(argv)
    assert results == {"trained": {"accuracy": 0.0}}
    lines = (tmp_path / "predictions.jsonl").read_text().splitlines()
    held_out = heldout.HELD_OUT_MIN  # the 32-row sample: 10% is fewer than the minimum
    assert len(lines) == held_out and all(json.loads(line)["accuracy"] == 0.0 for line in lines)


# --- several boxes, and golds that always apply --------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "gold", "expected"),
    [
        ("\\boxed{-2} \\quad \\text{and} \\quad \\boxed{1}", "\\boxed{1,-2}", 1.0),
        ("\\boxed{(1, 2)}, \\boxed{(2, 1)}", "$(2,1),(1,2)$", 1.0),
        ("\\boxed{k = 45} \\quad \\text{and} \\quad \\boxed{n = 2}", "k = 45, n = 2", 1.0),
        ("\\boxed{1}\\boxed{2}", "\\boxed{1,2}", 1.0),
        # A box apart from the others is another answer: the gold's is its last box.
        ("$\\boxed{1,2}$", "\\boxed{1} no no no no no \\boxed{2}", 0.0),
        ("$\\boxed{2}$", "\\boxed{1} no no no no no \\boxed{2}", 1.0),
        (answered("\\boxed{5} and then much later on \\boxed{6}"), "6", 0.0),
    ],
)
def test_boxes_written_together_are_one_answer(completion, gold, expected):
    assert correctness(completion, gold) == expected


@pytest.mark.parametrize(
    "gold",
    [
        "1 - \\frac{1}{\\mathrm{e}}",
        "12:00",
        "x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}",
        "f(y) = y",
        "\\text{The midpoints form a regular hexagon}",
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "[-1, -\\frac{1}{2}) \\cup (1, \\infty)",
    ],
)
def test_valid_latex_golds_always_apply(gold):
    """A gold answer of valid LaTeX is never "not applicable" (its row would train nothing);
    what math-verify cannot parse is compared as its LaTeX, so only the same answer earns
    credit."""
    assert gold_value(gold) != ()
    assert correctness(answered(gold), gold) == 1.0
    assert correctness(answered("7"), gold) == 0.0


def test_latex_math_verify_cannot_parse_equals_only_itself():
    assert correctness(answered("12:00"), "12:00") == 1.0
    assert correctness(answered("1:00"), "12:00") == 0.0
    assert correctness(answered("1 + \\frac{1}{e}"), "1 - \\frac{1}{\\mathrm{e}}") == 0.0
    assert correctness(answered("1 - \\frac{1}{e}"), "1 - \\frac{1}{\\mathrm{e}}") == 1.0


# TRL's tests/test_rewards.py (accuracy_reward, reasoning_accuracy_reward) and open-r1's
# tests/test_rewards.py (accuracy_reward): (completion, gold, expected).
TRL_AND_OPEN_R1 = [
    ("\\boxed{\\frac{63}{400}}", "\\frac{63}{400}", 1.0),
    ("\\boxed{\\frac{63}{400}}", "63/400", 1.0),
    ("\\boxed{\\frac{64}{400}}", "\\frac{63}{400}", 0.0),
    ("\\boxed{3}", "6", 0.0),
    ("Answer is forty two.", "Answer is forty two.", None),
    ("Some other content. \\boxed{43}.", "Answer is forty three.", None),
    ("<think> Reasoning content </think> \\boxed{\\frac{63}{400}}", "\\frac{63}{400}", 1.0),
    ("Reasoning content </think> \\boxed{\\frac{63}{400}}", "\\frac{63}{400}", 1.0),
    ("<think> Reasoning content </think> \\boxed{\\frac{64}{400}}", "\\frac{63}{400}", 0.0),
    ("<think> My answer is \\boxed{42} </think> Some other text.", "\\boxed{42}", 0.0),
    (
        "<think> The answer is \\boxed{42} </think> Here's a wrong answer: \\boxed{43}.",
        "\\boxed{42}",
        0.0,
    ),
    ("<think> Incomplete reasoning without closing tag", "\\frac{63}{400}", 0.0),
    ("<think> Reasoning content </think> \\boxed{42}", "forty two", None),
]


@pytest.mark.parametrize(("completion", "gold", "expected"), TRL_AND_OPEN_R1)
def test_trl_and_open_r1_accuracy_cases(completion, gold, expected):
    assert correctness(completion, gold) == expected


def test_works_outside_the_main_thread():
    """TRL's test_accuracy_reward_in_worker_thread: math-verify's signal timeouts would raise
    there; the reward's own budget does not."""
    results, errors = [], []

    def work():
        try:
            results.append(correctness("\\boxed{\\frac{1}{3}}", "\\frac{1}{3}"))
        except Exception as err:  # pragma: no cover - the failure being tested for
            errors.append(err)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert not errors
    assert results == [1.0]


# --- the time budget ---------------------------------------------------------------------------


def test_answers_that_keep_sympy_busy_score_zero_within_the_budget(sample_rows):
    """Each of these runs into math-verify's own 5 s timeouts (minutes without them); here each
    costs at most the reward's budget, scores 0 and is counted."""
    slow = [
        "\\boxed{e^{e^{e^{e^{e}}}}}",
        answered("(10^{100})!"),
        answered("9^{9^{9^{9}}}"),
        answered("\\binom{10^9}{10^5}"),
    ]
    metrics = []
    rows = [sample_rows[0]] * len(slow)
    func = math_correctness
    start = time.thread_time()  # budgets count CPU time: a loaded host does not change this
    kwargs = {"log_metric": lambda *item: metrics.append(item)}
    values = func(slow, answer=[row["answer"] for row in rows], **kwargs)
    elapsed = time.thread_time() - start
    assert values == [0.0] * len(slow)
    assert elapsed < len(slow) * (BUDGET_S + 0.5)
    assert metrics == [
        ("rewards/math_correctness/timeouts", float(len(slow))),
        ("rewards/math_correctness/errors", 0.0),
    ]
    assert call_like_trl(func, [answered("18")], [{**rows[0], "answer": "#### 18"}]) == [1.0]
