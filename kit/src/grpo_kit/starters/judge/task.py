"""The judge task: answers no program can check (explanations, summaries, tone), graded by a
judge model against a rubric (rewards.py), plus the format and length rewards. Yours to edit.

How a data row becomes the prompt (`user_message`), what a perfect completion looks like
(`ideal_completion`, the row's reference answer in the format), the rewards with the weights
they train with, the system prompt, the default data and the judge's server (task arguments).

task.py is the one home of the task's defaults: the rewards and their weights, the system
prompt and the default data mapping. configs/grpo.yaml does not restate them (`grpo recipe
--explain` shows where each value of a run comes from); your own data and your judge's server
go in configs/local.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grpo_kit.rewards import formats
from grpo_kit.task import DataDefaults, Reward, Task, plain_user_message, think_answer

from . import rewards


@dataclass
class TaskArguments:
    """Where the judge answers (an OpenAI-compatible server; `make smoke` and the tests point
    these at a local `transformers serve` of their own)."""

    judge_base_url: str = field(
        default="http://localhost:8000/v1",
        metadata={"help": "the judge server's OpenAI-compatible URL (vllm serve's default port)"},
    )
    judge_model: str = field(
        default="Qwen/Qwen2.5-7B-Instruct",
        metadata={"help": "the model name the judge server serves"},
    )
    judge_api_key_env: str = field(
        default="",
        metadata={"help": "environment variable holding the judge's API key (empty: none)"},
    )


def ideal_completion(row: dict, task_args) -> str:
    """A short plan, then the row's reference explanation in the answer block."""
    return think_answer("Find the cause, then say it plainly.", str(row["answer"]))


TASK = Task(
    name="judge",
    data=DataDefaults(
        dataset_name="data/sample_judge.jsonl",
        dataset_config=None,
        train_split="train",
        test_split="test",
        prompt_column="question",
        answer_column="answer",
        sample="data/sample_judge.jsonl",
    ),
    system_prompt=(
        f"Explain briefly and correctly. {formats.FORMAT_INSTRUCTIONS} The answer is one to three "
        "plain sentences."
    ),
    rewards=(
        Reward(
            rewards.rubric_grade,
            2.0,
            "the judge model's grade of the answer against the rubric (rewards.py)",
            "correctness",
        ),
        Reward(rewards.strict_format, 0.5, formats.STRICT_WHY),
        Reward(rewards.soft_overlong, 0.5, formats.OVERLONG_WHY, "length"),
    ),
    user_message=plain_user_message,
    ideal_completion=ideal_completion,
    arguments=TaskArguments,
    reward_settings=lambda args: {
        "judge_base_url": args.judge_base_url,
        "judge_model": args.judge_model,
        "judge_api_key_env": args.judge_api_key_env,
    },
    metrics=(("rubric_grade", rewards.rubric_grade),),
    example_prompt="Why does a spoon look bent in a glass of water?",
)
