"""The reward model's preference pairs: the recipe fields of `grpo reward-model` that are not
TRL's (`RewardScriptArguments`, read by TrlParser beside RewardConfig and ModelConfig). The
command (commands/reward_model.py) and the template (which writes configs/reward_model.yaml
from these fields) read them here."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SAMPLE_PREFERENCES", "RewardScriptArguments"]

SAMPLE_PREFERENCES = "data/sample_preferences.jsonl"  # a sample of pairs every project ships


@dataclass
class RewardScriptArguments:
    """Recipe fields of the reward-model command (everything that is not TRL's)."""

    dataset_name: str = field(
        default=SAMPLE_PREFERENCES,
        metadata={"help": "Hub id, or a local .jsonl/.csv/.parquet file of pairs"},
    )
    dataset_config: str | None = field(default=None, metadata={"help": "Hub dataset configuration"})
    dataset_train_split: str = field(
        default="train", metadata={"help": "split to train on (Hub datasets)"}
    )
    dataset_test_split: str | None = field(
        default=None,
        metadata={
            "help": "Hub split held out for the evaluation; null: hold out test_size of the pairs"
        },
    )
    test_size: float = field(
        default=0.2, metadata={"help": "share of the pairs held out without a test split"}
    )
    prompt_column: str | None = field(
        default="prompt",
        metadata={
            "help": "the prompt (text or chat); null when chosen/rejected hold whole conversations"
        },
    )
    chosen_column: str = field(
        default="chosen", metadata={"help": "the better answer (text or assistant messages)"}
    )
    rejected_column: str = field(
        default="rejected", metadata={"help": "the worse answer to the same prompt"}
    )
    margin_column: str | None = field(
        default=None,
        metadata={"help": "optional: how much better chosen is (TRL subtracts it in the loss)"},
    )
    system_prompt: str = field(
        default="",
        metadata={
            "help": "default: the task's (task.py): the reward model learns on the prompts GRPO "
            "scores"
        },
    )
    as_chat: bool = field(
        default=True,
        metadata={"help": "text pairs become chats (system, user, assistant), as GRPO shows them"},
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "use only the first N training pairs (quick runs)"}
    )
    accuracy_target: float = field(
        default=0.8,  # chosen scored above rejected on held-out pairs (the seed guide's target)
        metadata={"help": "warn when fewer held-out pairs score chosen above rejected"},
    )
    resume: bool = field(
        default=True,
        metadata={"help": "resume from the last checkpoint in output_dir (--no-resume: fresh)"},
    )
    smoke: bool = field(
        default=False,
        metadata={"help": "offline smoke run: tiny reward model, sample pairs, CPU, few steps"},
    )
