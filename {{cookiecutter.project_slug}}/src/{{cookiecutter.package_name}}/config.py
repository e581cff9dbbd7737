"""The recipe: `configs/grpo.yaml` parsed by TRL's own `TrlParser`.

A recipe is one flat YAML mapping whose keys are fields of five dataclasses: `ScriptArguments`
(below: data, prompts, rewards), the task's `TaskArguments` (`tasks/`), the backend's
`BackendArguments` (`modeling.py`), TRL's `GRPOConfig` (training) and `ModelConfig` (model,
LoRA).
Any key can be overridden on the command line (`--learning_rate 1e-5`). A key that the installed
TRL does not know fails the parse, which is how stale tutorial fields are caught early.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .errors import UserError
from .modeling import BackendArguments  # first: the Unsloth backend must load before trl
from .tasks import TaskArguments

DEFAULT_RECIPE = Path("configs/grpo.yaml")


@dataclass
class ScriptArguments:
    """Recipe fields of this project (everything that is not GRPOConfig or ModelConfig)."""

    dataset_name: str = field(
        default="openai/gsm8k",
        metadata={"help": "Hub dataset id, or a local .jsonl/.json/.csv/.parquet file."},
    )
    dataset_config: str | None = field(
        default=None, metadata={"help": "Hub dataset configuration name (ignored for local files)."}
    )
    dataset_train_split: str = field(default="train", metadata={"help": "Split to train on."})
    dataset_test_split: str = field(default="test", metadata={"help": "Held-out split."})
    prompt_column: str = field(
        default="question", metadata={"help": "Column holding the question/instruction text."}
    )
    answer_column: str = field(
        default="answer", metadata={"help": "Column holding the gold answer the rewards check."}
    )
    system_prompt: str = field(
        default="", metadata={"help": "System message; it states the output format."}
    )
    max_prompt_tokens: int = field(
        default=512,
        metadata={"help": "Drop rows whose chat-formatted prompt is longer (TRL never truncates)."},
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Use only the first N training rows (quick runs)."}
    )
    reward_funcs: list[str] = field(
        default_factory=lambda: ["strict_format"],
        metadata={"help": "Rewards by registered name or dotted path module.function."},
    )
    resume: bool = field(
        default=True,
        metadata={"help": "Resume from the last checkpoint in output_dir (--no-resume: fresh)."},
    )
    smoke: bool = field(
        default=False,
        metadata={"help": "Offline smoke run: tiny local model, sample data, CPU, 2 steps."},
    )


class Recipe(NamedTuple):
    """A parsed recipe: one object per dataclass."""

    script: ScriptArguments
    task: TaskArguments
    backend: BackendArguments
    training: object  # trl.GRPOConfig
    model: object  # trl.ModelConfig


def recipe_parser():
    """TRL's parser over the five dataclasses of a recipe."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    return TrlParser(
        (ScriptArguments, TaskArguments, BackendArguments, GRPOConfig, ModelConfig),
        description="GRPO training: --config configs/grpo.yaml [--any_recipe_field value ...]",
    )


def recipe_fields() -> set[str]:
    """Every key a recipe may hold with the installed libraries."""
    import dataclasses

    return {f.name for t in recipe_parser().dataclass_types for f in dataclasses.fields(t)}


def parse_recipe(argv: Sequence[str] | None = None) -> Recipe:
    """Parse `--config <recipe>` plus command-line overrides into the five dataclasses.

    Without `--config`, `configs/grpo.yaml` is used when it exists. `--smoke` inserts the
    overrides of `smoke.py` between the recipe and the user's own overrides.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if "--config" not in args and DEFAULT_RECIPE.is_file():
        args = ["--config", str(DEFAULT_RECIPE), *args]
    if "--config" in args:
        position = args.index("--config")
        if position + 1 >= len(args) or not Path(args[position + 1]).is_file():
            missing = args[position + 1] if position + 1 < len(args) else "(none)"
            raise UserError(f"recipe not found: {missing}; pass --config configs/grpo.yaml")
    if "--smoke" in args:
        from .smoke import smoke_arguments

        args = smoke_arguments(recipe_fields()) + args
    try:
        return Recipe(*recipe_parser().parse_args_and_config(args))
    except ValueError as err:
        hint = ""
        if "bf16/gpu" in str(err) or "requires a GPU" in str(err):
            hint = (
                " This recipe is tuned for a GPU tier: run it on the GPU, check it here with "
                "--smoke, or see what is missing with `make doctor`."
            )
        raise UserError(f"recipe: {err}{hint}") from err
