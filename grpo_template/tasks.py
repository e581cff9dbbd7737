"""Task types: the default dataset, prompt, rewards and lengths each one bakes into the recipe."""

from __future__ import annotations

from dataclasses import dataclass

FORMAT_INSTRUCTIONS = (
    "First think step by step inside <think> </think> tags. Then write only the final answer "
    "inside <answer> </answer> tags."
)


@dataclass(frozen=True)
class Reward:
    name: str
    weight: float
    why: str  # one-line comment placed next to it in the recipe


@dataclass(frozen=True)
class TaskSpec:
    name: str
    label: str
    dataset_name: str
    dataset_config: str | None
    train_split: str
    test_split: str
    prompt_column: str
    answer_column: str
    system_prompt: str
    rewards: tuple[Reward, ...]
    completion_tokens: int  # typical answer length; tiers scale it
    prompt_tokens: int  # longest prompt kept by default
    dataset_note: str  # for the generated README
    example_prompt: str  # used by `make smoke` / `make infer`
    sample_what: str  # the shipped sample file: what it holds
    sample_source: str  # where it comes from
    sample_license: str

    @property
    def sample_data(self) -> str:
        return f"data/sample_{self.name}.jsonl"


TASKS: dict[str, TaskSpec] = {
    t.name: t
    for t in [
        TaskSpec(
            name="math",
            label="Math word problems (GSM8K / MATH-style answers, checked with math-verify)",
            dataset_name="openai/gsm8k",
            dataset_config="main",
            train_split="train",
            test_split="test",
            prompt_column="question",
            answer_column="answer",
            system_prompt=(
                "You solve math problems. " + FORMAT_INSTRUCTIONS + " The answer is a number or "
                "a LaTeX expression, without units."
            ),
            rewards=(
                Reward("math_correctness", 2.0, "1 if the final answer equals the gold answer"),
                Reward(
                    "strict_format", 0.5, "1 for exactly <think>...</think><answer>...</answer>"
                ),
                Reward("partial_format", 0.5, "0.25 per tag, minus text after </answer>"),
            ),
            completion_tokens=512,
            prompt_tokens=384,
            dataset_note=(
                "`openai/gsm8k` (config `main`): `question` is the prompt, `answer` is a worked "
                "solution ending in `#### <number>`; the reward compares that number."
            ),
            example_prompt="A shop sells pens at 3 dollars each. How much do 7 pens cost?",
            sample_what="first 32 rows of the GSM8K test split (`question`, `answer`)",
            sample_source=(
                "github.com/openai/grade-school-math, `grade_school_math/data/test.jsonl`"
            ),
            sample_license="MIT, Copyright (c) 2021 OpenAI",
        ),
    ]
}

DEFAULT_TASK = "math"


def lookup(name: str) -> TaskSpec:
    return TASKS[name]
