"""The math task: word problems (GSM8K-style numbers, MATH-style LaTeX answers). Yours to edit.

How a data row becomes the prompt (`user_message`), what a perfect completion looks like
(`ideal_completion`, which `make reward-debug` and the tests score), and the rewards with the
weights the recipe starts from. The data mapping and the system prompt here are the defaults of
configs/grpo.yaml; change them there (or in configs/local.yaml) for a run.
"""

from __future__ import annotations

from grpo_kit.rewards import formats
from grpo_kit.task import DataDefaults, Reward, Task, plain_user_message, think_answer
from grpo_kit.verify.math import gold_text

from . import rewards


def ideal_completion(row: dict, task_args) -> str:
    """Reasoning, then the gold answer (GSM8K's `#### 18` becomes `18`) in the answer block."""
    return think_answer("Work through the problem step by step.", gold_text(row["answer"]))


TASK = Task(
    name="math",
    data=DataDefaults(
        dataset_name="openai/gsm8k",
        dataset_config="main",
        train_split="train",
        test_split="test",
        prompt_column="question",
        answer_column="answer",
        sample="data/sample_math.jsonl",
    ),
    system_prompt=(
        f"You solve math problems. {formats.FORMAT_INSTRUCTIONS} The final answer is only the "
        "result, without units or words: a number such as 18 or 0.5, or a LaTeX expression "
        "such as \\frac{3}{4}, 2\\sqrt{2}, (1, 2) or \\text{Monday}."
    ),
    rewards=(
        Reward(
            rewards.math_correctness,
            2.0,
            "1 if the final answer equals the gold answer",
            "correctness",
        ),
        Reward(rewards.strict_format, 0.5, formats.STRICT_WHY),
        Reward(rewards.partial_format, 0.5, formats.PARTIAL_WHY),
        Reward(rewards.soft_overlong, 0.5, formats.OVERLONG_WHY, "length"),
    ),
    user_message=plain_user_message,
    ideal_completion=ideal_completion,
    metrics=(("accuracy", rewards.math_correctness),),
    example_prompt="A shop sells pens at 3 dollars each. How much do 7 pens cost?",
)
