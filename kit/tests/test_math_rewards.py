"""Math correctness: real GSM8K rows, MATH-style LaTeX answers, peers' published expectations
(Math-Verify's test tables, TRL's and open-r1's reward tests), answers that try to earn credit
they do not deserve, and the time budget."""

import json
import re
import threading
import time

import pytest
from conftest import STARTERS
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
        ("He pays $5 an hour, so $40 in all.", "#### 40", 1.0),
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

# Cases of huggingface/Math-Verify tests/test_all.py (its parametrize tables, as (gold,
# prediction, expected); the tables' names are kept as comments). The prediction is scored as a
# whole completion, so these check where the answer is found as well as how it is compared.
# Left out: the cases that need other verify settings (precision, set relations), answers over
# 160 characters, and the deliberate differences in MATH_VERIFY_DIFFERENCES below.
MATH_VERIFY = [
    # test_number_extraction
    ("-5", "-5", 1),
    ("7425000", "7,425,000", 1),
    ("1000", "1 000", 1),
    ("1000", "1000.0", 1),
    ("1000.0", "1,000.0", 1),
    ("0.4", ".4", 1),
    ("1000.99", "1,000.99", 1),
    ("1000.99", "1,000.99", 1),
    ("1000.99", "$1,000.99", 1),
    ("1000.99", "1,000.99$", 1),
    ("1000.99", "the number is not 10 which is 1,000.99€", 1),
    ("1000.99", "the number is not 10 which is 1,000.99€", 1),
    ("0,111", "0.111", 1),
    ("2", "AZYUK2A", 0),
    # test_simple_fraction_notation
    ("10/9", "\\frac{10}{9}", 1),
    ("-10/9", "-\\frac{10}{9}", 1),
    # test_sets_handling
    ("$[0,1)$", "$[0,1)$", 1),
    ("$[0,1)$", "$[0,1)$", 1),
    ("$[0,9)$", "$[0,1)$", 0),
    ("$(0,9)$", "$[0,9)$", 0),
    ("$1$", "$-[0,1)$", 0),
    # test_latex_notation
    ("$9$", "Answer \\[ 9 \\]", 1),
    ("$9$", "Answer $ 9 $", 1),
    ("$9$", "Answer $$ 9 $$", 1),
    ("$9$", "Answer \\( 9 \\)", 1),
    ("$10$", "Answer \\( (9+1) \\)", 1),
    ("$9$", "Answer \\[ \n 9 \n \\]", 1),
    ("$9$", "Answer $$ \n 9 \n $$", 1),
    ("$10/9$", "Answer $ \\frac{1}{2} \\$ = \\frac{10}{9} $", 1),
    ("$1/3$", "$\\frac13 $", 1),
    ("$1$", "$\\frac3{3} $", 1),
    ("$\\sqrt{3}$", "$\\sqrt3 $", 1),
    ("$1/3$", "$\\cfrac{1}{3} $", 1),
    ("$1/3$", "$\\dfrac{1}{3} $", 1),
    ("$1/3$", "$\\tfrac{1}{3} $", 1),
    ("$1/3$", "$ 1/3 $", 1),
    ("$1/3$", "$\\left( \\frac{1}{3} \\right)$", 1),
    ("$1/3$", "$\\boxed{\\frac{1}{3}}$", 1),
    ("$1/3$", "$\\frac{1}{3} \\text{meters}$", 1),
    ("$1/3$", "$\\frac{1}{3} \\textbf{meters}$", 1),
    ("$1/3$", "$k = \\frac{1}{3}$", 1),
    ("$1/3$", "$\\frac{1}{3} \\textbf{meters}$", 1),
    # test_percent_notation
    ("$28\\%$", "28 percent", 1),
    ("$28\\%$", "28 pct", 1),
    ("$28\\%$", "28 %", 1),
    ("$28\\%$", "$28$ %", 1),
    ("$28\\%$", "$28$ percent", 1),
    ("$28\\%$", "$\\boxed{28}$ pct", 1),
    ("$28\\%$", "$\\boxed{28 pct}", 1),
    ("$28\\%$", "$\\boxed{28 percent}", 1),
    ("$28\\%$", "$\\boxed{28 percentage}", 1),
    # test_latex_notation_math
    (
        "$2-2p$",
        (
            "Since $x<2$, it follows that $|x-2|=2-x$. If $2-x=p$, then $x=2-p$. Thus "
            "$x-p=\\boxed{2-2p}$."
        ),
        1,
    ),
    (
        "\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.\n\\end{align*}",
        "\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.\n\\end{align*}",
        1,
    ),
    (
        "$\\frac{14}{3}$",
        (
            "$f(-2)+f(-1)+f(0)=\\frac{3(-2)-2}{-2-2}+\\frac{3(-1)-2}{-1-2}+"
            "\\frac{3(0)-2}{0-2}=\\frac{-8}{-4}+\\frac{-5}{-3}+\\frac{-2}{-2}"
            "=2+\\frac{5}{3}+1=\\boxed{\\frac{14}{3}}$"
        ),
        1,
    ),
    (
        "$2$",
        (
            "Of the two-digit perfect squares, only $4^2=16$ and $6^2=36$ end in $6$. "
            "Thus, there are $\\boxed{2}$ distinct possible values for $B$."
        ),
        1,
    ),
    (
        "$90^\\circ$",
        (
            "Therefore, \\begin{align*} \\angle BAC &= \\angle BAD + \\angle DAC \\\\ &= "
            "50^\\circ+40^\\circ \\\\ &= \\boxed{90^\\circ}. \\end{align*}"
        ),
        1,
    ),
    (
        "$1 \\pm \\sqrt{19}$",
        (
            "This simplifies to $64y + 1920 = 0,$ so $y = -30.$ Then $x^2 - 2x - 48 = "
            "-30,$ or $x^2 - 2x - 18 = 0.$ By the quadratic formula, $x = \\boxed{1 \\pm "
            "\\sqrt{19}}.$"
        ),
        1,
    ),
    (
        "$3 \\pm 2 \\sqrt{2}$",
        (
            "This gives us $x^2 + 1 = 6x,$ or $x^2 - 6x + 1 = 0.$ By the quadratic "
            "formula, the roots are $x = \\boxed{3 \\pm 2 \\sqrt{2}}.$"
        ),
        1,
    ),
    (
        "$\\{1\\pm\\sqrt{5},-2\\}$",
        (
            "The roots of $P(x)$ are $-2$ and $1 \\pm \\sqrt{5}$, so the answer is "
            "$\\boxed{\\{1\\pm\\sqrt{5},-2\\}}.$"
        ),
        1,
    ),
    (
        "$2 \\sin b \\cos a$",
        "By sum-to-product,\n\\[\\sin (a + b) - \\sin (a - b) = \\boxed{2 \\sin b \\cos a}.\\]",
        1,
    ),
    ("$125$ miles", "The distance is $\\boxed{125\\textnormal{ miles}}.$", 1),
    (
        "$[-1, -\\frac{1}{2}) \\cup (-\\frac{1}{2}, 0) \\cup (0, 1) \\cup (1, \\infty)$",
        (
            "The solution set is $\\boxed{[-1, -\\tfrac12) \\cup (-\\tfrac12, 0) \\cup (0, "
            "1) \\cup (1, \\infty)}.$"
        ),
        1,
    ),
    ("$\\sqrt{2}+\\sqrt{5}$", "The answer is $\\boxed{\\sqrt 2+\\sqrt 5}$", 1),
    ("$\\frac{9}{4}\\pi$", "Therefore $\\boxed{\\frac94\\pi}$.", 1),
    ("x \\in \\boxed{\\{-1\\} \\cup [0,7)}.$", "x \\in \\boxed{\\{-1\\} \\cup [0,7)}.$", 1),
    # test_relations_math
    ("$x >= 5$", "Therefore $x \\geq 5$ is the solution.", 1),
    ("$x < 3$", "We find that $x \\lt 3$.", 1),
    ("$x \\leq 2$", "Thus $x <= 2$ is our answer.", 1),
    ("$x > 5$", "Therefore $x \\gt 5$ is the solution.", 1),
    ("$x != 3$", "We find that $x \\neq 3$.", 1),
    ("$x > 5$", "Therefore $x < 5$ is the solution.", 0),
    ("$x \\geq 5$", "The solution is $x \\leq 5$", 0),
    ("$x \\neq 5$", "The solution is $x != 5$", 1),
    ("$x \\leq 5$", "$5 \\geq x$", 1),
    ("$x \\geq 5$", "$5 \\leq x$", 1),
    ("$x = 11$", "$x = 5+5+1 = 7 =11$", 1),
    ("$7 = 11a+c$", "$11a+c$", 0),
    ("$x = 11$", "$x = 5+5+1 = 7 =11$", 1),
    ("$x = 1/3$", "$x = 5+5+1 = 1/3 \\approx 11$", 1),
    ("$11$", "$x=11$", 1),
    ("$11$", "$x\\approx11$", 1),
    ("$1/3$", "$x=1/3\\approx1.3$", 1),
    ("$x < 1$", "$-x > -1$", 1),
    ("$x < 1$", "$x > -1$", 0),
    ("$x <= 1$", "$-x >= -1$", 1),
    ("$a +3z = 0$", "$0$", 0),
    ("$1 = \\zzz = x = 0$", "$0$", 1),
    ("$2x + z = 1$", "$1$", 0),
    ("$a^2 + b = 0$", "$0$", 0),
    ("$k=1$", "$1$", 1),
    ("$1$", "$k=1$", 1),
    ("$z = 1 + 1 = 2$", "$z = 3+3 = 2$", 1),
    ("$z = 1 + 1 = 2$", "$z = 3+3 = 2$", 1),
    ("$2x+4y-3=0$", "$y=-\\frac{1}{2}x+\\frac{3}{4}$", 1),
    ("$x^2/4 + y^2/3 = 1$", "$x^2/16 + y^2/12 = 1/4$", 1),
    # test_matrix_extraction
    (
        "$\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}$",
        "The identity matrix is $ \\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix} $.",
        1,
    ),
    (
        "$\\begin{bmatrix}0 & 0 \\\\0 & 0\\end{bmatrix}$",
        "Here is a zero matrix: $ \\begin{pmatrix}0 & 0 \\\\0 & 0\\end{pmatrix} $",
        1,
    ),
    (
        "$\\begin{pmatrix}1 & 2 \\\\3 & 4\\end{pmatrix}$",
        "Special matrix: $ \\left[\\begin{array}{cc}1 & 2 \\\\3 & 4\\end{array}\\right] $",
        1,
    ),
    (
        (
            "$\\begin{pmatrix}\\frac{1}{2} & \\frac{3}{4} \\\\ \\frac{5}{6} & "
            "\\frac{7}{8}\\end{pmatrix}$"
        ),
        (
            "Matrix with fractions: $ \\begin{pmatrix}\\frac{1}{2} & \\frac{3}{4} \\\\ "
            "\\frac{5}{6} & \\frac{7}{8}\\end{pmatrix} $"
        ),
        1,
    ),
    (
        "$\\begin{pmatrix}6 & 8 \\\\ 10 & 12\\end{pmatrix}$",
        (
            "The sum is $\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix} + "
            "\\begin{pmatrix}5 & 6 \\\\ 7 & 8\\end{pmatrix}$"
        ),
        1,
    ),
    (
        "$\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}$",
        (
            "When multiplying by identity: $\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix} "
            "\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}$"
        ),
        1,
    ),
    (
        "$\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}$",
        "The matrix is $\\begin{pmatrix}1 & 2 \\\\ 3 & 5\\end{pmatrix}$",
        0,
    ),
    # test_math_extraction_additional_cases
    ("$34$", "Final Answer: The largest $n$ is 34.", 1),
    ("$(3,1)$", "${1,3}$", 0),
    ("$(1,3)$", "${1,3}$", 1),
    (
        "$[-4,0]$",
        (
            "Thus, the values of \\( k \\) for which the quadratic has real roots are: \\[ "
            "\\boxed{[-4, 0]} \\]"
        ),
        1,
    ),
    ("\\(\\boxed{\\text{C}}\\).", "$\\boxed{\\text{(C)}}.$", 1),
    (
        " So the answer is: \\[ \\boxed{11111111100} \\]",
        "is $\\boxed{11,\\! 111,\\! 111,\\! 100}$",
        1,
    ),
    (" So the answer is: \\[ \\boxed{32349} \\]", "is $\\boxed{32,\\! 349}$", 1),
    (" So the answer is: \\[ \\boxed{32349} \\]", "is $\\boxed{32, 349}$", 0),
    (
        (
            "Thus, the domain of the function \\( f(x) \\) is: \\[ \\boxed{(2, 12) \\cup "
            "(12, 102)} \\]"
        ),
        "Thus, the answer is $x \\in \\boxed{(2,12) \\cup (12,102)}$",
        1,
    ),
    ("$\\text{E}$", "$E$", 1),
    ("$\\boxed{1}\\boxed{2}$", "$\\boxed{1,2}$", 1),
]


@pytest.mark.parametrize(("gold", "prediction", "expected"), MATH_VERIFY)
def test_math_verify_cases(gold, prediction, expected):
    assert correctness(prediction, gold) == expected
    if re.fullmatch(r"\$[^$]+\$", prediction.strip()):  # an answer alone: same in <answer>
        assert correctness(answered(prediction), gold) == expected


# Cases of the same tables where this reward deliberately differs, with the reason.
MATH_VERIFY_DIFFERENCES = [
    # decimal commas: "1,2" is a pair in a MATH answer, and a pair must not read as 1.2
    ("1000.99", "1000,99", 1, 0.0),
    ("1,22", "1.22", 1, 0.0),
    ("2.74", "Soucis : 2,74 $ a..", 1, 0.0),
    # a number glued to letters is not read from free text (`2x` is not 2, so neither is `10m`)
    ("1000.99", "so the number is 10 which is 1,000.99m²", 1, 0.0),
    # a number alone on its line is read even inside a broken $...$
    ("$9$", "Answer $ \n 9 \n $", 0, 1.0),
    # LaTeX math-verify cannot parse is not compared as raw strings: its normalisation leaves
    # `1 - \frac{1}{` of both, so it pays a wrong answer (the gold reads as nothing here)
    ("$1 - \\frac{1}{\\mathrm{e}}$", "$1 - \\frac{1}{\\mathrm{x}}$", 1, None),
]


@pytest.mark.parametrize(("gold", "prediction", "theirs", "ours"), MATH_VERIFY_DIFFERENCES)
def test_math_verify_deliberate_differences(gold, prediction, theirs, ours):
    assert correctness(prediction, gold) == ours != theirs


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
    start = time.monotonic()
    kwargs = {"log_metric": lambda *item: metrics.append(item)}
    values = func(slow, answer=[row["answer"] for row in rows], **kwargs)
    elapsed = time.monotonic() - start
    assert values == [0.0] * len(slow)
    assert elapsed < len(slow) * (BUDGET_S + 0.5)
    assert metrics == [("rewards/math_correctness/timeouts", float(len(slow)))]
    assert call_like_trl(func, [answered("18")], [{**rows[0], "answer": "#### 18"}]) == [1.0]
