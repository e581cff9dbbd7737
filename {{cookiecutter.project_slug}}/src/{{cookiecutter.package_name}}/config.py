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
from .tasks import TASK, TaskArguments

DEFAULT_RECIPE = Path("configs/grpo.yaml")
# Yours: the template never writes it, so regenerating the project (cruft update, replay) keeps
# it. Its keys are applied on top of the generated recipe: your data mapping, prompts, steps.
LOCAL_RECIPE = Path("configs/local.yaml")


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
    reward_model: str | None = field(
        default=None,
        metadata={
            "help": "A sequence-classification reward model (Hub id or folder) scored beside "
            "reward_funcs; reward_weights then needs one more weight, last."
        },
    )
    # --- health checks (health.py): thresholds on what TRL logs ---
    health_zero_std_max: float = field(
        default=0.8, metadata={"help": "Warn when this share of groups has zero reward spread."}
    )
    health_kl_max: float = field(
        default=0.5, metadata={"help": "Warn when kl exceeds this (checked when beta > 0)."}
    )
    health_entropy_min: float = field(
        default=0.05, metadata={"help": "Warn when the mean token entropy falls below this."}
    )
    health_clipped_max: float = field(
        default=0.3, metadata={"help": "Warn when this share of completions is cut off."}
    )
    health_flat_logs: int = field(
        default=20, metadata={"help": "Logs without reward movement that make a plateau."}
    )
    health_flat_delta: float = field(
        default=0.01, metadata={"help": "Reward movement below this counts as flat."}
    )
    health_patience: int = field(
        default=3, metadata={"help": "Consecutive logs before a persistent problem is fatal."}
    )
    health_stop_on_fatal: bool = field(
        default=False, metadata={"help": "Save a checkpoint and stop on a fatal finding."}
    )
    # --- adaptive reward weights (adaptive_weights.py), off by default ---
    adaptive_reward_weights: bool = field(
        default=False, metadata={"help": "Adapt reward weights to each reward's success rate."}
    )
    adaptive_low: float = field(
        default=0.2, metadata={"help": "Raise a reward's weight while its success is below."}
    )
    adaptive_high: float = field(
        default=0.8, metadata={"help": "Lower a reward's weight while its success is above."}
    )
    adaptive_factor: float = field(
        default=1.25, metadata={"help": "Multiplier per log for a raise (divisor for a cut)."}
    )
    adaptive_min_scale: float = field(
        default=0.25, metadata={"help": "Lowest weight, as a multiple of the recipe's weight."}
    )
    adaptive_max_scale: float = field(
        default=4.0, metadata={"help": "Highest weight, as a multiple of the recipe's weight."}
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

    def reward_settings(self) -> dict:
        """What parameterised rewards take from the recipe (bound by `rewards.resolve`)."""
        return {
            "max_completion_length": self.training.max_completion_length,
            **TASK.reward_settings(self.task),
        }


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


def _mapping(path: Path) -> dict:
    import yaml

    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML ({err})") from err
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise UserError(f"{path}: a recipe is a mapping of field: value lines")
    return values


def uses_local(path: Path) -> bool:
    """Whether `configs/local.yaml` applies: it does on top of the generated recipe."""
    return LOCAL_RECIPE.is_file() and path.resolve() == DEFAULT_RECIPE.resolve()


def recipe_file_values(path: Path = DEFAULT_RECIPE) -> dict:
    """A recipe file's values; for the generated recipe, with `configs/local.yaml` on top."""
    if not path.is_file():
        return {}
    values = _mapping(path)
    if uses_local(path):
        values.update(_mapping(LOCAL_RECIPE))
    return values


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
        from .tools.smoke import smoke_arguments

        args = smoke_arguments(recipe_fields()) + args
    merged = _with_local(args)
    try:
        return Recipe(*recipe_parser().parse_args_and_config(merged or args))
    except ValueError as err:
        hint = ""
        if "bf16/gpu" in str(err) or "requires a GPU" in str(err):
            hint = (
                " This recipe is tuned for a GPU tier: run it on the GPU, check it here with "
                "--smoke, or see what is missing with `make doctor`."
            )
        raise UserError(f"recipe: {err}{hint}") from err
    finally:
        if merged:
            Path(merged[merged.index("--config") + 1]).unlink(missing_ok=True)


def _with_local(args: list[str]) -> list[str] | None:
    """The arguments with the recipe replaced by a temporary merge of it and
    `configs/local.yaml`, or None when that file does not apply."""
    import tempfile

    import yaml

    position = args.index("--config") if "--config" in args else -1
    if position < 0 or not uses_local(Path(args[position + 1])):
        return None
    values = recipe_file_values(Path(args[position + 1]))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="recipe-", delete=False) as f:
        yaml.safe_dump(values, f, sort_keys=False)
    return [*args[: position + 1], f.name, *args[position + 2 :]]
